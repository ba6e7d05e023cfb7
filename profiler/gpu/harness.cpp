#include "profiler/gpu/harness.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "analyzer/core/errors.hpp"
#include "kernels/cudnn_runtime.hpp"
#include "kernels/nccl_runtime.hpp"
#include "kernels/replay.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_barrier.hpp"
#include "profiler/gpu/gpu_info.hpp"
#include "profiler/measure/prediction_error.hpp"
#include "profiler/timeline/attribution.hpp"
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

bool is_out_of_memory(const std::string& what) {
  return what.find("out of memory") != std::string::npos;
}

// One profile run: what every layer's replay shares (the stream, cuBLASLt, the L2 flush, cuDNN,
// CUPTI or CUDA events), set up once, and each layer measured in nvbench's order: check that it
// fits, initialize (plan the kernels, warm up), run trials until the stop rule holds, summarize.
class ProfileRun {
 public:
  ProfileRun(const ProfileOptions& opt, const std::string& roofs, Trace* keep,
             const kernels::nccl::Communicator* comm, GpuBarrier* barrier);
  // The node's measurement, or its reason for having none.
  Measurement measure(const NodeResult& node, const replay::ReplayDecision& d,
                      const Device& device);
  // The run's summary once every layer is done (validity from CUPTI's drops and cross-checks).
  ProfileSummary finish(Clock::time_point wall_start);
  bool interrupted() const { return opt_.interrupted && opt_.interrupted->load(); }
  void mark_incomplete() { summary_.complete = false; }

 private:
  // nullptr and m skipped when the layer cannot run (memory, an unsupported plan).
  std::unique_ptr<kernels::LayerReplay> initialize(const NodeResult& node,
                                                   const replay::ReplayPlan& plan, Measurement& m);
  // kHarnessBatch samples back to back; with CUDA events, their times in event_ms. A collective's
  // samples (lockstep) each start on every rank together, behind the ranks' barrier.
  void run_batch(const NodeResult& node, kernels::LayerReplay& replay, bool lockstep, int& sample,
                 std::vector<float>& event_ms);
  // The batch's kernel time per sample from CUPTI's records (kept for --trace).
  void collect_cupti(const NodeResult& node, Measurement& m, std::vector<double>& samples,
                     std::vector<std::string>& names, std::map<std::string, int>& names_seen);
  bool enough(const std::vector<double>& samples, int sample, Clock::time_point layer_start,
              bool lockstep) const;

  const ProfileOptions& opt_;
  Trace* keep_;
  GpuInfo gpu_ = query_gpu();
  ProfileSummary summary_;
  std::unique_ptr<CuptiSession> cupti_;
  NvtxDomain nvtx_;
  CudaStream stream_;
  kernels::CublasLt lt_;
  L2Flush flush_{gpu_.l2_bytes, gpu_.sm_count};
  CudaEvent ev_start_, ev_end_;
  replay::KernelChoices choices_;
  kernels::ReplayContext ctx_;
  GpuBarrier* barrier_;
};

ProfileRun::ProfileRun(const ProfileOptions& opt, const std::string& roofs, Trace* keep,
                       const kernels::nccl::Communicator* comm, GpuBarrier* barrier)
    : opt_(opt), keep_(keep), barrier_(barrier) {
  summary_.gpu = gpu_.name;
  summary_.l2 = opt.cold_l2 ? "cold" : "hot";
  summary_.roofs = roofs;
  summary_.sm_clock_mhz = measure_sm_clock_mhz();
  if (!opt.force_events) {
    cupti_ = std::make_unique<CuptiSession>();
    if (!cupti_->ok()) {
      summary_.timing = "cuda-events";
      summary_.timing_note = cupti_->failure();
      cupti_.reset();
      // CUPTI is taken by a profiler (ncu, nsys), whose work on every launch the event times of
      // the candidates then include: the picks among near-equal kernels are noise.
      if (!opt.tuning_cache)
        std::cerr << "rooflens: CUPTI is taken (a profiler attached?): kernels are picked by CUDA "
                     "event times, which include its overhead; pass --tuning-cache FILE written "
                     "by a run without it to replay the kernels that run picks\n";
    }
  } else {
    summary_.timing = "cuda-events";
    summary_.timing_note = "--timing events";
  }
  const kernels::cudnn::Runtime& cudnn = kernels::cudnn::Runtime::load(opt.cudnn_dir);
  summary_.cudnn = cudnn.status();
  ctx_.lt = &lt_;
  ctx_.sm_count = gpu_.sm_count;
  ctx_.cudnn = cudnn.plugin();
  ctx_.cudnn_status = cudnn.status();
  ctx_.choices = opt.tuning_cache ? opt.tuning_cache : &choices_;
  if (comm) {
    ctx_.comm = comm;
    ctx_.nccl = &kernels::nccl::Runtime::load(opt.nccl_dir).api();
  }
  // Candidates (cuBLASLt algorithms, cuDNN engines, our kernels) are timed as a sample is: after
  // the same L2 flush (CUPTI's records of this set-up work are dropped below).
  ctx_.time = candidate_timer(opt.cold_l2 ? &flush_ : nullptr, stream_.handle, 3, cupti_.get());
  if (cupti_) cupti_->flush();  // set-up records are not part of any layer
}

std::unique_ptr<kernels::LayerReplay> ProfileRun::initialize(const NodeResult& node,
                                                             const replay::ReplayPlan& plan,
                                                             Measurement& m) {
  int64_t need = plan.buffer_bytes();
  int64_t free = free_device_memory();
  if (need > free * 9 / 10) {
    m.status = ReplayStatus::skipped;
    m.reason = fmt::format("needs {:.1f} GiB of GPU memory, {:.1f} GiB free", need / 1073741824.0,
                           free / 1073741824.0);
    return nullptr;
  }
  std::unique_ptr<kernels::LayerReplay> replay;
  try {
    replay = std::make_unique<kernels::LayerReplay>(plan, ctx_, stream_.handle);
    replay->launch(stream_.handle);  // warm-up: first call untimed, the kernel already chosen
    replay->launch(stream_.handle);
    ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
    m.library = replay->label().library;
    m.algorithm = replay->label().detail;
    m.choice = replay->label().note;
  } catch (const kernels::CudaError& e) {
    cudaGetLastError();  // clear a non-sticky error (out of memory) before going on
    if (is_out_of_memory(e.what()) || dynamic_cast<const kernels::ReplayUnsupported*>(&e)) {
      m.status = ReplayStatus::skipped;
      m.reason = e.what();
      cudaDeviceSynchronize();
      return nullptr;
    }
    throw kernels::CudaError(fmt::format("layer {}: {}", node.name, e.what()));
  }
  if (cupti_) cupti_->flush();  // drop the set-up and warm-up records
  return replay;
}

void ProfileRun::run_batch(const NodeResult& node, kernels::LayerReplay& replay, bool lockstep,
                           int& sample, std::vector<float>& event_ms) {
  GpuBarrier* barrier = lockstep ? barrier_ : nullptr;
  for (int b = 0; b < kHarnessBatch; ++b, ++sample) {
    if (opt_.cold_l2) flush_.run(stream_.handle);
    if (barrier) {
      barrier->begin();
      barrier->hold(opt_.rank, stream_.handle);
    }
    if (cupti_) cupti_->push_external(external_id(node.index, sample));
    nvtx_.push(range_name(node.name, sample));
    ROOFLENS_CUDA_CHECK(cudaEventRecord(ev_start_.handle, stream_.handle));
    try {
      replay.launch(stream_.handle);
    } catch (const kernels::CudaError& e) {
      throw kernels::CudaError(fmt::format("layer {}: {}", node.name, e.what()));
    }
    ROOFLENS_CUDA_CHECK(cudaEventRecord(ev_end_.handle, stream_.handle));
    nvtx_.pop();
    if (cupti_) cupti_->pop_external();
    if (barrier) barrier->launched(opt_.rank);
    if (!cupti_) {
      ROOFLENS_CUDA_CHECK(cudaEventSynchronize(ev_end_.handle));
      float ms = 0;
      ROOFLENS_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start_.handle, ev_end_.handle));
      event_ms.push_back(ms);
    }
  }
  ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(stream_.handle));
  if (barrier) barrier->check();
}

void ProfileRun::collect_cupti(const NodeResult& node, Measurement& m, std::vector<double>& samples,
                               std::vector<std::string>& names,
                               std::map<std::string, int>& names_seen) {
  Trace t = cupti_->flush();
  summary_.dropped_records += t.dropped;
  Attribution at = attribute(t, {{node.index, node.name}});
  if (at.nvtx_mismatches > 0 && summary_.invalid_reason.empty())
    summary_.invalid_reason = fmt::format("NVTX cross-check failed: {}", at.problems.front());
  for (auto& [key, st] : at.samples) {
    if (key.first != node.index) continue;
    samples.push_back(st.gpu_ns * 1e-9);
    m.kernels = st.kernels;
    for (const std::string& n : st.names)
      if (names_seen[n]++ == 0) names.push_back(n);
  }
  if (keep_) {
    auto append = [](auto& dst, auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    append(keep_->activities, t.activities);
    append(keep_->api_calls, t.api_calls);
    append(keep_->externals, t.externals);
    append(keep_->ranges, t.ranges);
    keep_->dropped += t.dropped;
  }
}

// The stop rule: enough samples and a tight spread (or the layer's time budget spent), or the
// most samples, or no kernel reaching the trace after two batches.
bool ProfileRun::enough(const std::vector<double>& samples, int sample,
                        Clock::time_point layer_start, bool lockstep) const {
  if (lockstep)
    return sample >= opt_.collective_samples;  // every rank the same count: none waits alone
  SampleStats st = summarize_samples(samples);
  double elapsed = std::chrono::duration<double>(Clock::now() - layer_start).count();
  if (st.n >= opt_.min_samples &&
      (st.spread() < opt_.target_spread || elapsed > opt_.layer_time_limit_s))
    return true;
  return st.n >= opt_.max_samples || (samples.empty() && sample >= 2 * kHarnessBatch);
}

Measurement ProfileRun::measure(const NodeResult& node, const replay::ReplayDecision& d,
                                const Device& device) {
  Measurement m;
  m.status = d.status;
  m.reason = d.reason;
  if (d.status != ReplayStatus::measured) return m;
  m.replay = d.plan->description;
  std::unique_ptr<kernels::LayerReplay> replay = initialize(node, *d.plan, m);
  if (!replay) return m;
  std::vector<double> samples;
  std::map<std::string, int> names_seen;
  std::vector<std::string> names;
  auto layer_start = Clock::now();
  int sample = 0;
  const bool lockstep = d.plan->is<replay::CollectivePlan>();
  do {
    std::vector<float> event_ms;
    run_batch(node, *replay, lockstep, sample, event_ms);
    if (cupti_)
      collect_cupti(node, m, samples, names, names_seen);
    else
      for (float ms : event_ms) samples.push_back(ms * 1e-3);
  } while (!enough(samples, sample, layer_start, lockstep));
  if (samples.empty()) {
    m.status = ReplayStatus::skipped;
    m.reason = "no kernel of this layer reached the trace";
  } else {
    m.time = summarize_samples(samples);
    m.kernel_names = names;
    complete_measurement(node, device, m);
  }
  return m;
}

ProfileSummary ProfileRun::finish(Clock::time_point wall_start) {
  if (summary_.dropped_records > 0) {
    summary_.valid = false;
    summary_.invalid_reason = fmt::format("CUPTI dropped {} records: the measurement is incomplete",
                                          summary_.dropped_records);
  } else if (!summary_.invalid_reason.empty()) {
    summary_.valid = false;
  }
  if (keep_) {
    keep_->gpu = gpu_.name;
    keep_->sm_clock_mhz = summary_.sm_clock_mhz;
  }
  summary_.wall_s = std::chrono::duration<double>(Clock::now() - wall_start).count();
  return summary_;
}

}  // namespace

namespace {

// profile --tp N: this rank's GPU, its communicator with the other ranks, and the barrier the
// ranks' collective samples start behind (host memory shared by name; a rank opens it before
// joining, so that once every rank has joined rank 0 can remove the name).
struct RankGroup {
  std::unique_ptr<HostFlags> flags;
  std::unique_ptr<GpuBarrier> barrier;
  std::unique_ptr<kernels::nccl::Communicator> comm;
};

RankGroup join_ranks(const ProfileOptions& opt) {
  RankGroup g;
  if (opt.ranks <= 1) return g;
  int count = 0;
  ROOFLENS_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (opt.rank < 0 || opt.rank >= count)
    throw InputError(
        fmt::format("rank {} of {}: this machine has {} GPUs", opt.rank, opt.ranks, count));
  ROOFLENS_CUDA_CHECK(cudaSetDevice(opt.rank));
  const kernels::nccl::Runtime& rt = kernels::nccl::Runtime::load(opt.nccl_dir);
  if (!rt.available()) throw InputError("profile --tp: " + rt.status());
  g.flags = std::make_unique<HostFlags>(rank_barrier_name(opt.nccl_id),
                                        GpuBarrier::words(opt.ranks, opt.ranks));
  g.barrier = std::make_unique<GpuBarrier>(*g.flags, opt.ranks, opt.ranks);
  ncclComm_t comm = nullptr;
  kernels::nccl::check(
      rt.api(),
      rt.api().comm_init_rank(&comm, opt.ranks, kernels::nccl::unique_id_from_text(opt.nccl_id),
                              opt.rank),
      "ncclCommInitRank");
  g.comm = std::make_unique<kernels::nccl::Communicator>(rt, comm, opt.rank, opt.ranks);
  if (opt.rank == 0) remove_rank_barrier_name(opt.nccl_id);
  return g;
}

}  // namespace

ProfileMeasurements run_profile(const Analysis& a, const std::vector<replay::ReplayDecision>& plans,
                                const ProfileOptions& opt, Trace* keep) {
  if (plans.size() != a.nodes.size())
    throw std::logic_error("run_profile: one plan per node of the analysis");
  auto wall_start = Clock::now();
  RankGroup ranks = join_ranks(opt);
  ProfileRun run(opt, a.device.roofs, keep, ranks.comm.get(), ranks.barrier.get());
  ProfileMeasurements out;
  out.nodes.resize(a.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (run.interrupted()) {
      run.mark_incomplete();
      break;
    }
    out.nodes[i] = run.measure(a.nodes[i], plans[i], a.device);
  }
  out.run = run.finish(wall_start);
  return out;
}

}  // namespace rooflens::profiler
