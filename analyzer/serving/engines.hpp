#pragma once
// The scheduling knobs `rooflens serve --engine` starts from: each engine's documented default,
// with the page (or the source file the page points to) that states it. Nothing here is fitted
// to a benchmark; every flag of `serve` overrides its knob.
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/hw/perf_model.hpp"

namespace rooflens {

// Which memory the cache fraction is a fraction of.
enum class CacheFractionOf {
  device_total,         // vLLM gpu_memory_utilization: weights, activations and cache within it
  device_total_static,  // SGLang mem_fraction_static: weights and cache within it
  free_after_model,  // TensorRT-LLM free_gpu_memory_fraction: of what weights and activations leave
};

struct EngineDefaults {
  std::string name;
  int64_t max_batched_tokens = 0;
  int64_t max_seqs = 0;  // 0: bounded by the KV cache only
  int64_t block_size = 0;
  double memory_fraction = 0;
  CacheFractionOf fraction_of = CacheFractionOf::device_total;
  bool chunked_prefill = true;
  bool reserve_full_output = false;
  int64_t graph_max_tokens = 0;  // steps of at most this many tokens replay a CUDA graph
  bool graph_mixed_steps =
      false;  // graphs cover steps with prefill tokens too (vLLM's piecewise graphs)
  ExpertKernel expert_kernel = ExpertKernel::fused;  // what MoE expert projections run on
  // Sliding-window layers hold only their window's blocks in the shared pool (vLLM V1's hybrid
  // KV-cache manager); false: every layer's cache is sized at the full context.
  bool windowed_blocks = false;
  std::vector<std::string> sources;  // one line per knob: value, where it is documented
};

// vllm, sglang, trtllm; InputError otherwise. `tp` and `device_memory_bytes` pick the engine's
// own tiers (SGLang's fraction by TP size; vLLM's and SGLang's budgets by GPU memory).
EngineDefaults engine_defaults(const std::string& engine, int64_t tp, int64_t device_memory_bytes);

}  // namespace rooflens
