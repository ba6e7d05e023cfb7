#pragma once
// `rooflens profile`: replays every layer of an analysis on the GPU under CUPTI and NVTX and
// returns the measurements. CUDA-free header; the implementation is in the GPU module.
#include <fmt/format.h>
#include <sys/mman.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/trace/records.hpp"
#include "replay/kernel_choice.hpp"
#include "replay/plan.hpp"

namespace rooflens::profiler {

// Samples launched between host syncs (and CUPTI flushes). calibrate measures its floors the
// same way, so that they compare with the layers.
constexpr int kHarnessBatch = 10;

struct ProfileOptions {
  bool cold_l2 = true;  // flush L2 before each sample (--l2 cold)
  int min_samples = 10;
  int max_samples = 200;
  double target_spread = 0.01;  // stop when the relative IQR falls below this
  double layer_time_limit_s = 0.5;
  bool force_events = false;                       // skip CUPTI (--timing events)
  const std::atomic<bool>* interrupted = nullptr;  // set by SIGINT: stop after the current layer
  std::string cudnn_dir;  // --cudnn: where libcudnn.so.9 is (else the usual places)
  // profile --tp N: this process is rank `rank` of `ranks`, one process per GPU (it runs on GPU
  // `rank`), joined through NCCL with rank 0's unique id (hex). Collective layers take exactly
  // `collective_samples` samples on every rank, so that the ranks meet in every one.
  int rank = 0, ranks = 1;
  std::string nccl_id, nccl_dir;
  int collective_samples = 50;
  // --tuning-cache: the kernel picked per problem, read before the run (taken untimed) and
  // filled with this run's picks; null: tuned afresh, kept for this run only.
  replay::KernelChoices* tuning_cache = nullptr;
};

// The POSIX shared-memory name of the ranks' barrier flags in one `profile --tp/--ep` run (from
// its NCCL id): rank 0 removes it once every rank has joined, and the launcher again after the
// ranks exit, in case rank 0 died before.
inline std::string rank_barrier_name(const std::string& nccl_id) {
  return fmt::format("/rooflens-ranks-{:016x}", std::hash<std::string>{}(nccl_id));
}
// Removes that name (the memory stays with the ranks that opened it); nothing if it is gone.
inline void remove_rank_barrier_name(const std::string& nccl_id) {
  shm_unlink(rank_barrier_name(nccl_id).c_str());
}

// Replays `a`'s nodes by their plans (replay::plan_replay, one per node) and returns what it
// measured; profiler::with_measurements attaches it. `trace`, when given, receives every record
// (for --trace and tests/data).
ProfileMeasurements run_profile(const Analysis& a, const std::vector<replay::ReplayDecision>& plans,
                                const ProfileOptions& options, Trace* trace);

}  // namespace rooflens::profiler
