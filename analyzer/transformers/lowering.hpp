#pragma once
// Lowers a transformer config into the one Graph IR, with nodes named like the framework's
// modules (model.layers.3.self_attn.q_proj). Prefill, decode and tensor-parallel shards differ in
// shapes, never in formulas: the same rules cost every node. What each layer is comes from the
// config's LayerSpec; a block's forward nodes are built in one place per kind (attention, MLP,
// MoE, SSM, norm: lowering_*.cpp).
#include <optional>
#include <string>
#include <vector>

#include "analyzer/ir/graph.hpp"
#include "analyzer/transformers/model_config.hpp"

namespace rooflens {

enum class Phase { prefill, decode };
enum class AttentionImpl { flash, naive };

struct LoweringOptions {
  Phase phase = Phase::prefill;
  int64_t batch = 1;
  int64_t seq = 1;      // prefill: tokens per sequence
  int64_t context = 0;  // decode: tokens already seen per sequence (one new token attends to them)
  AttentionImpl attention = AttentionImpl::flash;
  DType weights = DType::bf16;  // f32, bf16, f16, f8e4m3fn, i8, i4, f4e2m1 (linear layers' weights)
  int64_t group_size = 128;     // i4: one fp16 scale per group of input rows
  DType activations = DType::bf16;
  DType kv = DType::bf16;
  int64_t tp = 1;  // tensor-parallel degree: the graph is one GPU's shard
  // Expert-parallel degree (MoE, with tp 1): the graph is one GPU's share of a deployment whose
  // attention is data-parallel (batch / ep sequences a GPU, every attention weight on each) and
  // whose routed experts are spread over the GPUs (experts / ep each), tokens sent to their
  // experts' GPUs and back by two all-to-alls a MoE layer.
  int64_t ep = 1;
  int64_t gpus() const { return tp * ep; }
  int64_t batch_per_gpu() const { return batch / ep; }
  // Which modules are quantized and how (from quantization_config or --weights); none: every
  // linear layer in `weights`, without scales.
  std::optional<QuantizationSpec> quantization;
  std::string weights_source;  // "quantization_config", "--weights", "config dtype"
};

struct LoweredModel {
  Graph graph;
  std::vector<int> layer_of_node;                    // per node: decoder layer, -1 outside layers
  std::vector<std::pair<int, size_t>> cache_inputs;  // past K/V inputs and their length axis
};

LoweredModel lower_transformer(const TransformerConfig& c, const LoweringOptions& o);

// Tokens layer `layer` keeps cached once a sequence has seen `tokens` (transformers' caches: a
// sliding window keeps the last window - 1, a chunked layer the last chunk - 1, so that with the
// next token the window is full; layers without a KV cache keep 0).
int64_t cached_tokens(const TransformerConfig& c, int64_t layer, int64_t tokens);

// KV cache (and recurrent state) bytes per sequence per GPU after `tokens` tokens, every layer
// as it is: GQA keys and values, MLA's latent, window caps, Mamba's conv and
// SSM states, linear attention's d x d state.
int64_t kv_cache_bytes(const TransformerConfig& c, const LoweringOptions& o, int64_t tokens);
// Bytes one cached token takes across all attention layers (before any window cap).
int64_t kv_cache_bytes_per_token(const TransformerConfig& c, const LoweringOptions& o);
// The longest context whose cache fits in `bytes` per sequence; -1 when the cache stops growing
// (every layer windowed or recurrent) and fits.
int64_t longest_context(const TransformerConfig& c, const LoweringOptions& o, int64_t bytes);

// Checks --tp against the config (heads, KV heads, FFN) and the dtype choices; InputError.
void validate_lowering(const TransformerConfig& c, const LoweringOptions& o);

}  // namespace rooflens
