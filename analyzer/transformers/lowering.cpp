// The model around the layers (embeddings, head), each block's layout (pre-norm, parallel,
// sandwich, post-norm, ...), and the building blocks every part uses: linear, norm, all-reduce.
#include "analyzer/transformers/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/lowering_builder.hpp"
#include "analyzer/transformers/quantization.hpp"

namespace rooflens {
namespace lowering {

bool is_wide_float(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

namespace {

// The residual stream, and the tensors quantization recipes keep unquantized (embeddings,
// norms, lm_head, biases): the activations' dtype if it is a 16/32-bit float, else the weights'
// if that is, else bf16. 8-bit activations apply to GEMM inputs only.
DType unquantized_dtype(const LoweringOptions& o) {
  if (is_wide_float(o.activations)) return o.activations;
  return is_wide_float(o.weights) ? o.weights : DType::bf16;
}

}  // namespace

Builder::Builder(const TransformerConfig& c, const LoweringOptions& o)
    : c_(c),
      o_(o),
      b_(c.path),
      B_(o.batch_per_gpu()),
      S_(o.phase == Phase::prefill ? o.seq : 1),
      act_(o.activations),
      w_(o.weights),
      plain_(unquantized_dtype(o)) {
  s_.heads = c.heads / o.tp;
  s_.kv_heads = c.kv_heads >= o.tp ? c.kv_heads / o.tp : 1;  // fewer KV heads than GPUs: replicated
  s_.inter = c.intermediate / o.tp;
  s_.moe_inter = c.moe_intermediate / o.tp;
  s_.shared_inter = c.shared_intermediate / o.tp;
  s_.dense_inter = (c.dense_intermediate > 0 ? c.dense_intermediate : c.intermediate) / o.tp;
  s_.vocab = ceil_div(c.vocab, o.tp);  // Megatron pads the vocabulary to a multiple of tp
  quant_ = o.quantization;
  if (!quant_ && (o.weights == DType::i4 || o.weights == DType::i8))
    quant_ = flag_quantization(o.weights, o.group_size);
}

std::string Builder::layer_prefix(int64_t i) const {
  return fmt::format("{}.{}", c_.names.layers, i);
}

std::string Builder::at(const std::string& prefix, const std::string& relative) const {
  return relative.empty() ? prefix : prefix + "." + relative;
}

int64_t Builder::past(int64_t layer) const {
  return o_.phase == Phase::decode ? cached_tokens(c_, layer, o_.context) : 0;
}

LoweredModel Builder::run() {
  if (c_.encdec) return run_encoder_decoder();
  int x = embeddings();
  for (int64_t i = 0; i < c_.layers; ++i) {
    size_t first = b_.node_count();
    x = layer(i, x);
    layer_of_node_.resize(first, -1);
    layer_of_node_.resize(b_.node_count(), static_cast<int>(i));
  }
  b_.output(head(x));
  layer_of_node_.resize(b_.node_count(), -1);
  Graph g = b_.finish();
  if (c_.vision && c_.vision->dynamic()) {  // what --seq stands for, for this run
    const VisionSpec& v = *c_.vision;
    int64_t side =
        std::llround(std::sqrt(static_cast<double>(S_)) * static_cast<double>(v.patch_size));
    g.notes.push_back(fmt::format(
        "--seq {}: an image of {} patches of {}x{} pixels (about {}x{}, the frame repeated for "
        "the Conv3d's {} frames), merged {}x{} into {} tokens of width {} for the language model",
        S_, S_, v.patch_size, v.patch_size, side, side, v.temporal_patch, v.merge, v.merge,
        S_ / (v.merge * v.merge), v.out_hidden));
  }
  return LoweredModel{std::move(g), std::move(layer_of_node_), std::move(cache_inputs_)};
}

// ---- model ----------------------------------------------------------------------------------

int Builder::embeddings() {
  const ModuleNames& n = c_.names;
  if (c_.vision) {
    positions_ = b_.input("position_ids", DType::i64, {B_, S_});
    return c_.vision->dynamic() ? qwen2_vl_patch_embeddings() : patch_embeddings();
  }
  int ids = b_.input("input_ids", DType::i64, {B_, S_});
  positions_ = b_.input("position_ids", DType::i64, {B_, S_});
  int64_t width = c_.embed_proj > 0 ? c_.embed_proj : c_.hidden;
  embed_table_ = b_.weight(n.embed + ".weight", plain_, {s_.vocab, width});
  int x = all_reduce(n.embed + ".all_reduce", b_.op("Gather", n.embed, {embed_table_, ids}));
  if (c_.embed_proj > 0) x = linear(n.project_in, x, c_.embed_proj, c_.hidden, false, false);
  if (c_.positions == PositionKind::learned) {
    int table = b_.weight(n.positions + ".weight", plain_,
                          {c_.max_positions + c_.position_offset, c_.hidden});
    std::string root =
        n.positions.substr(0, n.positions.rfind('.'));  // transformer.wpe -> transformer
    x = b_.op("Add", root + ".embeddings_add",
              {x, b_.op("Gather", n.positions, {table, positions_})});
  }
  if (c_.type_vocab > 0) {
    int types =
        b_.weight("embeddings.token_type_embeddings.weight", plain_, {c_.type_vocab, c_.hidden});
    int type_ids = b_.input("token_type_ids", DType::i64, {B_, S_});
    x = b_.op("Add", "embeddings.add_token_types",
              {x, b_.op("Gather", "embeddings.token_type_embeddings", {types, type_ids})});
  }
  if (c_.embed_scale > 0) x = scale(n.embed + ".scale", x, c_.embed_scale);
  if (!n.embed_norm.empty()) x = norm(n.embed_norm, x, c_.hidden);
  return x;
}

int Builder::head(int x) {
  const ModuleNames& n = c_.names;
  if (c_.vision && c_.vision->dynamic()) return patch_merger(x);
  if (c_.vision) {
    if (c_.final_norm && !n.final_norm.empty()) x = norm(n.final_norm, x, c_.hidden);
    return c_.vision->projector == VisionSpec::Projector::none ? x : projector(x);  // no vocabulary
  }
  if (c_.pooler) {
    int first_token =
        b_.op("Gather", "pooler.first_token", {x, b_.int_constant("pooler.index", {0}, true)},
              {{"axis", int_attr(1)}});
    return b_.op("Tanh", "pooler.activation",
                 {linear("pooler.dense", first_token, c_.hidden, c_.hidden, true, false)});
  }
  if (c_.final_norm && !n.final_norm.empty()) x = norm(n.final_norm, x, c_.hidden);
  int64_t width = c_.hidden;
  if (c_.embed_proj > 0) {
    x = linear(n.project_out, x, c_.hidden, c_.embed_proj, false, false);
    width = c_.embed_proj;
  }
  int logits;
  if (c_.tie_embeddings)  // the embedding table itself, read transposed: shared, counted once
    logits = b_.op("FusedMatMul", n.lm_head, {x, embed_table_}, {{"transB", int_attr(1)}},
                   "com.microsoft");
  else
    logits = linear(n.lm_head, x, width, s_.vocab, c_.lm_head_bias, false);
  if (c_.logits_scale > 0) logits = scale(n.lm_head + ".logits_scale", logits, c_.logits_scale);
  if (c_.final_softcap > 0) {  // tanh(x / cap) * cap
    int d = scale(n.lm_head + ".softcap_divide", logits, 1.0 / c_.final_softcap);
    logits = scale(n.lm_head + ".softcap_scale", b_.op("Tanh", n.lm_head + ".softcap_tanh", {d}),
                   c_.final_softcap);
  }
  return logits;
}

int Builder::mixer(int64_t i, const std::string& p, int h) {
  const LayerSpec& l = c_.layer_specs[static_cast<size_t>(i)];
  if (l.mixer == MixerKind::mamba) return mamba_mixer(i, p, h);
  int a = l.mixer == MixerKind::linear_attention ? linear_attention(i, p, h)
          : c_.mla()                             ? latent_attention(i, p, h)
                                                 : self_attention(i, p, h);
  return all_reduce(at(p, c_.names.attn) + ".all_reduce", a);
}

int Builder::ffn(int64_t i, const std::string& p, int h) {
  const LayerSpec& l = c_.layer_specs[static_cast<size_t>(i)];
  if (l.moe) return all_reduce(at(p, c_.names.moe) + ".all_reduce", experts(p, h));
  std::string mlp = at(p, c_.names.mlp.empty() ? "mlp" : c_.names.mlp);
  return all_reduce(mlp + ".all_reduce", dense_mlp(p, h, s_.dense_inter));
}

// One decoder layer in the block layout the config's family uses.
int Builder::layer(int64_t i, int x) {
  const LayerSpec& l = c_.layer_specs[static_cast<size_t>(i)];
  const ModuleNames& n = c_.names;
  std::string p = layer_prefix(i);
  auto residual = [&](const char* what, int base, int update) {
    if (c_.residual_scale > 0) update = scale(p + "." + what + "_scale", update, c_.residual_scale);
    int sum = b_.op("Add", p + "." + what + "_residual", {base, update});
    b_.mark_last(NodeRole::residual_add);
    return sum;
  };
  int h;
  switch (c_.block) {
    case BlockKind::pre_norm:
      x = residual("attn", x, mixer(i, p, norm(at(p, n.norm_attn), x, c_.hidden)));
      if (l.mlp) x = residual("mlp", x, ffn(i, p, norm(at(p, n.norm_mlp), x, c_.hidden)));
      return x;
    case BlockKind::parallel: {
      int ha = norm(at(p, n.norm_attn), x, c_.hidden);
      int hm = c_.parallel_norms == 2 ? norm(at(p, n.norm_mlp), x, c_.hidden) : ha;
      x = residual("attn", x, mixer(i, p, ha));
      return l.mlp ? residual("mlp", x, ffn(i, p, hm)) : x;
    }
    case BlockKind::sandwich:
      h = norm(at(p, n.post_attn_norm), mixer(i, p, norm(at(p, n.norm_attn), x, c_.hidden)),
               c_.hidden);
      x = residual("attn", x, h);
      if (!l.mlp) return x;
      h = norm(at(p, n.post_mlp_norm), ffn(i, p, norm(at(p, n.norm_mlp), x, c_.hidden)), c_.hidden);
      return residual("mlp", x, h);
    case BlockKind::post_sublayer:
      x = residual("attn", x, norm(at(p, n.post_attn_norm), mixer(i, p, x), c_.hidden));
      return l.mlp ? residual("mlp", x, norm(at(p, n.post_mlp_norm), ffn(i, p, x), c_.hidden)) : x;
    case BlockKind::post_norm:
      x = norm(at(p, n.norm_attn), residual("attn", x, mixer(i, p, x)), c_.hidden);
      return l.mlp ? norm(at(p, n.norm_mlp), residual("mlp", x, ffn(i, p, x)), c_.hidden) : x;
    case BlockKind::normed_residual: {
      // MiniMax: the residual is the normed state, both terms scaled (alpha, beta).
      auto mix = [&](const char* what, int base, int update) {
        int a = scale(p + "." + what + "_alpha", base, 1.0),
            bb = scale(p + "." + what + "_beta", update, 1.0);
        int sum = b_.op("Add", p + "." + what + "_residual", {a, bb});
        b_.mark_last(NodeRole::residual_add);
        return sum;
      };
      x = norm(at(p, n.norm_attn), x, c_.hidden);
      x = mix("attn", x, mixer(i, p, x));
      if (!l.mlp) return x;
      x = norm(at(p, n.norm_mlp), x, c_.hidden);
      return mix("mlp", x, ffn(i, p, x));
    }
  }
  return x;
}

// ---- building blocks --------------------------------------------------------------------------

int Builder::reshape(const std::string& name, int x, Shape to) {
  return b_.op("Reshape", name, {x, b_.int_constant(name + ".shape", std::move(to))});
}

int Builder::scale(const std::string& name, int x, double factor) {
  return b_.op("Mul", name, {x, b_.float_constant(name + ".factor", plain_, factor)});
}

std::vector<int> Builder::split(const std::string& name, int x, std::vector<int64_t> sizes,
                                int64_t axis) {
  size_t n = sizes.size();
  return b_.node("Split", name, {x, b_.int_constant(name + ".sizes", std::move(sizes))}, n,
                 {{"axis", int_attr(axis)}});
}

int Builder::cache_input(const std::string& name, DType dtype, Shape shape,
                         std::optional<size_t> length_axis) {
  int t = b_.input(name, dtype, std::move(shape));
  b_.tensor(t).is_kv_cache = true;
  if (length_axis) cache_inputs_.emplace_back(t, *length_axis);
  return t;
}

// y = x W (+ b) with W [in, out]. Quantized weights carry their scales (and zero points, group
// indices) as further inputs, read as weight bytes, not parameters. 8-bit activations (W8A8): a
// quantize kernel writes the GEMM's input in 8 bits once per tensor; the GEMM writes 16 bits.
int Builder::linear(const std::string& name, int x, int64_t in, int64_t out, bool bias,
                    bool quantizable) {
  bool quantized = quantizable && quant_ && quantizes(*quant_, name, false);
  QuantizedStorage storage;
  DType wd = quantized ? (storage = quantized_storage(*quant_, in, out)).weight
                       : (quantizable && !quant_ ? w_ : plain_);
  bool a8 = !is_wide_float(act_) && quantizable && (quantized || !quant_);
  int input = x;
  if (a8) {
    auto it = quantized_.find(x);
    if (it == quantized_.end())
      it = quantized_
               .emplace(x, b_.op("Cast", b_.tensor(x).name + ".quantize", {x},
                                 {{"to", int_attr(static_cast<int64_t>(act_))}}))
               .first;
    input = it->second;
  }
  std::vector<int> inputs{input, b_.weight(name + ".weight", wd, {in, out})};
  for (const auto& aux : storage.aux)
    inputs.push_back(b_.weight(name + aux.suffix, aux.dtype, aux.shape, false));
  std::map<std::string, Attribute> attrs;
  if (a8) attrs["output_dtype"] = int_attr(static_cast<int64_t>(plain_));
  int y = b_.op("MatMul", name, inputs, attrs);
  if (bias) {
    y = b_.op("Add", name + ".bias_add", {y, b_.weight(name + ".bias", plain_, {out})});
    b_.mark_last(NodeRole::bias_add);
  }
  return y;
}

int Builder::norm(const std::string& name, int x, int64_t dim, std::optional<NormKind> kind) {
  std::map<std::string, Attribute> axis{{"axis", int_attr(-1)}};
  switch (kind.value_or(c_.norm)) {
    case NormKind::rms:
      return b_.op("SimplifiedLayerNormalization", name,
                   {x, b_.weight(name + ".weight", plain_, {dim})}, axis);
    case NormKind::l2:  // no learned weight
      return b_.op("SimplifiedLayerNormalization", name,
                   {x, b_.float_constant(name + ".unit", plain_, 1.0)}, axis);
    case NormKind::layer:
      return b_.op(
          "LayerNormalization", name,
          {x, b_.weight(name + ".weight", plain_, {dim}), b_.weight(name + ".bias", plain_, {dim})},
          axis);
    case NormKind::layer_no_bias:
      return b_.op("LayerNormalization", name, {x, b_.weight(name + ".weight", plain_, {dim})},
                   axis);
  }
  return x;
}

int Builder::all_reduce(const std::string& name, int x) {
  if (o_.tp <= 1) return x;
  return b_.op("AllReduce", name, {x}, {{"ranks", int_attr(o_.tp)}}, "rooflens");
}

// The MLP's nonlinearity on x, as the framework computes it.
int Builder::activation(const std::string& name, const std::string& act, int x,
                        const std::string& module) {
  if (act == "silu" || act == "swish") return b_.op("Swish", name, {x});
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast" ||
      act == "gelu_python_tanh")
    return b_.op("Gelu", name, {x}, {{"approximate", string_attr("tanh")}});
  if (act == "gelu" || act == "gelu_python") return b_.op("Gelu", name, {x});
  if (act == "quick_gelu")  // CLIP: x * sigmoid(1.702 x)
    return b_.op("Mul", name,
                 {x, b_.op("Sigmoid", name + ".sigmoid", {scale(name + ".scale", x, 1.702)})});
  if (act == "relu") return b_.op("Relu", name, {x});
  if (act == "relu2") {  // Nemotron: relu(x)^2
    int r = b_.op("Relu", name, {x});
    return b_.op("Mul", name + ".square", {r, r});
  }
  if (act == "xielu") {  // Apertus: x > 0 ? a_p x^2 + b x : a_n (exp(x) - 1 - x) + b x, two learned
                         // scalars
    int positive = b_.op("Mul", name + ".positive",
                         {b_.op("Mul", name + ".square", {x, x}),
                          b_.weight(module + ".act_fn.alpha_p", plain_, {1})});
    int negative = b_.op(
        "Mul", name + ".negative",
        {b_.op("Exp", name + ".exp", {x}), b_.weight(module + ".act_fn.alpha_n", plain_, {1})});
    int chosen = b_.op(
        "Where", name,
        {b_.op("Greater", name + ".is_positive", {x, b_.float_constant(name + ".zero", plain_, 0)}),
         positive, negative});
    return b_.op("Add", name + ".linear", {chosen, scale(name + ".beta", x, 0.5)});
  }
  throw InputError(
      fmt::format("{}: activation '{}' is not one rooflens lowers (silu, gelu, gelu_new, "
                  "gelu_pytorch_tanh, quick_gelu, relu, "
                  "relu2, xielu)",
                  c_.path, act));
}

}  // namespace lowering

// ---- public -----------------------------------------------------------------------------------

namespace {

// Bytes one cached token takes in an attention layer: K and V, or MLA's latent (which both fused
// and eager decode cache: transformers 5 caches the latent and expands it at each step).
int64_t attention_token_bytes(const TransformerConfig& c, const LoweringOptions& o) {
  int64_t per_layer;
  if (c.mla()) {
    per_layer = c.kv_lora_rank + c.qk_rope_dim;  // the latent and the rope key, shared by all heads
  } else {
    int64_t kv = c.kv_heads >= o.tp ? c.kv_heads / o.tp : 1;
    per_layer = checked_mul(kv, c.qk_head_dim() + c.v_dim(), "KV cache size");
  }
  return storage_bytes(o.kv, per_layer);
}

// A recurrent layer's state, whatever the context: Mamba's conv window (activations dtype) and
// SSM state (fp32, as transformers keeps it); linear attention's d x d state per head.
int64_t state_bytes(const TransformerConfig& c, const LoweringOptions& o, const LayerSpec& l) {
  if (l.mixer == MixerKind::mamba)
    return checked_add(
        storage_bytes(o.activations, checked_mul(c.ssm_inner, c.ssm_conv, "conv state")),
        storage_bytes(DType::f32, checked_mul(c.ssm_inner, c.ssm_state, "SSM state")));
  if (l.mixer == MixerKind::linear_attention)
    return storage_bytes(
        o.activations,
        checked_mul(c.heads / o.tp, checked_mul(c.head_dim, c.head_dim), "linear attention state"));
  return 0;
}

}  // namespace

int64_t cached_tokens(const TransformerConfig& c, int64_t layer, int64_t tokens) {
  const LayerSpec& l = c.layer_specs.at(static_cast<size_t>(layer));
  if (l.mixer != MixerKind::attention || !c.causal) return 0;
  if (l.window > 0) return std::min(tokens, l.window - 1);
  if (l.chunk > 0) return std::min(tokens, l.chunk - 1);
  return tokens;
}

int64_t kv_cache_bytes(const TransformerConfig& c, const LoweringOptions& o, int64_t tokens) {
  if (!c.causal) return 0;  // an encoder keeps no cache
  int64_t token_bytes = attention_token_bytes(c, o), total = 0;
  for (int64_t i = 0; i < c.layers; ++i) {
    const LayerSpec& l = c.layer_specs[static_cast<size_t>(i)];
    int64_t b = l.mixer == MixerKind::attention
                    ? checked_mul(cached_tokens(c, i, tokens), token_bytes, "KV cache size")
                    : state_bytes(c, o, l);
    total = checked_add(total, b, "KV cache size");
  }
  if (c.encdec) {  // each decoder layer also caches the encoder's K/V for its cross-attention
    int64_t source = c.encdec->source_tokens(o.seq);
    total = checked_add(
        total,
        checked_mul(checked_mul(source, token_bytes, "KV cache size"), c.layers, "KV cache size"),
        "KV cache size");
  }
  return total;
}

int64_t kv_cache_bytes_per_token(const TransformerConfig& c, const LoweringOptions& o) {
  if (!c.causal) return 0;
  return checked_mul(attention_token_bytes(c, o), c.attention_layers(), "KV cache size");
}

int64_t longest_context(const TransformerConfig& c, const LoweringOptions& o, int64_t bytes) {
  constexpr int64_t kHuge = 1LL << 40;
  if (kv_cache_bytes(c, o, kHuge) <= bytes) return -1;
  int64_t lo = 0, hi = kHuge;  // kv(lo) <= bytes or lo = 0; kv(hi) > bytes
  if (kv_cache_bytes(c, o, 0) > bytes) return 0;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    (kv_cache_bytes(c, o, mid) <= bytes ? lo : hi) = mid;
  }
  return lo;
}

void validate_lowering(const TransformerConfig& c, const LoweringOptions& o) {
  auto need = [&](bool ok, const std::string& m) {
    if (!ok) throw InputError(fmt::format("{}: {}", c.path, m));
  };
  need(o.batch > 0, "--batch must be positive");
  if (c.vision && c.vision->dynamic() && o.phase == Phase::prefill) {  // --seq: an image's patches
    int64_t m2 = c.vision->merge * c.vision->merge, side = c.vision->patch_size;
    std::string what = o.seq > 0 ? fmt::format("--seq {}: the {} tower takes", o.seq, c.model_type)
                                 : fmt::format("the {} tower needs", c.model_type);
    need(o.seq > 0 && o.seq % m2 == 0,
         fmt::format("{} --seq as an image's {}x{} patches, a positive multiple of {} (its merger "
                     "joins {}x{} blocks; --seq 1024 = a {}x{} image)",
                     what, side, side, m2, c.vision->merge, c.vision->merge, 32 * side, 32 * side));
    need(o.tp == 1, fmt::format("--tp over the {} tower is not modelled", c.model_type));
  }
  need(o.phase == Phase::decode || o.seq > 0, "--seq must be positive");
  need(o.context >= 0, "--context must not be negative");
  need(o.tp >= 1, "--tp must be at least 1");
  need(!c.image || (o.tp == 1 && o.ep == 1), "--part all with --tp or --ep is not modelled");
  need(!c.encdec || o.tp == 1,
       fmt::format("--tp over an encoder-decoder ({}) is not modelled", c.model_type));
  need(!c.encdec || o.phase == Phase::decode || o.seq > 0, "--seq must be positive");
  need(c.causal || o.phase == Phase::prefill,
       fmt::format("{} is an encoder: only --phase prefill applies", c.model_type));
  need(!c.vision || c.vision->dynamic() || o.seq == c.vision->tokens(),
       fmt::format("the vision tower takes {} tokens an image (its patches), not --seq {}",
                   c.vision ? c.vision->tokens() : 0, o.seq));
  need(o.ep >= 1, "--ep must be at least 1");
  if (o.ep > 1) {
    need(c.experts > 0,
         fmt::format("--ep {} needs a mixture-of-experts model; {} has no experts", o.ep, c.path));
    need(c.experts % o.ep == 0,
         fmt::format("--ep {} does not divide the model's {} experts", o.ep, c.experts));
    need(o.tp == 1,
         "--ep with --tp is not modelled: --ep spreads the experts over data-parallel "
         "attention GPUs (serve --ep prices experts within the --tp group)");
    need(!c.encdec, "--ep over an encoder-decoder is not modelled");
    need(o.batch % o.ep == 0,
         fmt::format("--ep {} does not divide --batch {} (the attention is data-parallel: each "
                     "GPU takes batch / ep sequences)",
                     o.ep, o.batch));
  }
  if (o.tp > 1) {
    need(!c.any_layer(MixerKind::mamba) && !c.any_layer(MixerKind::linear_attention),
         "--tp over Mamba or linear-attention layers is not modelled");
    need(c.heads % o.tp == 0,
         fmt::format("--tp {} does not divide num_attention_heads {}", o.tp, c.heads));
    need(c.kv_heads % o.tp == 0 || o.tp % c.kv_heads == 0,
         fmt::format("--tp {} neither divides nor is a multiple of num_key_value_heads {}", o.tp,
                     c.kv_heads));
    need(c.intermediate % o.tp == 0,
         fmt::format("--tp {} does not divide intermediate_size {}", o.tp, c.intermediate));
    need(c.moe_intermediate % o.tp == 0,
         fmt::format("--tp {} does not divide moe_intermediate_size {}", o.tp, c.moe_intermediate));
    need(c.shared_intermediate % o.tp == 0,
         fmt::format("--tp {} does not divide the shared experts' width {}", o.tp,
                     c.shared_intermediate));
    need(c.dense_intermediate % o.tp == 0,
         fmt::format("--tp {} does not divide the dense layers' width {}", o.tp,
                     c.dense_intermediate));
  }
  need(o.group_size > 0, "--group-size must be positive");
  need(is_float(o.activations) || o.activations == DType::i8,
       "--activations must be a float type or int8");
  need(is_float(o.kv) || o.kv == DType::i8, "--kv-dtype must be a float type or int8");
  int64_t rows =
      checked_mul(o.batch, o.phase == Phase::prefill ? o.seq : o.context + 1, "batch x tokens");
  checked_mul(checked_mul(rows, std::max({c.vocab, c.intermediate, c.hidden}), "activation size"),
              std::max<int64_t>(c.heads, 1), "activation size");
}

namespace {

// `image`'s graph then `text`'s, one graph: the image tensors whose names the text graph also
// uses ("position_ids") renamed "image.<name>"; the image's nodes belong to no decoder layer.
LoweredModel prepend(LoweredModel image, LoweredModel text) {
  Graph g;
  Graph &a = image.graph, &b = text.graph;
  g.source = b.source;
  g.producer = b.producer;
  g.matmul_b = b.matmul_b;
  g.ir_version = b.ir_version;
  g.opsets = b.opsets;
  g.notes = b.notes;  // the image's ("--seq N: an image of ...") would misread --seq
  auto append = [&](Graph& from, bool rename) {
    int tensors = static_cast<int>(g.tensors.size()), nodes = static_cast<int>(g.nodes.size());
    for (Tensor t : from.tensors) {
      if (rename && b.find(t.name) >= 0) t.name = "image." + t.name;
      if (t.producer >= 0) t.producer += nodes;
      for (int& c : t.consumers) c += nodes;
      g.add_tensor(std::move(t));
    }
    for (Node n : from.nodes) {
      for (int& t : n.inputs)
        if (t >= 0) t += tensors;
      for (int& t : n.outputs)
        if (t >= 0) t += tensors;
      g.nodes.push_back(std::move(n));
    }
    for (int t : from.inputs) g.inputs.push_back(t + tensors);
    for (int t : from.outputs) g.outputs.push_back(t + tensors);
    return tensors;
  };
  append(a, true);
  int offset = append(b, false);
  LoweredModel m;
  m.graph = std::move(g);
  m.layer_of_node.assign(image.layer_of_node.size(), -1);
  m.layer_of_node.insert(m.layer_of_node.end(), text.layer_of_node.begin(),
                         text.layer_of_node.end());
  for (auto [t, axis] : text.cache_inputs) m.cache_inputs.emplace_back(t + offset, axis);
  return m;
}

}  // namespace

LoweredModel lower_transformer(const TransformerConfig& c, const LoweringOptions& o) {
  validate_lowering(c, o);
  if (!c.image || o.phase != Phase::prefill) return lowering::Builder(c, o).run();
  // --part all: the image (one a sequence) through the tower and projector, then the prompt.
  const VisionSpec& v = *c.image->vision;
  LoweringOptions vo = o;
  vo.seq = v.dynamic() ? VisionSpec::kPartAllPatches : v.tokens();
  vo.quantization.reset();
  vo.weights = o.activations;
  int64_t image_tokens = v.dynamic() ? vo.seq / (v.merge * v.merge)
                         : v.projector == VisionSpec::Projector::gemma3 ? v.projector_tokens
                                                                        : v.patches();
  if (o.seq < image_tokens)
    throw InputError(fmt::format(
        "{}: --part all: --seq {} is shorter than the image's {} tokens, which the prompt includes",
        c.path, o.seq, image_tokens));
  return prepend(lower_transformer(*c.image, vo), lowering::Builder(c, o).run());
}

}  // namespace rooflens
