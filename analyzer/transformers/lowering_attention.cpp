// Attention as each layer has it: MHA/GQA/MQA with optional fused QKV, biases, q/k norms,
// partial RoPE or none, sliding windows, chunks, soft-capping, ALiBi and sink logits; MLA
// (DeepSeek-V2/V3); and lightning linear attention (MiniMax).
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/transformers/lowering_builder.hpp"

namespace rooflens::lowering {
namespace {

// The root of the model's module names ("model", "transformer", "gpt_neox").
std::string model_root(const ModuleNames& n) {
  auto dot = n.layers.rfind('.');
  return dot == std::string::npos ? n.layers : n.layers.substr(0, dot);
}

}  // namespace

int Builder::rope(const std::string& name, int x, int64_t heads, int64_t rot_dim) {
  auto it = rope_tables_.find(rot_dim);
  if (it == rope_tables_.end()) {
    // cos/sin rows of the positions this pass uses (a buffer, not parameters; transformers
    // computes them per forward, so a 10M-token max_position_embeddings costs no table).
    int64_t rows = S_ + (o_.phase == Phase::decode ? o_.context : 0);
    std::string base = model_root(c_.names) + ".rotary_emb" +
                       (rope_tables_.empty() ? "" : fmt::format(".dim{}", rot_dim));
    it = rope_tables_
             .emplace(rot_dim,
                      std::make_pair(
                          b_.weight(base + ".cos_cached", plain_, {rows, rot_dim / 2}, false),
                          b_.weight(base + ".sin_cached", plain_, {rows, rot_dim / 2}, false)))
             .first;
  }
  return b_.op("RotaryEmbedding", name, {x, positions_, it->second.first, it->second.second},
               {{"num_heads", int_attr(heads)}, {"rotary_embedding_dim", int_attr(rot_dim)}},
               "com.microsoft");
}

// q/k norms: per head over head_dim (a weight per dim, or per head and dim), or one norm over
// all heads at once (OLMo).
int Builder::qk_norm(const std::string& name, int x, int64_t heads) {
  int64_t d = c_.head_dim, width = heads * d;
  if (c_.qk_norm_across_heads) return norm(name, x, width, c_.qk_norm_kind);
  int per_head = reshape(name + ".heads", x, {B_, S_, heads, d});
  int y = norm(name, per_head, c_.qk_norm_full_width ? width : d, c_.qk_norm_kind);
  return reshape(name + ".merge", y, {B_, S_, width});
}

int Builder::self_attention(int64_t i, const std::string& p, int h) {
  const LayerSpec& l = c_.layer_specs[static_cast<size_t>(i)];
  const ModuleNames& n = c_.names;
  int64_t d = c_.head_dim, hq = s_.heads, hkv = s_.kv_heads;
  auto clip = [&](const std::string& name, int t) {
    if (c_.clip_qkv <= 0) return t;
    return b_.op("Clip", name + ".clip",
                 {t, b_.float_constant(name + ".min", plain_, -c_.clip_qkv),
                  b_.float_constant(name + ".max", plain_, c_.clip_qkv)});
  };
  int q, k, v;
  if (!n.qkv.empty()) {
    std::string name = at(p, n.qkv);
    int qkv = clip(name, linear(name, h, c_.hidden, (hq + 2 * hkv) * d, c_.qkv_bias));
    auto parts = split(at(p, n.attn) + ".split_qkv", qkv, {hq * d, hkv * d, hkv * d}, 2);
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = clip(at(p, n.q), linear(at(p, n.q), h, c_.hidden, hq * d, c_.qkv_bias));
    k = clip(at(p, n.k), linear(at(p, n.k), h, c_.hidden, hkv * d, c_.qkv_bias));
    v = clip(at(p, n.v), linear(at(p, n.v), h, c_.hidden, hkv * d, c_.qkv_bias));
  }
  // Llama 4's L2 q/k norm runs on its RoPE layers only.
  if (c_.qk_norm && (c_.qk_norm_kind != NormKind::l2 || l.rope)) {
    q = qk_norm(at(p, n.q_norm), q, hq);
    k = qk_norm(at(p, n.k_norm), k, hkv);
  }
  std::string a = at(p, n.attn);
  if (l.rope && c_.rotary_dim > 0) {
    q = rope(a + ".q_rope", q, hq, c_.rotary_dim);
    k = rope(a + ".k_rope", k, hkv, c_.rotary_dim);
  }
  if (c_.temperature_tuning && !l.rope)
    q = scale(a + ".attn_temperature", q, 1.0);  // per-position q scale of NoPE layers
  int ctx = attention_core(i, a, q, k, v, hq, hkv, d, d);
  return linear(at(p, n.o), ctx, hq * d, c_.hidden, c_.o_bias);
}

// The attention itself on projected q [B,S,Hq*Dqk], k [B,S,Hkv*Dqk], v [B,S,Hkv*Dv]; returns
// [B,S,Hq*Dv]. Fused (flash) as one node; naive with the scores materialized.
int Builder::attention_core(int64_t i, const std::string& p, int q, int k, int v, int64_t hq,
                            int64_t hkv, int64_t dqk, int64_t dv, bool kv_shared) {
  if (o_.attention == AttentionImpl::naive) return naive_attention(i, p, q, k, v, hq, hkv, dqk, dv);
  const LayerSpec& l = c_.layer_specs[static_cast<size_t>(i)];
  int64_t P = past(i);
  int past_k = P > 0 ? cache_input(p + ".past_key", o_.kv, {B_, hkv, P, dqk}, 2) : -1;
  int past_v =
      P > 0 && !kv_shared ? cache_input(p + ".past_value", o_.kv, {B_, hkv, P, dv}, 2) : -1;
  // A decode step writes its tokens' keys and values into the cache before attending (vLLM's
  // reshape_and_cache, one launch): each token's K and V rows, [B, S, Hkv * D] each, into its
  // cache slots, read once and written once, the kernel the concat of the two along the last
  // axis runs. Its output stands for the slots; nothing reads it. The cache's own dtype is not
  // applied (an fp8 cache writes half the bytes).
  if (P > 0) {
    b_.op("Concat", p + ".kv_write", kv_shared ? std::vector<int>{k} : std::vector<int>{k, v},
          {{"axis", int_attr(-1)}});
    b_.mark_last(NodeRole::kv_write);
  }
  std::map<std::string, Attribute> attrs;
  // Engines attend over their cache: a prefill's fresh keys and values are read back from an fp8
  // one, and the attention runs in fp8 (vLLM's FlashAttention-3 quantizes the queries too). A
  // step with a past reads the cache's dtype from its inputs.
  if (P == 0 && S_ > 1 && o_.kv == DType::f8e4m3fn) attrs["kv_fp8"] = int_attr(1);
  if (c_.attn_softcap > 0) attrs["softcap"] = float_attr(c_.attn_softcap);
  if (c_.positions == PositionKind::alibi) attrs["alibi"] = int_attr(1);
  if (l.window > 0 || l.chunk > 0 || c_.sinks) {
    // total_sequence_length left out: the rule takes past + new, which the sweep can change.
    if (seqlens_ < 0)
      seqlens_ = b_.input("seqlens_k", DType::i32, {B_});  // one per sequence, shared by the layers
    std::vector<int> inputs{q, k, v, past_k, past_v, seqlens_};
    if (c_.sinks) {
      inputs.resize(12, -1);
      inputs[11] = b_.weight(p + ".sinks", plain_, {hq});
    }
    attrs["num_heads"] = int_attr(hq);
    attrs["kv_num_heads"] = int_attr(hkv);
    if (l.window > 0) attrs["local_window_size"] = int_attr(l.window);
    if (l.chunk > 0) attrs["chunk_size"] = int_attr(l.chunk);
    return b_.op("GroupQueryAttention", p + ".attn", inputs, attrs, "com.microsoft");
  }
  attrs["is_causal"] = int_attr(c_.causal ? 1 : 0);
  attrs["q_num_heads"] = int_attr(hq);
  attrs["kv_num_heads"] = int_attr(hkv);
  if (kv_shared) attrs["kv_shared"] = int_attr(1);
  return b_.op("Attention", p + ".attn", {q, k, v, -1, past_k, past_v}, attrs);
}

// What eager PyTorch runs: QK^T and PV as batched products with GQA groups broadcast, a
// separate scale, soft-cap, bias, mask add and softmax, and in decode a concatenation onto the
// cache. Windows and chunks are masks here: the products stay dense.
int Builder::naive_attention(int64_t i, const std::string& p, int q, int k, int v, int64_t hq,
                             int64_t hkv, int64_t dqk, int64_t dv, int64_t kv_tokens) {
  // kv_tokens >= 0: k and v already hold the past (MLA expands its cached latent), no concat.
  bool expanded = kv_tokens >= 0;
  int64_t g = hq / hkv, P = expanded ? kv_tokens - S_ : past(i), T = expanded ? kv_tokens : S_;
  int q5 = reshape(p + ".q_heads", q, {B_, S_, hkv, g, dqk});
  int k4 = reshape(p + ".k_heads", k, {B_, T, hkv, dqk});
  int v4 = reshape(p + ".v_heads", v, {B_, T, hkv, dv});
  if (!expanded && P > 0) {
    k4 = b_.op("Concat", p + ".cache_k",
               {cache_input(p + ".past_key", o_.kv, {B_, P, hkv, dqk}, 1), k4},
               {{"axis", int_attr(1)}});
    v4 = b_.op("Concat", p + ".cache_v",
               {cache_input(p + ".past_value", o_.kv, {B_, P, hkv, dv}, 1), v4},
               {{"axis", int_attr(1)}});
  }
  int scores =
      b_.op("Einsum", p + ".scores", {q5, k4}, {{"equation", string_attr("bsngd,btnd->bngst")}});
  int scaled = scale(p + ".scale", scores, 1.0);
  if (c_.attn_softcap > 0) {
    int t = b_.op("Tanh", p + ".softcap_tanh",
                  {scale(p + ".softcap_divide", scaled, 1.0 / c_.attn_softcap)});
    scaled = scale(p + ".softcap_scale", t, c_.attn_softcap);
  }
  if (c_.positions == PositionKind::alibi)
    scaled = b_.op("Add", p + ".alibi",
                   {scaled, b_.input(p + ".alibi_bias", plain_, {1, hkv, g, S_, P + S_})});
  if (c_.causal && S_ > 1) {
    if (mask_ < 0 || b_.tensor(mask_).shape->back() != P + S_)
      mask_ = b_.input(fmt::format("causal_mask_{}", P + S_), plain_, {S_, P + S_});
    scaled = b_.op("Add", p + ".mask", {scaled, mask_});
  }
  int probs;
  if (c_.sinks) {  // the sink logit joins each row's softmax, then drops out
    int sink = b_.op(
        "Expand", p + ".sinks_expand",
        {reshape(p + ".sinks_heads", b_.weight(p + ".sinks", plain_, {hq}), {1, hkv, g, 1, 1}),
         b_.int_constant(p + ".sinks_shape", {B_, hkv, g, S_, 1})});
    int joined = b_.op("Concat", p + ".sinks_concat", {scaled, sink}, {{"axis", int_attr(-1)}});
    int all = b_.op("Softmax", p + ".softmax", {joined}, {{"axis", int_attr(-1)}});
    probs = split(p + ".sinks_drop", all, {P + S_, 1}, 4)[0];
  } else {
    probs = b_.op("Softmax", p + ".softmax", {scaled}, {{"axis", int_attr(-1)}});
  }
  int ctx = b_.op("Einsum", p + ".context", {probs, v4},
                  {{"equation", string_attr("bngst,btnd->bsngd")}});
  return reshape(p + ".merge_heads", ctx, {B_, S_, hq * dv});
}

// Multi-head latent attention (DeepSeek-V2/V3). Prefill and eager decode decompress the latent
// into per-head K/V; fused decode absorbs the up-projections into q and the output and
// attends over the cached latent directly (one KV head of kv_lora_rank + rope dims).
int Builder::latent_attention(int64_t i, const std::string& p, int h) {
  std::string a = at(p, c_.names.attn);
  int64_t hl = s_.heads, nope = c_.qk_nope_dim, rd = c_.qk_rope_dim, vd = c_.v_head_dim,
          r = c_.kv_lora_rank;
  int q;
  if (c_.q_lora_rank > 0) {
    int qa = norm(a + ".q_a_layernorm",
                  linear(a + ".q_a_proj", h, c_.hidden, c_.q_lora_rank, false), c_.q_lora_rank);
    q = linear(a + ".q_b_proj", qa, c_.q_lora_rank, hl * (nope + rd), false);
  } else {
    q = linear(a + ".q_proj", h, c_.hidden, hl * (nope + rd), false);
  }
  q = rope(a + ".q_rope", q, hl, rd);
  int kva = linear(a + ".kv_a_proj_with_mqa", h, c_.hidden, r + rd, false);
  auto kv_parts = split(a + ".kv_a_split", kva, {r, rd}, 2);
  int c_kv = norm(a + ".kv_a_layernorm", kv_parts[0], r);
  int k_pe = rope(a + ".k_rope", kv_parts[1], 1, rd);
  int ctx;
  if (o_.phase == Phase::decode && o_.attention == AttentionImpl::flash) {
    DType wd =
        quant_ ? plain_
               : w_;  // the absorbed halves of kv_b_proj, kept unquantized when scales would apply
    int q4 = reshape(a + ".q_heads", q, {B_, S_, hl, nope + rd});
    auto qs = split(a + ".q_split", q4, {nope, rd}, 3);
    int w_uk = b_.weight(a + ".kv_b_proj.weight_uk", wd, {hl, nope, r});
    int w_uv = b_.weight(a + ".kv_b_proj.weight_uv", wd, {hl, r, vd});
    int q_lat = b_.op("Einsum", a + ".q_absorb", {qs[0], w_uk},
                      {{"equation", string_attr("bshd,hdc->bshc")}});
    int qf = b_.op("Concat", a + ".q_concat", {q_lat, qs[1]}, {{"axis", int_attr(3)}});
    int latent = b_.op("Concat", a + ".latent_concat", {c_kv, k_pe}, {{"axis", int_attr(2)}});
    int lat_ctx = attention_core(i, a, reshape(a + ".q_merge", qf, {B_, S_, hl * (r + rd)}), latent,
                                 c_kv, hl, 1, r + rd, r, true);
    int out = b_.op("Einsum", a + ".v_absorb",
                    {reshape(a + ".ctx_heads", lat_ctx, {B_, S_, hl, r}), w_uv},
                    {{"equation", string_attr("bshc,hcd->bshd")}});
    ctx = reshape(a + ".ctx_merge", out, {B_, S_, hl * vd});
  } else {
    // Prefill decompresses the new tokens' latent; eager decode (transformers 5) caches the latent
    // and decompresses every cached token again at each step.
    int64_t P = past(i), T = S_ + P;
    if (P > 0) {
      c_kv = b_.op("Concat", a + ".cache_latent",
                   {cache_input(a + ".past_latent", o_.kv, {B_, P, r}, 1), c_kv},
                   {{"axis", int_attr(1)}});
      k_pe = b_.op("Concat", a + ".cache_rope_key",
                   {cache_input(a + ".past_rope_key", o_.kv, {B_, P, rd}, 1), k_pe},
                   {{"axis", int_attr(1)}});
    }
    int kv = linear(a + ".kv_b_proj", c_kv, r, hl * (nope + vd), false);
    auto kvs = split(a + ".kv_b_split", reshape(a + ".kv_heads", kv, {B_, T, hl, nope + vd}),
                     {nope, vd}, 3);
    int pe = b_.op("Expand", a + ".k_pe_expand",
                   {reshape(a + ".k_pe_heads", k_pe, {B_, T, 1, rd}),
                    b_.int_constant(a + ".k_pe_shape", {B_, T, hl, rd})});
    int k4 = b_.op("Concat", a + ".k_concat", {kvs[0], pe}, {{"axis", int_attr(3)}});
    int kf = reshape(a + ".k_merge", k4, {B_, T, hl * (nope + rd)}),
        vf = reshape(a + ".v_merge", kvs[1], {B_, T, hl * vd});
    ctx = P > 0 ? naive_attention(i, a, q, kf, vf, hl, hl, nope + rd, vd, T)
                : attention_core(i, a, q, kf, vf, hl, hl, nope + rd, vd);
  }
  return linear(a + ".o_proj", ctx, hl * vd, c_.hidden, false);
}

// MiniMax's lightning attention: SiLU(qkv), linear attention in blocks with a decayed d x d state
// per head (the recurrent state replaces a KV cache), RMSNorm, a sigmoid output gate.
int Builder::linear_attention(int64_t, const std::string& p, int h) {
  std::string a = at(p, c_.names.attn);
  int64_t d = c_.head_dim, H = s_.heads, width = H * d;
  int qkv = activation(a + ".act_fn", c_.activation,
                       linear(a + ".qkv_proj", h, c_.hidden, 3 * width, false), a);
  auto parts = split(a + ".qkv_split", qkv, {width, width, width}, 2);
  int state = o_.phase == Phase::decode
                  ? cache_input(a + ".linear_state", act_, {B_, H, d, d}, std::nullopt)
                  : -1;
  int out =
      b_.op("LinearAttention", a + ".lightning", {parts[0], parts[1], parts[2], state},
            {{"num_heads", int_attr(H)}, {"block_size", int_attr(c_.linear_block)}}, "rooflens");
  out = norm(a + ".norm", out, width, NormKind::rms);
  int gate = b_.op("Sigmoid", a + ".output_gate_sigmoid",
                   {linear(a + ".output_gate", h, c_.hidden, width, false)});
  out = b_.op("Mul", a + ".gated", {gate, out});
  return linear(a + ".out_proj", out, width, c_.hidden, false);
}

}  // namespace rooflens::lowering
