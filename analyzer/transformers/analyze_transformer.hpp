#pragma once
// `rooflens analyze config.json`: lower the config, run the same analysis as for ONNX, then add
// what only a transformer has: KV cache, active params, memory fit, tensor-parallel traffic and
// the generation sweep (prefill, then every decode step as the context grows).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/transformers/config.hpp"
#include "analyzer/transformers/lowering.hpp"

namespace rooflens {

enum class Workload { prefill, decode, generate };

struct TransformerOptions {
  Workload workload = Workload::prefill;
  LoweringOptions lowering;     // batch, seq/context, attention, dtypes, tp
  int64_t prompt = 0, gen = 0;  // generate
  std::string device = "H100-SXM";
  std::shared_ptr<const Device> calibrated;  // --device-profile
  bool strict = false;
  // The forward of a training step (analyze_training): the summary's workload is "train" and the
  // inference-only remarks (the KV cache's context) stay out.
  bool training_forward = false;
};

struct MemoryFit {
  int64_t weight_bytes = 0, kv_cache_bytes = 0, activation_bytes = 0, total_bytes = 0,
          device_bytes = 0;
  bool fits = false;
  int64_t max_batch = 0;  // at this context
  int64_t max_context =
      0;  // at this batch (KV growth, activations as analyzed); -1: unbounded (window)
  int64_t cached_tokens = 0;  // per sequence: the most any layer keeps (window-capped)
  int64_t context_limit = 0;  // max_position_embeddings or the rope scaling's stated limit; 0: none
};

struct GenerationSweep {
  int64_t prompt = 0, gen = 0;
  double ttft_s = 0;  // prefill of the prompt, which yields the first token
  double tpot_first_s = 0, tpot_last_s = 0;
  double total_s = 0;
  double tokens_per_s = 0;     // batch * gen / total
  std::vector<double> step_s;  // decode steps 1..gen-1; step i attends to prompt + i tokens
};

struct TransformerSummary {
  TransformerConfig config;
  std::string workload;  // "prefill", "decode", "generate"
  LoweringOptions lowering;
  int64_t params_total = 0;    // the whole model
  int64_t params_active = 0;   // per token: MoE layers count only top-k experts
  int64_t params_per_gpu = 0;  // under --tp
  int64_t kv_bytes_per_token = 0, kv_bytes_per_sequence = 0, kv_bytes_batch = 0;
  MemoryFit memory;
  std::string weights_source;  // which setting chose the weights' dtype, e.g. "quantization_config
                               // (mxfp4 ...)"
  int64_t allreduces = 0;
  double allreduce_s = 0;
  std::optional<GenerationSweep> generation;
  std::shared_ptr<const Analysis> decode_step;  // generate: the first decode step's analysis
};

// The analysis of the lowered graph (prefill, or the decode step), with `transformer` set.
// `inferred`, when given, receives the lowered graph with shapes bound (prefill or decode).
Analysis analyze_transformer(const TransformerConfig& config, const TransformerOptions& options,
                             Graph* inferred = nullptr);

std::string_view workload_name(Workload w);

}  // namespace rooflens
