// Encoder-decoders (T5, BART/mBART, Whisper). Prefill: the encoder over the source (Whisper: its
// convolution stem over the mel frames) and the decoder's first token, whose cross-attention
// projects the encoder output to K/V once (cached for decode). Decode: one decoder token that
// attends to its C cached tokens and, without projecting anything, to the S cached encoder K/V.
#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "analyzer/transformers/lowering_builder.hpp"

namespace rooflens::lowering {

// One side's names (relative to "<layers>.<i>" where per layer) and dims, as transformers prints
// them.
struct Builder::Stack {
  bool decoder = false;
  std::string root, layers;
  int64_t depth = 0, heads = 0, head_dim = 0, inter = 0,
          tokens = 0;  // tokens: queries per sequence
  std::string self, self_norm, cross, cross_norm, mlp, mlp_norm;
  std::string q, k, v, o;  // inside an attention module
  std::string final_norm;
};

namespace {

Builder::Stack stack_of(const TransformerConfig& c, bool decoder, int64_t tokens) {
  const EncoderDecoderSpec& e = *c.encdec;
  Builder::Stack s;
  s.decoder = decoder;
  s.tokens = tokens;
  s.depth = decoder ? c.layers : e.encoder_layers;
  s.heads = decoder ? c.heads : e.encoder_heads;
  s.head_dim = decoder ? c.head_dim : e.encoder_head_dim;
  s.inter = decoder ? c.intermediate : e.encoder_intermediate;
  if (e.kind == EncoderDecoderKind::t5) {
    s.root = decoder ? "decoder" : "encoder";
    s.layers = s.root + ".block";
    s.self = "layer.0.SelfAttention", s.self_norm = "layer.0.layer_norm";
    s.cross = "layer.1.EncDecAttention", s.cross_norm = "layer.1.layer_norm";
    std::string ff = decoder ? "layer.2" : "layer.1";
    s.mlp = ff + ".DenseReluDense", s.mlp_norm = ff + ".layer_norm";
    s.q = "q", s.k = "k", s.v = "v", s.o = "o";
    s.final_norm = s.root + ".final_layer_norm";
    return s;
  }
  s.root = decoder ? "model.decoder" : "model.encoder";
  s.layers = s.root + ".layers";
  s.self = "self_attn", s.self_norm = "self_attn_layer_norm";
  s.cross = "encoder_attn", s.cross_norm = "encoder_attn_layer_norm";
  s.mlp_norm = "final_layer_norm";
  s.q = "q_proj", s.k = "k_proj", s.v = "v_proj", s.o = "out_proj";
  if (c.final_norm) s.final_norm = s.root + ".layer_norm";
  return s;
}

}  // namespace

LoweredModel Builder::run_encoder_decoder() {
  const EncoderDecoderSpec& e = *c_.encdec;
  bool t5 = e.kind == EncoderDecoderKind::t5;
  source_ = e.source_tokens(o_.seq);
  int memory = -1;
  if (o_.phase == Phase::prefill) {  // decode reads the encoder's K/V from the cross cache instead
    Stack enc = stack_of(c_, false, source_);
    int x = encoder_stem(enc);
    int bias = t5 ? relative_bias(enc, source_, source_) : -1;
    for (int64_t i = 0; i < enc.depth; ++i) x = encdec_layer(enc, i, x, -1, bias);
    memory = enc.final_norm.empty() ? x : norm(enc.final_norm, x, c_.hidden);
  }
  layer_of_node_.resize(b_.node_count(), -1);
  Stack dec = stack_of(c_, true, 1);
  int y = embed_tokens(dec, 1);
  int bias = t5 ? relative_bias(dec, 1, past(0) + 1) : -1;
  for (int64_t i = 0; i < dec.depth; ++i) {
    size_t first = b_.node_count();
    y = encdec_layer(dec, i, y, memory, bias);
    layer_of_node_.resize(first, -1);
    layer_of_node_.resize(b_.node_count(), static_cast<int>(i));
  }
  if (!dec.final_norm.empty()) y = norm(dec.final_norm, y, c_.hidden);
  std::string head = e.kind == EncoderDecoderKind::whisper ? "proj_out" : "lm_head";
  int logits;
  if (c_.tie_embeddings) {
    logits =
        b_.op("FusedMatMul", head, {y, embed_table_}, {{"transB", int_attr(1)}}, "com.microsoft");
  } else {
    logits = linear(head, y, c_.hidden, c_.vocab, false, false);
  }
  if (c_.logits_scale > 0)
    logits = scale(head + ".logits_scale", logits, c_.logits_scale);  // T5's d_model^-0.5
  if (e.kind == EncoderDecoderKind::bart)  // a registered buffer: read, not a parameter
    logits = b_.op("Add", head + ".final_logits_bias",
                   {logits, b_.weight("final_logits_bias", plain_, {1, c_.vocab}, false)});
  b_.output(logits);
  layer_of_node_.resize(b_.node_count(), -1);
  return LoweredModel{b_.finish(), std::move(layer_of_node_), std::move(cache_inputs_)};
}

// Whisper: two convolutions with GELU over the mel frames (the second halves them), then the
// sinusoidal position table, which transformers keeps as a frozen nn.Embedding. The others: tokens.
int Builder::encoder_stem(const Stack& s) {
  const EncoderDecoderSpec& e = *c_.encdec;
  if (e.kind != EncoderDecoderKind::whisper) return embed_tokens(s, source_);
  auto conv = [&](const std::string& name, int x, int64_t in, int64_t stride) {
    int w = b_.weight(name + ".weight", plain_, {c_.hidden, in, 3});
    int bias = b_.weight(name + ".bias", plain_, {c_.hidden});
    int y = b_.op("Conv", name, {x, w, bias},
                  {{"kernel_shape", ints_attr({3})},
                   {"strides", ints_attr({stride})},
                   {"pads", ints_attr({1, 1})}});
    return activation(name + ".gelu", "gelu", y, name);
  };
  int mel = b_.input("input_features", plain_, {B_, e.mel_bins, 2 * source_});
  int x = conv(s.root + ".conv2", conv(s.root + ".conv1", mel, e.mel_bins, 1), c_.hidden, 2);
  x = b_.op("Transpose", s.root + ".to_tokens", {x}, {{"perm", ints_attr({0, 2, 1})}});
  int table = b_.weight(s.root + ".embed_positions.weight", plain_, {source_, c_.hidden});
  return b_.op("Add", s.root + ".embeddings_add", {x, table});
}

// Token embeddings from the one shared table, scaled where scale_embedding says, plus the
// learned positions (BART's table has 2 rows before position 0) and BART's embedding norm.
int Builder::embed_tokens(const Stack& s, int64_t tokens) {
  EncoderDecoderKind kind = c_.encdec->kind;
  int ids = b_.input(s.decoder ? "decoder_input_ids" : "input_ids", DType::i64, {B_, tokens});
  if (embed_table_ < 0) {
    std::string table = kind == EncoderDecoderKind::t5        ? "shared"
                        : kind == EncoderDecoderKind::whisper ? "model.decoder.embed_tokens"
                                                              : "model.shared";
    embed_table_ = b_.weight(table + ".weight", plain_, {c_.vocab, c_.hidden});
  }
  int x = b_.op("Gather", s.root + ".embed_tokens", {embed_table_, ids});
  if (c_.embed_scale > 0) x = scale(s.root + ".embed_scale", x, c_.embed_scale);
  if (c_.positions == PositionKind::learned) {
    int table = b_.weight(s.root + ".embed_positions.weight", plain_,
                          {c_.max_positions + c_.position_offset, c_.hidden});
    int at_positions = b_.input(s.root + ".position_ids", DType::i64, {B_, tokens});
    x = b_.op("Add", s.root + ".embeddings_add",
              {x, b_.op("Gather", s.root + ".embed_positions", {table, at_positions})});
  }
  if (kind == EncoderDecoderKind::bart) x = norm(s.root + ".layernorm_embedding", x, c_.hidden);
  return x;
}

// T5's relative position bias: a [buckets, heads] table in the first layer's self-attention,
// looked up once per stack by each (query, key) offset's bucket and added to every layer's scores.
int Builder::relative_bias(const Stack& s, int64_t q_len, int64_t k_len) {
  std::string table = fmt::format("{}.0.{}.relative_attention_bias", s.layers, s.self);
  int w = b_.weight(table + ".weight", plain_, {c_.encdec->relative_buckets, s.heads});
  int buckets = b_.input(s.root + ".relative_position_bucket", DType::i64,
                         {q_len, k_len});  // integer maths on positions
  int g = b_.op("Gather", table, {w, buckets});
  int heads_first = b_.op("Transpose", table + ".to_heads", {g}, {{"perm", ints_attr({2, 0, 1})}});
  return reshape(table + ".batch", heads_first, {1, s.heads, q_len, k_len});
}

// One block: self-attention, the decoder's cross-attention, the MLP; post-norm (BART) or pre-norm.
int Builder::encdec_layer(const Stack& s, int64_t i, int x, int memory, int bias) {
  std::string p = fmt::format("{}.{}", s.layers, i);
  auto sublayer = [&](const char* what, const std::string& norm_name,
                      const std::function<int(int)>& f) {
    auto residual = [&](int update) {
      int sum = b_.op("Add", p + "." + what + "_residual", {x, update});
      b_.mark_last(NodeRole::residual_add);
      return sum;
    };
    if (c_.block == BlockKind::post_norm) return norm(at(p, norm_name), residual(f(x)), c_.hidden);
    return residual(f(norm(at(p, norm_name), x, c_.hidden)));
  };
  x = sublayer("attn", s.self_norm,
               [&](int h) { return encdec_attention(s, at(p, s.self), h, false, -1, bias); });
  if (s.decoder)
    x = sublayer("cross", s.cross_norm,
                 [&](int h) { return encdec_attention(s, at(p, s.cross), h, true, memory, -1); });
  return sublayer("mlp", s.mlp_norm, [&](int h) { return encdec_mlp(s, p, h); });
}

// Self-attention, or cross-attention over the encoder output `memory` (prefill: its K/V are
// projected here and cached) or over the cross cache alone (decode: no projection).
int Builder::encdec_attention(const Stack& s, const std::string& a, int h, bool cross, int memory,
                              int bias) {
  EncoderDecoderKind kind = c_.encdec->kind;
  int64_t width = s.heads * s.head_dim;
  bool biased = kind != EncoderDecoderKind::t5,
       k_biased = kind == EncoderDecoderKind::bart;  // Whisper's k_proj has none
  int q = linear(at(a, s.q), h, c_.hidden, width, biased);
  int ctx;
  if (cross && o_.phase == Phase::decode) {
    ctx = encdec_core(s, a, q, -1, -1, 0, source_, bias);
  } else {
    int from = cross ? memory : h;
    int k = linear(at(a, s.k), from, c_.hidden, width, k_biased);
    int v = linear(at(a, s.v), from, c_.hidden, width, biased);
    ctx = encdec_core(s, a, q, k, v, cross ? source_ : s.tokens, !cross && s.decoder ? past(0) : 0,
                      bias);
  }
  return linear(at(a, s.o), ctx, width, c_.hidden, biased);
}

// Attention of s.tokens queries over `cached` past K/V plus `new_kv` new ones (k < 0: all keys
// are in the cross cache). Flash: one fused node (T5's bias as its additive mask input, read
// once). Naive: scores, scale (T5 has none), bias, softmax and context materialized.
int Builder::encdec_core(const Stack& s, const std::string& a, int q, int k, int v, int64_t new_kv,
                         int64_t cached, int bias) {
  int64_t H = s.heads, d = s.head_dim, q_len = s.tokens;
  bool t5 = c_.encdec->kind == EncoderDecoderKind::t5;
  if (o_.attention == AttentionImpl::flash) {
    std::map<std::string, Attribute> attrs{{"is_causal", int_attr(s.decoder && k >= 0 ? 1 : 0)}};
    if (t5) attrs["scale"] = float_attr(1.0);
    if (k < 0) {  // one query: [B, 1, H*d] is already [B, H, 1, d] in memory
      int q4 = reshape(a + ".q_heads", q, {B_, H, q_len, d});
      int kc = cache_input(a + ".cross_key", o_.kv, {B_, H, cached, d}, std::nullopt);
      int vc = cache_input(a + ".cross_value", o_.kv, {B_, H, cached, d}, std::nullopt);
      return reshape(a + ".merge_heads", b_.op("Attention", a + ".attn", {q4, kc, vc, bias}, attrs),
                     {B_, q_len, H * d});
    }
    int pk = cached > 0 ? cache_input(a + ".past_key", o_.kv, {B_, H, cached, d}, 2) : -1;
    int pv = cached > 0 ? cache_input(a + ".past_value", o_.kv, {B_, H, cached, d}, 2) : -1;
    attrs["q_num_heads"] = int_attr(H);
    attrs["kv_num_heads"] = int_attr(H);
    return b_.op("Attention", a + ".attn", {q, k, v, bias, pk, pv}, attrs);
  }
  int q4 = reshape(a + ".q_heads", q, {B_, q_len, H, d});
  int k4, v4;
  if (k < 0) {
    k4 = cache_input(a + ".cross_key", o_.kv, {B_, cached, H, d}, std::nullopt);
    v4 = cache_input(a + ".cross_value", o_.kv, {B_, cached, H, d}, std::nullopt);
  } else {
    k4 = reshape(a + ".k_heads", k, {B_, new_kv, H, d});
    v4 = reshape(a + ".v_heads", v, {B_, new_kv, H, d});
    if (cached > 0) {
      k4 = b_.op("Concat", a + ".cache_k",
                 {cache_input(a + ".past_key", o_.kv, {B_, cached, H, d}, 1), k4},
                 {{"axis", int_attr(1)}});
      v4 = b_.op("Concat", a + ".cache_v",
                 {cache_input(a + ".past_value", o_.kv, {B_, cached, H, d}, 1), v4},
                 {{"axis", int_attr(1)}});
    }
  }
  // Decoder queries are one token: no causal mask to add.
  int scores =
      b_.op("Einsum", a + ".scores", {q4, k4}, {{"equation", string_attr("bshd,bthd->bhst")}});
  if (!t5) scores = scale(a + ".scale", scores, 1.0 / std::sqrt(static_cast<double>(d)));
  if (bias >= 0) scores = b_.op("Add", a + ".position_bias", {scores, bias});
  int probs = b_.op("Softmax", a + ".softmax", {scores}, {{"axis", int_attr(-1)}});
  int ctx =
      b_.op("Einsum", a + ".context", {probs, v4}, {{"equation", string_attr("bhst,bthd->bshd")}});
  return reshape(a + ".merge_heads", ctx, {B_, q_len, H * d});
}

// T5: DenseReluDense (wi, act, wo) or its gated form (wi_0, wi_1); BART/Whisper: fc1, act, fc2.
int Builder::encdec_mlp(const Stack& s, const std::string& p, int h) {
  if (c_.encdec->kind == EncoderDecoderKind::t5) {
    std::string m = at(p, s.mlp);
    if (c_.gated_mlp) return gated_mlp(m + ".wi_0", m + ".wi_1", m + ".wo", m, h, s.inter, false);
    int up =
        activation(m + ".act", c_.activation, linear(m + ".wi", h, c_.hidden, s.inter, false), m);
    return linear(m + ".wo", up, s.inter, c_.hidden, false);
  }
  int up = activation(p + ".activation_fn", c_.activation,
                      linear(p + ".fc1", h, c_.hidden, s.inter, true), p);
  return linear(p + ".fc2", up, s.inter, c_.hidden, true);
}

}  // namespace rooflens::lowering
