#pragma once
// `--runtime`: an inference step as PyTorch runs it, not only as its kernels would run back to
// back. eager: Hugging Face's eager code, the host issuing each kernel after its Python and
// dispatch (the device profile's measured cost per kernel and per forward call), the GPU queued
// behind it, and generate()'s loop per token; graphs: the same kernels captured once in a CUDA
// graph and replayed (one launch, no host between kernels). Both run the kernels HF's code
// launches (RMSNorm written out, the DynamicCache's torch.cat), not the fused ones the graph's
// nodes stand for. docs/runtime.md gives the model and its checks.
#include <cstdint>
#include <optional>
#include <string>

#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens {

enum class RuntimeMode { eager, graphs };
RuntimeMode parse_runtime_mode(const std::string& name);  // InputError on another name
std::string_view runtime_mode_name(RuntimeMode m);

struct RuntimeStep {
  double wall_s = 0;      // issued by the host and finished on the GPU
  double gpu_busy_s = 0;  // the kernels' own time
  double host_s = 0;      // the host's time issuing them (0 when not modelled)
  int64_t kernels = 0;
  double kv_append_s = 0;  // decode: the cache append's copies, included in gpu_busy_s
};

struct RuntimeSummary {
  RuntimeMode mode = RuntimeMode::eager;
  std::string workload;  // prefill, decode, generate
  RuntimeStep step;      // prefill: the forward; decode and generate: the first decode step
  // generate: the prompt's prefill, then gen - 1 decode steps and the loop's cost per token.
  std::optional<RuntimeStep> prefill;
  double generate_wall_s = 0, tokens_per_s = 0;
  int64_t gen = 0;
  bool host_modelled = false;  // the device profile has the inference host costs
  std::string source;          // where the host costs come from
};

// A config's step (o.workload) as `mode` runs it: the analysis with `runtime` set.
Analysis analyze_runtime(const TransformerConfig& c, const TransformerOptions& o, RuntimeMode mode);

}  // namespace rooflens
