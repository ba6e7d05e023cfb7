#include "analyzer/lowering.hpp"

#include <fmt/format.h>

#include "analyzer/checked.hpp"
#include "analyzer/errors.hpp"
#include "analyzer/graph_builder.hpp"

namespace rooflens {
namespace {

bool is_quantized(DType t) { return t == DType::i4 || t == DType::i8; }

bool is_wide_float(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

// The residual stream, and the tensors quantization recipes keep unquantized (embeddings,
// norms, lm_head, biases): the activations' dtype if it is a 16/32-bit float, else the weights'
// if that is, else bf16. 8-bit activations apply to GEMM inputs only.
DType unquantized_dtype(const LoweringOptions& o) {
  if (is_wide_float(o.activations)) return o.activations;
  return is_wide_float(o.weights) ? o.weights : DType::bf16;
}

// One GPU's share of the sharded dims under tensor parallelism.
struct Shard {
  int64_t heads, kv_heads, inter, moe_inter, vocab;
};

class Lowering {
 public:
  Lowering(const TransformerConfig& c, const LoweringOptions& o)
      : c_(c), o_(o), b_(c.path), B_(o.batch), S_(o.phase == Phase::prefill ? o.seq : 1),
        P_(o.phase == Phase::decode ? cached_tokens(c, o.context) : 0), act_(o.activations), w_(o.weights),
        plain_(unquantized_dtype(o)) {
    s_.heads = c.heads / o.tp;
    s_.kv_heads = c.kv_heads >= o.tp ? c.kv_heads / o.tp : 1;  // fewer KV heads than GPUs: replicated
    s_.inter = c.intermediate / o.tp;
    s_.moe_inter = c.moe_intermediate / o.tp;
    s_.vocab = ceil_div(c.vocab, o.tp);  // Megatron pads the vocabulary to a multiple of tp
  }

  LoweredModel run() {
    bool gpt2 = c_.family == ModelFamily::gpt2, bert = c_.family == ModelFamily::bert;
    int x = embeddings();
    for (int64_t i = 0; i < c_.layers; ++i) {
      size_t first = b_.node_count();
      x = bert ? bert_layer(i, x) : decoder_layer(i, x);
      layer_of_node_.resize(first, -1);
      layer_of_node_.resize(b_.node_count(), static_cast<int>(i));
    }
    int out;
    if (bert) {
      int first_token = b_.op("Gather", "pooler.first_token", {x, b_.int_constant("pooler.index", {0}, true)}, {{"axis", int_attr(1)}});
      out = b_.op("Tanh", "pooler.activation", {linear("pooler.dense", first_token, c_.hidden, c_.hidden, true)});
    } else {
      int h = norm(gpt2 ? "transformer.ln_f" : "model.norm", x, c_.hidden);
      out = lm_head(h);
    }
    b_.output(out);
    layer_of_node_.resize(b_.node_count(), -1);
    LoweredModel m{b_.finish(), std::move(layer_of_node_), std::move(cache_inputs_)};
    return m;
  }

 private:
  // ---- building blocks ----------------------------------------------------------------------

  Shape hidden_shape(int64_t width) const { return {B_, S_, width}; }

  int constant_shape(const std::string& name, Shape s) { return b_.int_constant(name, std::move(s)); }

  int reshape(const std::string& name, int x, Shape to) {
    return b_.op("Reshape", name, {x, constant_shape(name + ".shape", std::move(to))});
  }

  // y = x W (+ b). Integer weights carry their fp16 scales as a third input (counted as weight
  // bytes, not parameters).
  // 8-bit activations (W8A8): a quantize kernel writes the GEMM's input in fp8/int8 once per
  // tensor; the GEMM then computes at the 8-bit roof and writes a 16-bit result.
  int quantized(int x) {
    auto it = quantized_.find(x);
    if (it != quantized_.end()) return it->second;
    int q = b_.op("Cast", b_.tensor(x).name + ".quantize", {x}, {{"to", int_attr(static_cast<int64_t>(act_))}});
    quantized_[x] = q;
    return q;
  }

  int linear(const std::string& name, int x, int64_t in, int64_t out, bool bias, std::optional<DType> dtype = {}) {
    DType wd = dtype.value_or(w_);
    bool a8 = !is_wide_float(act_) && !dtype;
    std::vector<int> inputs{a8 ? quantized(x) : x, b_.weight(name + ".weight", wd, {in, out})};
    if (wd == DType::i4) inputs.push_back(b_.weight(name + ".scales", DType::f16, {ceil_div(in, o_.group_size), out}, false));
    if (wd == DType::i8) inputs.push_back(b_.weight(name + ".scales", DType::f16, {1, out}, false));
    std::map<std::string, Attribute> attrs;
    if (a8) attrs["output_dtype"] = int_attr(static_cast<int64_t>(plain_));
    int y = b_.op("MatMul", name, inputs, attrs);
    if (bias) y = b_.op("Add", name + ".bias_add", {y, b_.weight(name + ".bias", plain_, {out})});
    return y;
  }

  int norm(const std::string& name, int x, int64_t dim) {
    if (c_.rms_norm)
      return b_.op("SimplifiedLayerNormalization", name, {x, b_.weight(name + ".weight", plain_, {dim})}, {{"axis", int_attr(-1)}});
    return b_.op("LayerNormalization", name,
                 {x, b_.weight(name + ".weight", plain_, {dim}), b_.weight(name + ".bias", plain_, {dim})},
                 {{"axis", int_attr(-1)}});
  }

  int all_reduce(const std::string& name, int x) {
    if (o_.tp <= 1) return x;
    return b_.op("AllReduce", name, {x}, {{"ranks", int_attr(o_.tp)}}, "rooflens");
  }

  int rope(const std::string& name, int x, int64_t heads, int64_t rot_dim) {
    if (cos_ < 0) {
      cos_ = b_.weight("model.rotary_emb.cos_cached", plain_, {c_.max_positions, c_.qk_rope_dim > 0 ? c_.qk_rope_dim / 2 : c_.head_dim / 2}, false);
      sin_ = b_.weight("model.rotary_emb.sin_cached", plain_, {c_.max_positions, c_.qk_rope_dim > 0 ? c_.qk_rope_dim / 2 : c_.head_dim / 2}, false);
    }
    return b_.op("RotaryEmbedding", name, {x, positions_, cos_, sin_},
                 {{"num_heads", int_attr(heads)}, {"rotary_embedding_dim", int_attr(rot_dim)}}, "com.microsoft");
  }

  int embeddings() {
    int ids = b_.input("input_ids", DType::i64, {B_, S_});
    positions_ = b_.input("position_ids", DType::i64, {B_, S_});
    std::string table = c_.family == ModelFamily::gpt2 ? "transformer.wte"
                      : c_.family == ModelFamily::bert ? "embeddings.word_embeddings" : "model.embed_tokens";
    embed_table_ = b_.weight(table + ".weight", plain_, {s_.vocab, c_.hidden});
    int x = all_reduce(table + ".all_reduce", b_.op("Gather", table, {embed_table_, ids}));
    if (c_.family == ModelFamily::gpt2) {
      int wpe = b_.weight("transformer.wpe.weight", plain_, {c_.max_positions, c_.hidden});
      x = b_.op("Add", "transformer.embeddings_add", {x, b_.op("Gather", "transformer.wpe", {wpe, positions_})});
    } else if (c_.family == ModelFamily::bert) {
      int pos = b_.weight("embeddings.position_embeddings.weight", plain_, {c_.max_positions, c_.hidden});
      int types = b_.weight("embeddings.token_type_embeddings.weight", plain_, {c_.type_vocab, c_.hidden});
      int type_ids = b_.input("token_type_ids", DType::i64, {B_, S_});
      x = b_.op("Add", "embeddings.add_positions", {x, b_.op("Gather", "embeddings.position_embeddings", {pos, positions_})});
      x = b_.op("Add", "embeddings.add_token_types", {x, b_.op("Gather", "embeddings.token_type_embeddings", {types, type_ids})});
      x = norm("embeddings.LayerNorm", x, c_.hidden);
    }
    return x;
  }

  int lm_head(int h) {
    if (c_.tie_embeddings)  // the embedding table itself, read transposed: shared, counted once
      return b_.op("FusedMatMul", "lm_head", {h, embed_table_}, {{"transB", int_attr(1)}}, "com.microsoft");
    return linear("lm_head", h, c_.hidden, s_.vocab, false, plain_);
  }

  // ---- attention --------------------------------------------------------------------------------

  // Past K/V of one layer as a graph input; `axis` holds the cached length.
  int cache_input(const std::string& name, Shape shape, size_t axis) {
    int t = b_.input(name, o_.kv, std::move(shape));
    b_.tensor(t).is_kv_cache = true;
    cache_inputs_.emplace_back(t, axis);
    return t;
  }

  // The attention itself on projected q [B,S,Hq*Dqk], k [B,S,Hkv*Dqk], v [B,S,Hkv*Dv]; returns
  // [B,S,Hq*Dv]. Fused (flash) as one node; naive with the scores materialized.
  int attention_core(const std::string& p, int q, int k, int v, int64_t hq, int64_t hkv, int64_t dqk, int64_t dv,
                     bool kv_shared = false) {
    if (o_.attention == AttentionImpl::naive) return naive_attention(p, q, k, v, hq, hkv, dqk, dv);
    bool past = P_ > 0;
    int past_k = past ? cache_input(p + ".past_key", {B_, hkv, P_, dqk}, 2) : -1;
    int past_v = past && !kv_shared ? cache_input(p + ".past_value", {B_, hkv, P_, dv}, 2) : -1;
    if (c_.sliding_window > 0) {
      // total_sequence_length left out: the rule takes past + new, which the sweep can change.
      int seqlens = b_.input(p + ".seqlens_k", DType::i32, {B_});
      return b_.op("GroupQueryAttention", p + ".attn", {q, k, v, past_k, past_v, seqlens},
                   {{"num_heads", int_attr(hq)}, {"kv_num_heads", int_attr(hkv)}, {"local_window_size", int_attr(c_.sliding_window)}},
                   "com.microsoft");
    }
    std::map<std::string, Attribute> attrs{{"is_causal", int_attr(c_.causal ? 1 : 0)},
                                           {"q_num_heads", int_attr(hq)},
                                           {"kv_num_heads", int_attr(hkv)}};
    if (kv_shared) attrs["kv_shared"] = int_attr(1);
    return b_.op("Attention", p + ".attn", {q, k, v, -1, past_k, past_v}, attrs);
  }

  // What eager PyTorch runs: QK^T and PV as batched products with GQA groups broadcast, a
  // separate scale, mask add and softmax, and in decode a concatenation onto the cache.
  int naive_attention(const std::string& p, int q, int k, int v, int64_t hq, int64_t hkv, int64_t dqk, int64_t dv) {
    int64_t g = hq / hkv;
    int q5 = reshape(p + ".q_heads", q, {B_, S_, hkv, g, dqk});
    int k4 = reshape(p + ".k_heads", k, {B_, S_, hkv, dqk});
    int v4 = reshape(p + ".v_heads", v, {B_, S_, hkv, dv});
    if (P_ > 0) {
      k4 = b_.op("Concat", p + ".cache_k", {cache_input(p + ".past_key", {B_, P_, hkv, dqk}, 1), k4}, {{"axis", int_attr(1)}});
      v4 = b_.op("Concat", p + ".cache_v", {cache_input(p + ".past_value", {B_, P_, hkv, dv}, 1), v4}, {{"axis", int_attr(1)}});
    }
    int scores = b_.op("Einsum", p + ".scores", {q5, k4}, {{"equation", string_attr("bsngd,btnd->bngst")}});
    int scaled = b_.op("Mul", p + ".scale", {scores, b_.float_constant(p + ".scaling", plain_, 1.0)});
    if (c_.causal && S_ > 1) {
      if (mask_ < 0) mask_ = b_.input("causal_mask", plain_, {S_, P_ + S_});
      scaled = b_.op("Add", p + ".mask", {scaled, mask_});
    }
    int probs = b_.op("Softmax", p + ".softmax", {scaled}, {{"axis", int_attr(-1)}});
    int ctx = b_.op("Einsum", p + ".context", {probs, v4}, {{"equation", string_attr("bngst,btnd->bsngd")}});
    return reshape(p + ".merge_heads", ctx, {B_, S_, hq * dv});
  }

  int self_attention(const std::string& p, int h) {
    int64_t d = c_.head_dim, hq = s_.heads, hkv = s_.kv_heads;
    int q, k, v;
    if (c_.family == ModelFamily::gpt2) {
      int qkv = linear(p + ".c_attn", h, c_.hidden, (hq + 2 * hkv) * d, true);
      auto parts = b_.node("Split", p + ".split_qkv", {qkv, b_.int_constant(p + ".split_sizes", {hq * d, hkv * d, hkv * d})}, 3,
                           {{"axis", int_attr(2)}});
      q = parts[0], k = parts[1], v = parts[2];
    } else {
      bool bert = c_.family == ModelFamily::bert;
      q = linear(p + (bert ? ".query" : ".q_proj"), h, c_.hidden, hq * d, c_.qkv_bias);
      k = linear(p + (bert ? ".key" : ".k_proj"), h, c_.hidden, hkv * d, c_.qkv_bias);
      v = linear(p + (bert ? ".value" : ".v_proj"), h, c_.hidden, hkv * d, c_.qkv_bias);
    }
    if (!c_.learned_positions) {
      q = rope(p + ".q_rope", q, hq, d);
      k = rope(p + ".k_rope", k, hkv, d);
    }
    return attention_core(p, q, k, v, hq, hkv, d, d);
  }

  // Multi-head latent attention (DeepSeek-V3). Prefill and eager decode decompress the latent
  // into per-head K/V; fused decode absorbs the up-projections into q and the output and
  // attends over the cached latent directly (one KV head of kv_lora_rank + rope dims).
  int latent_attention(const std::string& p, int h) {
    int64_t hl = s_.heads, nope = c_.qk_nope_dim, rd = c_.qk_rope_dim, vd = c_.v_head_dim, r = c_.kv_lora_rank;
    int q;
    if (c_.q_lora_rank > 0) {
      int qa = norm(p + ".q_a_layernorm", linear(p + ".q_a_proj", h, c_.hidden, c_.q_lora_rank, false), c_.q_lora_rank);
      q = linear(p + ".q_b_proj", qa, c_.q_lora_rank, hl * (nope + rd), false);
    } else {
      q = linear(p + ".q_proj", h, c_.hidden, hl * (nope + rd), false);
    }
    q = rope(p + ".q_rope", q, hl, rd);
    int kva = linear(p + ".kv_a_proj_with_mqa", h, c_.hidden, r + rd, false);
    auto split = b_.node("Split", p + ".kv_a_split", {kva, b_.int_constant(p + ".kv_a_sizes", {r, rd})}, 2, {{"axis", int_attr(2)}});
    int c_kv = norm(p + ".kv_a_layernorm", split[0], r);
    int k_pe = rope(p + ".k_rope", split[1], 1, rd);
    int ctx;
    if (o_.phase == Phase::decode && o_.attention == AttentionImpl::flash) {
      DType wd = is_quantized(w_) ? plain_ : w_;
      int q4 = reshape(p + ".q_heads", q, {B_, S_, hl, nope + rd});
      auto qs = b_.node("Split", p + ".q_split", {q4, b_.int_constant(p + ".q_sizes", {nope, rd})}, 2, {{"axis", int_attr(3)}});
      int w_uk = b_.weight(p + ".kv_b_proj.weight_uk", wd, {hl, nope, r});
      int w_uv = b_.weight(p + ".kv_b_proj.weight_uv", wd, {hl, r, vd});
      int q_lat = b_.op("Einsum", p + ".q_absorb", {qs[0], w_uk}, {{"equation", string_attr("bshd,hdc->bshc")}});
      int qf = b_.op("Concat", p + ".q_concat", {q_lat, qs[1]}, {{"axis", int_attr(3)}});
      int latent = b_.op("Concat", p + ".latent_concat", {c_kv, k_pe}, {{"axis", int_attr(2)}});
      int lat_ctx = attention_core(p, reshape(p + ".q_merge", qf, {B_, S_, hl * (r + rd)}), latent, c_kv, hl, 1, r + rd, r, true);
      int out = b_.op("Einsum", p + ".v_absorb", {reshape(p + ".ctx_heads", lat_ctx, {B_, S_, hl, r}), w_uv},
                      {{"equation", string_attr("bshc,hcd->bshd")}});
      ctx = reshape(p + ".ctx_merge", out, {B_, S_, hl * vd});
    } else {
      int kv = linear(p + ".kv_b_proj", c_kv, r, hl * (nope + vd), false);
      auto kvs = b_.node("Split", p + ".kv_b_split", {reshape(p + ".kv_heads", kv, {B_, S_, hl, nope + vd}),
                                                      b_.int_constant(p + ".kv_b_sizes", {nope, vd})}, 2, {{"axis", int_attr(3)}});
      int pe = b_.op("Expand", p + ".k_pe_expand", {reshape(p + ".k_pe_heads", k_pe, {B_, S_, 1, rd}),
                                                     constant_shape(p + ".k_pe_shape", {B_, S_, hl, rd})});
      int k4 = b_.op("Concat", p + ".k_concat", {kvs[0], pe}, {{"axis", int_attr(3)}});
      ctx = attention_core(p, q, reshape(p + ".k_merge", k4, {B_, S_, hl * (nope + rd)}),
                           reshape(p + ".v_merge", kvs[1], {B_, S_, hl * vd}), hl, hl, nope + rd, vd);
    }
    return linear(p + ".o_proj", ctx, hl * vd, c_.hidden, false);
  }

  // ---- feed-forward -------------------------------------------------------------------------

  int gated_mlp(const std::string& p, int h, int64_t inter) {
    int gate = linear(p + ".gate_proj", h, c_.hidden, inter, c_.mlp_bias);
    int up = linear(p + ".up_proj", h, c_.hidden, inter, c_.mlp_bias);
    int act = b_.op("Swish", p + ".act_fn", {gate});
    return linear(p + ".down_proj", b_.op("Mul", p + ".act_mul", {act, up}), inter, c_.hidden, c_.mlp_bias);
  }

  int gelu(const std::string& name, int x) {
    bool tanh = c_.activation == "gelu_new" || c_.activation == "gelu_pytorch_tanh" || c_.activation == "gelu_fast";
    std::map<std::string, Attribute> attrs;
    if (tanh) attrs["approximate"] = string_attr("tanh");
    return b_.op("Gelu", name, {x}, attrs);
  }

  int experts(const std::string& p, int h) {
    int64_t e = c_.experts, in = s_.moe_inter;
    int logits = linear(p + ".gate", h, c_.hidden, e, false, plain_);
    int probs = c_.sigmoid_router ? b_.op("Sigmoid", p + ".router_sigmoid", {logits})
                                  : b_.op("Softmax", p + ".router_softmax", {logits}, {{"axis", int_attr(-1)}});
    b_.node("TopK", p + ".router_topk", {probs, b_.int_constant(p + ".k", {c_.experts_per_token})}, 2);
    bool mixtral = c_.family == ModelFamily::mixtral;
    std::string w1 = mixtral ? ".experts.w1" : ".experts.gate_proj", w2 = mixtral ? ".experts.w2" : ".experts.down_proj",
                w3 = mixtral ? ".experts.w3" : ".experts.up_proj";
    std::vector<int> inputs{h, probs, b_.weight(p + w1, w_, {e, c_.hidden, in}), -1, b_.weight(p + w2, w_, {e, in, c_.hidden}), -1,
                            b_.weight(p + w3, w_, {e, c_.hidden, in})};
    if (w_ == DType::i4)
      for (auto& [name, rows, cols] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
               {w1, c_.hidden, in}, {w2, in, c_.hidden}, {w3, c_.hidden, in}})
        inputs.push_back(b_.weight(p + name + ".scales", DType::f16, {e, ceil_div(rows, o_.group_size), cols}, false));
    int y = b_.op("MoE", p + ".experts", inputs,
                  {{"k", int_attr(c_.experts_per_token)}, {"activation_type", string_attr("silu")}}, "com.microsoft");
    if (c_.shared_experts > 0)
      y = b_.op("Add", p + ".shared_add", {y, gated_mlp(p + ".shared_experts", h, s_.moe_inter * c_.shared_experts)});
    return y;
  }

  // ---- layers -------------------------------------------------------------------------------

  int decoder_layer(int64_t i, int x) {
    bool gpt2 = c_.family == ModelFamily::gpt2;
    std::string p = gpt2 ? fmt::format("transformer.h.{}", i) : fmt::format("model.layers.{}", i);
    int h = norm(p + (gpt2 ? ".ln_1" : ".input_layernorm"), x, c_.hidden);
    std::string attn = p + (gpt2 ? ".attn" : ".self_attn");
    int a;
    if (c_.mla()) a = latent_attention(attn, h);
    else if (gpt2) a = linear(attn + ".c_proj", self_attention(attn, h), s_.heads * c_.head_dim, c_.hidden, true);
    else a = linear(attn + ".o_proj", self_attention(attn, h), s_.heads * c_.head_dim, c_.hidden, c_.o_bias);
    x = b_.op("Add", p + ".attn_residual", {x, all_reduce(attn + ".all_reduce", a)});
    h = norm(p + (gpt2 ? ".ln_2" : ".post_attention_layernorm"), x, c_.hidden);
    std::string mlp = p + (c_.family == ModelFamily::mixtral ? ".block_sparse_moe" : ".mlp");
    int m;
    if (c_.is_moe_layer(i)) m = experts(mlp, h);
    else if (gpt2) m = linear(mlp + ".c_proj", gelu(mlp + ".act", linear(mlp + ".c_fc", h, c_.hidden, s_.inter, true)), s_.inter, c_.hidden, true);
    else m = gated_mlp(mlp, h, s_.inter);
    return b_.op("Add", p + ".mlp_residual", {x, all_reduce(mlp + ".all_reduce", m)});
  }

  // BERT is post-norm: LayerNorm(x + sublayer(x)).
  int bert_layer(int64_t i, int x) {
    std::string p = fmt::format("encoder.layer.{}", i);
    int ctx = self_attention(p + ".attention.self", x);
    int a = all_reduce(p + ".attention.all_reduce", linear(p + ".attention.output.dense", ctx, s_.heads * c_.head_dim, c_.hidden, true));
    x = norm(p + ".attention.output.LayerNorm", b_.op("Add", p + ".attention.residual", {a, x}), c_.hidden);
    int inter = gelu(p + ".intermediate.act", linear(p + ".intermediate.dense", x, c_.hidden, s_.inter, true));
    int out = all_reduce(p + ".output.all_reduce", linear(p + ".output.dense", inter, s_.inter, c_.hidden, true));
    return norm(p + ".output.LayerNorm", b_.op("Add", p + ".output.residual", {out, x}), c_.hidden);
  }

  const TransformerConfig& c_;
  const LoweringOptions& o_;
  GraphBuilder b_;
  Shard s_{};
  int64_t B_, S_, P_;
  DType act_, w_, plain_;
  int positions_ = -1, embed_table_ = -1, cos_ = -1, sin_ = -1, mask_ = -1;
  std::vector<int> layer_of_node_;
  std::vector<std::pair<int, size_t>> cache_inputs_;
  std::map<int, int> quantized_;
};

}  // namespace

int64_t cached_tokens(const TransformerConfig& c, int64_t context) {
  return c.sliding_window > 0 ? std::min(context, c.sliding_window - 1) : context;
}

int64_t kv_cache_bytes_per_token(const TransformerConfig& c, const LoweringOptions& o) {
  if (!c.causal) return 0;  // an encoder keeps no cache
  int64_t per_layer;
  if (c.mla() && o.attention == AttentionImpl::flash) {
    per_layer = c.kv_lora_rank + c.qk_rope_dim;  // the latent and the rope key, shared by all heads
  } else {
    int64_t kv = c.mla() ? c.heads / o.tp : (c.kv_heads >= o.tp ? c.kv_heads / o.tp : 1);
    per_layer = kv * (c.qk_head_dim() + c.v_dim());
  }
  return storage_bytes(o.kv, checked_mul(per_layer, c.layers, "KV cache size"));
}

void validate_lowering(const TransformerConfig& c, const LoweringOptions& o) {
  auto need = [&](bool ok, const std::string& m) {
    if (!ok) throw InputError(fmt::format("{}: {}", c.path, m));
  };
  need(o.batch > 0, "--batch must be positive");
  need(o.phase == Phase::decode || o.seq > 0, "--seq must be positive");
  need(o.context >= 0, "--context must not be negative");
  need(o.tp >= 1, "--tp must be at least 1");
  need(c.causal || o.phase == Phase::prefill, fmt::format("{} is an encoder: only --phase prefill applies", c.model_type));
  need(c.heads % o.tp == 0, fmt::format("--tp {} does not divide num_attention_heads {}", o.tp, c.heads));
  need(c.kv_heads % o.tp == 0 || o.tp % c.kv_heads == 0,
       fmt::format("--tp {} neither divides nor is a multiple of num_key_value_heads {}", o.tp, c.kv_heads));
  need(c.intermediate % o.tp == 0, fmt::format("--tp {} does not divide intermediate_size {}", o.tp, c.intermediate));
  need(c.moe_intermediate % o.tp == 0, fmt::format("--tp {} does not divide moe_intermediate_size {}", o.tp, c.moe_intermediate));
  need(o.group_size > 0, "--group-size must be positive");
  need(is_float(o.activations) || o.activations == DType::i8, "--activations must be a float type or int8");
  need(is_float(o.kv) || o.kv == DType::i8, "--kv-dtype must be a float type or int8");
  int64_t tokens = checked_mul(o.batch, o.phase == Phase::prefill ? o.seq : o.context + 1, "batch x tokens");
  checked_mul(checked_mul(tokens, std::max(c.vocab, c.intermediate), "activation size"), c.heads, "activation size");
}

LoweredModel lower_transformer(const TransformerConfig& c, const LoweringOptions& o) {
  validate_lowering(c, o);
  return Lowering(c, o).run();
}

}  // namespace rooflens
