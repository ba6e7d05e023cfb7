#pragma once
// Lowers a transformer config into the one Graph IR, with nodes named like the framework's
// modules (model.layers.3.self_attn.q_proj). Prefill, decode and tensor-parallel shards differ in
// shapes, never in formulas: the same rules cost every node.
#include <vector>

#include "analyzer/graph.hpp"
#include "analyzer/transformer_config.hpp"

namespace rooflens {

enum class Phase { prefill, decode };
enum class AttentionImpl { flash, naive };

struct LoweringOptions {
  Phase phase = Phase::prefill;
  int64_t batch = 1;
  int64_t seq = 1;      // prefill: tokens per sequence
  int64_t context = 0;  // decode: tokens already cached per sequence (one new token attends to them)
  AttentionImpl attention = AttentionImpl::flash;
  DType weights = DType::bf16;  // f32, bf16, f16, f8e4m3fn, i8, i4
  int64_t group_size = 128;     // i4: one fp16 scale per group of input rows
  DType activations = DType::bf16;
  DType kv = DType::bf16;
  int64_t tp = 1;  // tensor-parallel degree: the graph is one GPU's shard
};

struct LoweredModel {
  Graph graph;
  std::vector<int> layer_of_node;                   // per node: decoder layer, -1 outside layers
  std::vector<std::pair<int, size_t>> cache_inputs;  // past K/V inputs and their length axis
};

LoweredModel lower_transformer(const TransformerConfig& c, const LoweringOptions& o);

// Tokens a sequence keeps in the KV cache when it has seen `context` (a sliding window keeps
// the last window - 1, so that with the new token the window is full).
int64_t cached_tokens(const TransformerConfig& c, int64_t context);

// KV cache bytes per token per GPU across all layers: 2 * kv_heads/tp * head_dim per layer, or
// for MLA with fused attention the latent plus the rope key (kv_lora_rank + qk_rope_head_dim).
int64_t kv_cache_bytes_per_token(const TransformerConfig& c, const LoweringOptions& o);

// Checks --tp against the config (heads, KV heads, FFN) and the dtype choices; InputError.
void validate_lowering(const TransformerConfig& c, const LoweringOptions& o);

}  // namespace rooflens
