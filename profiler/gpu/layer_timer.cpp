#include "profiler/gpu/layer_timer.hpp"

#include "kernels/cudnn_runtime.hpp"
#include "kernels/replay.hpp"

namespace rooflens::profiler {

LayerTimer::LayerTimer(const std::string& cudnn_dir)
    : gpu_(query_gpu()), flush_(gpu_.l2_bytes, gpu_.sm_count) {
  ROOFLENS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const auto& dnn = kernels::cudnn::Runtime::load(cudnn_dir);
  cudnn_status_ = dnn.status();
  ctx_.lt = &lt_;
  ctx_.sm_count = gpu_.sm_count;
  ctx_.cudnn = dnn.plugin();
  ctx_.cudnn_status = dnn.status();
  ctx_.choices = &choices_;
  ctx_.time = candidate_timer(&flush_, stream_, 3, &cupti_);
}

LayerTimer::~LayerTimer() {
  if (stream_) cudaStreamDestroy(stream_);
}

bool LayerTimer::cupti_ok() const {
  return cupti_.ok();
}

LayerTimer::Result LayerTimer::time(const replay::ReplayPlan& plan, int samples, bool hot) {
  kernels::LayerReplay r(plan, ctx_, stream_);
  Result out;
  out.label = r.label();
  auto launch = [&] { r.launch(stream_); };
  if (cupti_.ok()) {
    out.cold_s = cupti_time_median(cupti_, launch, samples, stream_, [&] { flush_.run(stream_); });
    if (hot) out.hot_s = cupti_time_median(cupti_, launch, samples, stream_);
  } else {  // under nsys or ncu: CUDA events around each sample
    out.cold_s = candidate_timer(&flush_, stream_, samples)([&](cudaStream_t) { launch(); });
    if (hot)
      out.hot_s = candidate_timer(nullptr, stream_, samples)([&](cudaStream_t) { launch(); });
  }
  return out;
}

}  // namespace rooflens::profiler
