#pragma once
// A discrete-event model of a continuous-batching engine (vLLM's, SGLang's, TensorRT-LLM's
// scheduler reduced to what sets the latencies): each step takes the running sequences' decode
// tokens and prefill chunks up to a token budget, admits waiting requests while KV blocks, the
// budget and the sequence limit allow, preempts the newest sequence (recompute) when the cache
// runs out, and advances the clock by the step's cost. TTFT includes the wait in the queue.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/serving/step_cost.hpp"

namespace rooflens {

// Layers whose cache keeps only a sequence's last `keep` tokens (a sliding window keeps window - 1,
// a chunked layer chunk - 1; 0: every token), `layers` of them.
struct KvLayerGroup {
  int64_t keep = 0;
  int64_t layers = 0;
};

// The blocks a sequence holds. A block is `block_size` tokens of every attention layer's cache, as
// for a model without windows; a windowed layer holds only the blocks its kept tokens and this
// step's new ones fall in, and gives the others back (vLLM V1's hybrid KV-cache manager).
struct KvFootprint {
  int64_t block_size = 16;
  std::vector<KvLayerGroup> groups;  // empty: every layer keeps every token

  // After the step that brings the sequence to `tokens`, `step_tokens` of them new this step.
  int64_t blocks(int64_t tokens, int64_t step_tokens) const;
  // The most a sequence of `prompt` + output = `total` tokens holds when its prompt is prefilled in
  // chunks of at most `chunk` tokens (the last chunk, or the last token, whichever holds more).
  int64_t peak_blocks(int64_t prompt, int64_t total, int64_t chunk) const;
  bool windowed() const;
};

struct SchedulerKnobs {
  int64_t max_batched_tokens = 8192;    // token budget per step
  int64_t max_seqs = 256;               // sequences running at once
  int64_t block_size = 16;              // KV-cache tokens per block
  int64_t kv_blocks = 0;                // blocks the cache holds
  std::vector<KvLayerGroup> kv_layers;  // windowed layers (KvFootprint); empty: none
  bool chunked_prefill = true;          // false: a prompt is prefilled whole in one step
  // true: admit a request only when blocks for its prompt and all its output are free
  // (TensorRT-LLM's GUARANTEED_NO_EVICT); false: blocks are taken as tokens arrive, and the
  // newest sequence is preempted when none is left (vLLM, SGLang).
  bool reserve_full_output = false;
};

struct Request {
  double arrival_s = 0;
  int64_t prompt = 0, output = 0;
};

// The workload: a closed loop (concurrency > 0: that many in flight, a new one arriving as one
// finishes) or an open loop (the requests' own arrival times).
struct ServingWorkload {
  int64_t concurrency = 0;
  std::vector<Request> requests;  // closed loop: arrival times ignored
};

struct RequestResult {
  double arrival_s = 0, first_token_s = 0, finish_s = 0;
  int64_t prompt = 0, output = 0, preemptions = 0;
  double ttft() const { return first_token_s - arrival_s; }
  double tpot() const;  // (finish - first token) / (output - 1); 0 for one token
  double e2e() const { return finish_s - arrival_s; }
};

struct StepRecord {
  double start_s = 0, seconds = 0;
  int64_t prefill_tokens = 0, decode_seqs = 0, waiting = 0;
};

inline constexpr size_t kTimelineSteps = 2000;

struct SimulationResult {
  std::vector<RequestResult> requests;
  std::vector<StepRecord> steps;  // the first kTimelineSteps steps
  int64_t step_count = 0;
  double step_seconds = 0, decode_seqs = 0;  // over all steps
  int64_t preemptions = 0;
  int64_t max_running = 0;
  double makespan_s = 0;  // first arrival to last finish
  int64_t mixed_steps = 0, prefill_only_steps = 0, decode_only_steps = 0;
};

// Seconds one step takes.
using StepSeconds = std::function<double(const StepShape&)>;

// InputError when a single request can never fit the cache or the budget (no progress possible).
SimulationResult simulate(const ServingWorkload& w, const SchedulerKnobs& k,
                          const StepSeconds& step_seconds);

// Seconds a step takes when several engines step together: the shapes of those with work.
using LockstepSeconds = std::function<double(const std::vector<StepShape>&)>;

// Engines that step together, as data-parallel attention ranks do (their expert layers exchange
// every step's tokens by all-to-all): each step every engine with work schedules its own batch
// from its own requests and cache, the step takes `step_seconds` of all their shapes, and every
// engine's clock advances by it; an engine with nothing to run waits (engines run a dummy batch).
// When all are idle the clock jumps to the first arrival. One result per engine.
std::vector<SimulationResult> simulate_lockstep(const std::vector<ServingWorkload>& w,
                                                const SchedulerKnobs& k,
                                                const LockstepSeconds& step_seconds);

}  // namespace rooflens
