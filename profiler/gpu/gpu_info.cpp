#include "profiler/gpu/gpu_info.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "analyzer/analysis/measurement.hpp"
#include "analyzer/core/errors.hpp"
#include "kernels/calibrate_kernels.hpp"
#include "kernels/cuda_check.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/timeline/attribution.hpp"

namespace rooflens::profiler {

GpuInfo query_gpu() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver)
    throw InputError(
        "no NVIDIA driver here, or one older than this CUDA runtime needs (`rooflens analyze` "
        "works without a GPU)");
  if (e != cudaSuccess || count == 0)
    throw InputError(
        fmt::format("no CUDA device: {} (`rooflens analyze` works without one)",
                    e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none"));
  int device = 0;
  ROOFLENS_CUDA_CHECK(
      cudaGetDevice(&device));  // the one this thread runs on (profile --tp: its rank's)
  cudaDeviceProp p{};
  ROOFLENS_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  GpuInfo g;
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  g.l2_bytes = p.l2CacheSize;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  return g;
}

double measure_sm_clock_mhz() {
  kernels::DeviceBuffer out(2 * sizeof(unsigned long long));
  unsigned long long host[2] = {0, 0};
  for (int i = 0; i < 2; ++i)  // the first run wakes the clocks up
    kernels::clock_probe(out.as<unsigned long long>(), 20'000'000, nullptr);
  ROOFLENS_CUDA_CHECK(cudaMemcpy(host, out.get(), sizeof(host), cudaMemcpyDeviceToHost));
  return host[1] ? static_cast<double>(host[0]) / static_cast<double>(host[1]) * 1e3 : 0;
}

double event_time_median(const std::function<void(cudaStream_t)>& fn, int reps, cudaStream_t s,
                         const std::function<void()>& before) {
  cudaEvent_t a, b;
  ROOFLENS_CUDA_CHECK(cudaEventCreate(&a));
  ROOFLENS_CUDA_CHECK(cudaEventCreate(&b));
  fn(s);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    if (before) before();
    ROOFLENS_CUDA_CHECK(cudaEventRecord(a, s));
    fn(s);
    ROOFLENS_CUDA_CHECK(cudaEventRecord(b, s));
    ROOFLENS_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    ROOFLENS_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return summarize_samples(t).median;
}

double cupti_time_median(CuptiSession& cupti, const std::function<void()>& fn, int reps,
                         cudaStream_t s, const std::function<void()>& before, int batch) {
  fn();  // warm-up: module load, cuBLASLt kernel choice
  ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(s));
  cupti.flush();
  for (int i = 0; i < reps; ++i) {
    if (before) before();
    cupti.push_external(external_id(0, i));
    fn();
    cupti.pop_external();
    if (i % batch == batch - 1 || i == reps - 1) ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  Attribution at = attribute(cupti.flush(), {});
  std::vector<double> d;
  for (const auto& [key, st] : at.samples) d.push_back(st.gpu_ns * 1e-9);
  return summarize_samples(d).median;
}

kernels::CandidateTimer candidate_timer(const L2Flush* flush, cudaStream_t s, int runs,
                                        CuptiSession* cupti) {
  std::function<void()> before;
  if (flush) before = [flush, s] { flush->run(s); };
  if (cupti && cupti->ok())
    return [=](const std::function<void(cudaStream_t)>& launch) {
      return cupti_time_median(
          *cupti, [&] { launch(s); }, runs, s, before, runs);
    };
  return [=](const std::function<void(cudaStream_t)>& launch) {
    return event_time_median(launch, runs, s, before);
  };
}

int64_t free_device_memory() {
  size_t free = 0, total = 0;
  ROOFLENS_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

L2Flush::L2Flush(int64_t l2_bytes, int sm_count)
    : buffer_(static_cast<size_t>(std::max<int64_t>(2 * l2_bytes, 8 << 20))),
      sink_(16),
      sm_count_(sm_count) {
  ROOFLENS_CUDA_CHECK(cudaMemset(buffer_.get(), 0, buffer_.bytes()));
}

void L2Flush::run(cudaStream_t s) const {
  kernels::stream_read(buffer_.get(), static_cast<int64_t>(buffer_.bytes()), 1,
                       static_cast<float*>(sink_.get()), sm_count_, s);
}

}  // namespace rooflens::profiler
