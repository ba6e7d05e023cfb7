#include "profiler/harness.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <map>
#include <set>

#include "analyzer/errors.hpp"
#include "kernels/cudnn_runtime.hpp"
#include "kernels/replay.hpp"
#include "profiler/attribution.hpp"
#include "profiler/compare.hpp"
#include "profiler/cupti_session.hpp"
#include "profiler/gpu.hpp"
#include "replay/plan.hpp"

namespace rooflens::profiler {

namespace {

using Clock = std::chrono::steady_clock;

struct NvtxDomain {
  nvtxDomainHandle_t handle = nvtxDomainCreateA("rooflens");
  ~NvtxDomain() { nvtxDomainDestroy(handle); }
  void push(const std::string& name) const {
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = name.c_str();
    nvtxDomainRangePushEx(handle, &attr);
  }
  void pop() const { nvtxDomainRangePop(handle); }
};

bool is_out_of_memory(const std::string& what) { return what.find("out of memory") != std::string::npos; }

}  // namespace

void run_profile(Analysis& a, const Graph& g, std::optional<Precision> forced, const ProfileOptions& opt, Trace* keep) {
  auto wall_start = Clock::now();
  GpuInfo gpu = query_gpu();
  ProfileSummary summary;
  summary.gpu = gpu.name;
  summary.l2 = opt.cold_l2 ? "cold" : "hot";
  summary.roofs = a.device.roofs;
  summary.sm_clock_mhz = measure_sm_clock_mhz();

  std::unique_ptr<CuptiSession> cupti;
  if (!opt.force_events) {
    cupti = std::make_unique<CuptiSession>();
    if (!cupti->ok()) {
      summary.timing = "cuda-events";
      summary.timing_note = cupti->failure();
      cupti.reset();
    }
  } else {
    summary.timing = "cuda-events";
    summary.timing_note = "--timing events";
  }
  NvtxDomain nvtx;
  cudaStream_t stream;
  ROOFLENS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  kernels::CublasLt lt;
  L2Flush flush(gpu.l2_bytes, gpu.sm_count);
  cudaEvent_t ev_start, ev_end;
  ROOFLENS_CUDA_CHECK(cudaEventCreate(&ev_start));
  ROOFLENS_CUDA_CHECK(cudaEventCreate(&ev_end));
  const kernels::cudnn::Runtime& cudnn = kernels::cudnn::Runtime::load(opt.cudnn_dir);
  summary.cudnn = cudnn.status();
  std::map<std::string, int> choices;
  kernels::ReplayContext ctx;
  ctx.lt = &lt;
  ctx.sm_count = gpu.sm_count;
  ctx.cudnn = cudnn.plugin();
  ctx.cudnn_status = cudnn.status();
  ctx.choices = &choices;
  // Candidates (cuBLASLt algorithms, cuDNN engines, our kernels) are timed as a sample is: after
  // the same L2 flush (CUPTI's records of this set-up work are dropped below).
  ctx.time = candidate_timer(opt.cold_l2 ? &flush : nullptr, stream, 3, cupti.get());
  if (cupti) cupti->flush();  // set-up records are not part of any layer

  std::vector<replay::ReplayDecision> decisions = replay::plan_replay(a, g, forced);
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    NodeResult& node = a.nodes[i];
    replay::ReplayDecision& d = decisions[i];
    Measurement m;
    m.status = d.status;
    m.reason = d.reason;
    if (opt.interrupted && opt.interrupted->load()) {
      summary.complete = false;
      break;
    }
    if (d.status != ReplayStatus::measured) {
      node.measured = m;
      continue;
    }
    const replay::ReplayPlan& plan = *d.plan;
    m.replay = plan.description;
    int64_t need = plan.buffer_bytes();
    int64_t free = free_device_memory();
    if (need > free * 9 / 10) {
      m.status = ReplayStatus::skipped;
      m.reason = fmt::format("needs {:.1f} GiB of GPU memory, {:.1f} GiB free", need / 1073741824.0, free / 1073741824.0);
      node.measured = m;
      continue;
    }
    std::unique_ptr<kernels::LayerReplay> replay;
    try {
      replay = std::make_unique<kernels::LayerReplay>(plan, ctx, stream);
      replay->launch(stream);  // warm-up: first call untimed, the kernel already chosen
      replay->launch(stream);
      ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(stream));
      m.library = replay->label().library;
      m.algorithm = replay->label().detail;
      m.choice = replay->label().note;
    } catch (const kernels::CudaError& e) {
      cudaGetLastError();  // clear a non-sticky error (out of memory) before going on
      if (is_out_of_memory(e.what()) || dynamic_cast<const kernels::ReplayUnsupported*>(&e)) {
        m.status = ReplayStatus::skipped;
        m.reason = e.what();
        node.measured = m;
        cudaDeviceSynchronize();
        continue;
      }
      throw kernels::CudaError(fmt::format("layer {}: {}", node.name, e.what()));
    }
    if (cupti) cupti->flush();  // drop the set-up and warm-up records

    std::vector<double> samples;
    std::map<std::string, int> names_seen;
    std::vector<std::string> names;
    auto layer_start = Clock::now();
    int sample = 0;
    while (true) {
      std::vector<float> event_ms;
      for (int b = 0; b < kHarnessBatch; ++b, ++sample) {
        if (opt.cold_l2) flush.run(stream);
        if (cupti) cupti->push_external(external_id(node.index, sample));
        nvtx.push(range_name(node.name, sample));
        ROOFLENS_CUDA_CHECK(cudaEventRecord(ev_start, stream));
        try {
          replay->launch(stream);
        } catch (const kernels::CudaError& e) {
          throw kernels::CudaError(fmt::format("layer {}: {}", node.name, e.what()));
        }
        ROOFLENS_CUDA_CHECK(cudaEventRecord(ev_end, stream));
        nvtx.pop();
        if (cupti) cupti->pop_external();
        if (!cupti) {
          ROOFLENS_CUDA_CHECK(cudaEventSynchronize(ev_end));
          float ms = 0;
          ROOFLENS_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start, ev_end));
          event_ms.push_back(ms);
        }
      }
      ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(stream));
      if (cupti) {
        Trace t = cupti->flush();
        summary.dropped_records += t.dropped;
        Attribution at = attribute(t, {{node.index, node.name}});
        if (at.nvtx_mismatches > 0 && summary.invalid_reason.empty())
          summary.invalid_reason = fmt::format("NVTX cross-check failed: {}", at.problems.front());
        for (auto& [key, st] : at.samples) {
          if (key.first != node.index) continue;
          samples.push_back(st.gpu_ns * 1e-9);
          m.kernels = st.kernels;
          for (const std::string& n : st.names)
            if (names_seen[n]++ == 0) names.push_back(n);
        }
        if (keep) {
          auto append = [](auto& dst, auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
          append(keep->activities, t.activities);
          append(keep->api_calls, t.api_calls);
          append(keep->externals, t.externals);
          append(keep->ranges, t.ranges);
          keep->dropped += t.dropped;
        }
      } else {
        for (float ms : event_ms) samples.push_back(ms * 1e-3);
      }
      SampleStats st = summarize_samples(samples);
      double elapsed = std::chrono::duration<double>(Clock::now() - layer_start).count();
      if (st.n >= opt.min_samples && (st.spread() < opt.target_spread || elapsed > opt.layer_time_limit_s)) break;
      if (st.n >= opt.max_samples || (samples.empty() && sample >= 2 * kHarnessBatch)) break;
    }
    if (samples.empty()) {
      m.status = ReplayStatus::skipped;
      m.reason = "no kernel of this layer reached the trace";
    } else {
      m.time = summarize_samples(samples);
      m.kernel_names = names;
      complete_measurement(node, a.device, m);
    }
    node.measured = m;
  }
  if (summary.dropped_records > 0) {
    summary.valid = false;
    summary.invalid_reason = fmt::format("CUPTI dropped {} records: the measurement is incomplete", summary.dropped_records);
  } else if (!summary.invalid_reason.empty()) {
    summary.valid = false;
  }
  cudaEventDestroy(ev_start);
  cudaEventDestroy(ev_end);
  cudaStreamDestroy(stream);
  if (keep) {
    keep->gpu = gpu.name;
    keep->sm_clock_mhz = summary.sm_clock_mhz;
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
  a.profile = std::make_shared<const ProfileSummary>(summarize_profile(a, summary));
}

}  // namespace rooflens::profiler
