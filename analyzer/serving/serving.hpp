#pragma once
// `rooflens serve`: a deployment (engine knobs, parallel plan, GPUs) serving a workload, simulated
// step by step (serving_scheduler.hpp) over steps costed by the per-node model
// (serving_step_cost.hpp). The plan: --tp GPUs per model shard, --pp pipeline stages, --ep
// experts spread over the TP group, --dp replicas; each replica's pipeline runs pp batches in
// flight (one per stage), each its own scheduler over 1/pp of the cache.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/hw/device.hpp"
#include "analyzer/serving/engines.hpp"
#include "analyzer/serving/scheduler.hpp"
#include "analyzer/transformers/config.hpp"
#include "analyzer/transformers/lowering.hpp"

namespace rooflens {

// A length: fixed, or uniform over [lo, hi] (seeded).
struct LengthSpec {
  int64_t lo = 0, hi = 0;
  double mean() const { return 0.5 * static_cast<double>(lo + hi); }
};
// "1024" or "uniform:512:2048"; InputError otherwise.
LengthSpec parse_length(const std::string& flag, const std::string& text);

struct ServeOptions {
  LoweringOptions lowering;  // dtypes, tp
  // ep: expert-parallel GPUs. Equal to lowering.tp: the experts spread over the TP group. With
  // tp 1: attention data parallelism, ep ranks each with its own scheduler and cache, the
  // experts spread over them and tokens exchanged by all-to-alls (attention_dp()).
  int64_t pp = 1, dp = 1, ep = 1;
  bool attention_dp() const { return ep > 1 && lowering.tp == 1; }
  // Schedulers of one replica that step together: the attention ranks, else one.
  int64_t lockstep_ranks() const { return attention_dp() ? ep : 1; }
  bool sp =
      false;  // sequence parallelism: each TP all-reduce as a reduce-scatter and an all-gather
  EngineDefaults engine;
  bool cuda_graphs = true;
  double step_overhead_s = 0;  // host/scheduler time per step, beside the kernels
  LengthSpec isl{1024, 1024}, osl{1024, 1024};
  int64_t concurrency = 0;   // closed loop
  double rate = 0;           // open loop, requests per second (Poisson)
  int64_t num_requests = 0;  // 0: 8 x concurrency (at least 32), or 256 for a rate
  uint64_t seed = 0;
  std::vector<int64_t> sweep;  // concurrencies for a latency-throughput table
};

struct MemoryPlanPerGpu {
  int64_t device_bytes = 0, weight_bytes = 0, activation_bytes = 0, kv_bytes = 0;
  int64_t kv_bytes_per_token = 0;  // per GPU: its layers (pp), its KV heads (tp)
};

struct ServingStats {
  int64_t requests = 0, concurrency = 0;
  double rate = 0;
  double ttft_mean_s = 0, ttft_p50_s = 0, ttft_p99_s = 0;
  double tpot_mean_s = 0, tpot_p50_s = 0, tpot_p99_s = 0;
  double e2e_latency_mean_s = 0;
  double throughput_tokens_per_s = 0, throughput_tokens_per_s_per_gpu = 0, requests_per_s = 0;
  int64_t preemptions = 0, max_running = 0;
  int64_t mixed_steps = 0, prefill_only_steps = 0, decode_only_steps = 0;
  double mean_step_s = 0, mean_decode_batch = 0;
  bool sustainable = true;  // open loop: the wait does not grow with time (wait_growth <= 0.05)
  double wait_growth = 0;   // open loop: least-squares slope of TTFT over arrival time
};

struct ServeResult {
  std::string model;
  int64_t gpus = 0;
  int64_t kv_blocks = 0,
          kv_capacity_tokens = 0;  // per scheduler (a replica's pipeline stage batch)
  int64_t max_concurrency_without_preemption = 0;  // the deployment's, at the mean lengths
  MemoryPlanPerGpu memory;
  SchedulerKnobs knobs;
  ServingStats stats;
  std::vector<ServingStats> sweep;
  std::vector<StepRecord> timeline;  // the first scheduler's first steps
  int64_t cost_grid_points = 0;
  double moe_imbalance = 1;  // expected busiest / mean expert GPU load at the mean step (--ep)
  // The kernel whose tables priced the experts: the engine's, or the nearest the profile has.
  ExpertKernel expert_kernel_priced = ExpertKernel::batched;
  std::vector<std::string> notes;
};

ServeResult run_serve(const TransformerConfig& config, const ServeOptions& options,
                      std::shared_ptr<const Device> device);

// Percentile (0-100) with linear interpolation between order statistics (numpy's default).
double percentile(std::vector<double> values, double p);

}  // namespace rooflens
