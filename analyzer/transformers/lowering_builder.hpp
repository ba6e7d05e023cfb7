#pragma once
// The lowering's builder, shared by its files: lowering.cpp (model, blocks, linear and norm),
// lowering_attention.cpp (softmax attention, MLA, linear attention), lowering_mlp.cpp (dense MLP
// and experts), lowering_ssm.cpp (Mamba mixer). Each block kind's forward nodes are built by one
// member, which a backward builder can walk in turn.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/ir/graph_builder.hpp"
#include "analyzer/transformers/lowering.hpp"

namespace rooflens::lowering {

// One GPU's share of the sharded dims under tensor parallelism.
struct Shard {
  int64_t heads, kv_heads, inter, moe_inter, shared_inter, dense_inter, vocab;
};

class Builder {
 public:
  Builder(const TransformerConfig& c, const LoweringOptions& o);
  LoweredModel run();

  // ---- model and blocks (lowering.cpp) ----
  int embeddings();
  int patch_embeddings();
  int qwen2_vl_patch_embeddings();  // Qwen2-VL: Conv3d patches, the 2-D rope's tables
  int patch_merger(int x);
  int projector(int x);  // --part all: Gemma 3's or LLaVA's, to the language model's width //
                         // Qwen2-VL: merge x merge patches -> one language-model token
  int head(int x);
  int layer(int64_t i, int x);
  int mixer(int64_t i, const std::string& p,
            int h);  // attention, linear attention or Mamba, all-reduced
  int ffn(int64_t i, const std::string& p, int h);  // MLP or experts, all-reduced

  // ---- building blocks (lowering.cpp) ----
  int linear(const std::string& name, int x, int64_t in, int64_t out, bool bias,
             bool quantizable = true);
  int norm(const std::string& name, int x, int64_t dim, std::optional<NormKind> kind = {});
  int all_reduce(const std::string& name, int x);
  int reshape(const std::string& name, int x, Shape to);
  int scale(const std::string& name, int x, double factor);
  std::vector<int> split(const std::string& name, int x, std::vector<int64_t> sizes, int64_t axis);
  int activation(const std::string& name, const std::string& act, int x, const std::string& module);
  int cache_input(const std::string& name, DType dtype, Shape shape,
                  std::optional<size_t> length_axis);

  // ---- attention (lowering_attention.cpp) ----
  int self_attention(int64_t i, const std::string& p, int h);
  int latent_attention(int64_t i, const std::string& p, int h);
  int linear_attention(int64_t i, const std::string& p, int h);
  int attention_core(int64_t i, const std::string& p, int q, int k, int v, int64_t hq, int64_t hkv,
                     int64_t dqk, int64_t dv, bool kv_shared = false);
  int naive_attention(int64_t i, const std::string& p, int q, int k, int v, int64_t hq, int64_t hkv,
                      int64_t dqk, int64_t dv, int64_t kv_tokens = -1);
  int rope(const std::string& name, int x, int64_t heads, int64_t rot_dim);
  int qk_norm(const std::string& name, int x, int64_t heads);

  // ---- feed-forward (lowering_mlp.cpp) ----
  int dense_mlp(const std::string& p, int h, int64_t inter);
  int gated_mlp(const std::string& gate, const std::string& up, const std::string& down,
                const std::string& module, int h, int64_t inter, bool bias);
  int experts(const std::string& p, int h);
  std::vector<int> dispatch_routed(const std::string& ex, int h, int probs);
  int combine_routed(const std::string& ex, int y);

  // ---- state space (lowering_ssm.cpp) ----
  int mamba_mixer(int64_t i, const std::string& p, int h);

  // ---- encoder-decoder (lowering_encoder_decoder.cpp) ----
  struct Stack;  // one side (encoder or decoder): its names and dims
  LoweredModel run_encoder_decoder();
  int encoder_stem(const Stack& s);
  int embed_tokens(const Stack& s, int64_t tokens);
  int relative_bias(const Stack& s, int64_t q_len, int64_t k_len);
  int encdec_layer(const Stack& s, int64_t i, int x, int memory, int bias);
  int encdec_attention(const Stack& s, const std::string& a, int h, bool cross, int memory,
                       int bias);
  int encdec_core(const Stack& s, const std::string& a, int q, int k, int v, int64_t new_kv,
                  int64_t cached, int bias);
  int encdec_mlp(const Stack& s, const std::string& p, int h);
  int64_t source_ = 0;  // tokens the encoder runs over

  const TransformerConfig& c_;
  const LoweringOptions& o_;
  GraphBuilder b_;
  Shard s_{};
  int64_t B_, S_;
  DType act_, w_, plain_;
  std::optional<QuantizationSpec> quant_;
  int positions_ = -1, embed_table_ = -1, mask_ = -1, seqlens_ = -1;
  std::map<int64_t, std::pair<int, int>> rope_tables_;  // rotated dims -> cos, sin
  std::vector<int> layer_of_node_;
  std::vector<std::pair<int, size_t>> cache_inputs_;
  std::map<int, int> quantized_;

  int64_t past(int64_t layer) const;  // decode: tokens layer `layer` has cached
  std::string layer_prefix(int64_t i) const;
  std::string at(const std::string& layer_prefix, const std::string& relative) const;
};

bool is_wide_float(DType t);

}  // namespace rooflens::lowering
