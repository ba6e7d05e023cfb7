// Reading a config.json: the fields every family shares, under every name transformers has used
// for them, then the family's own keys (families.cpp), then the checks that no two
// fields contradict each other and that no key went unread.
#include "analyzer/transformers/config.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/transformers/checkpoint_index.hpp"
#include "analyzer/transformers/config_reader.hpp"
#include "analyzer/transformers/families.hpp"
#include "analyzer/transformers/families_encoder_decoder.hpp"
#include "analyzer/transformers/multimodal.hpp"
#include "analyzer/transformers/quantization.hpp"

namespace rooflens {
namespace {

using nlohmann::json;

constexpr int64_t kMaxLayers = limits::kMaxConfigLayers;
constexpr int64_t kWidth = limits::kMaxConfigWidth;
constexpr int64_t kMaxPositions = 1LL << 30;

// Keys read in some family or nested object (did-you-mean candidates). Kept whole: a key list.
const std::vector<std::string>& read_somewhere() {
  static const std::vector<std::string> keys{"vocab_size",
                                             "hidden_size",
                                             "n_embd",
                                             "d_model",
                                             "num_hidden_layers",
                                             "n_layer",
                                             "n_layers",
                                             "num_attention_heads",
                                             "n_head",
                                             "n_heads",
                                             "num_key_value_heads",
                                             "num_kv_heads",
                                             "multi_query",
                                             "head_dim",
                                             "intermediate_size",
                                             "n_inner",
                                             "ffn_dim",
                                             "ffn_hidden_size",
                                             "max_position_embeddings",
                                             "n_positions",
                                             "max_seq_len",
                                             "tie_word_embeddings",
                                             "attention_bias",
                                             "mlp_bias",
                                             "hidden_act",
                                             "hidden_activation",
                                             "activation_function",
                                             "activation",
                                             "rope_parameters",
                                             "rope_scaling",
                                             "rope_theta",
                                             "partial_rotary_factor",
                                             "rotary_pct",
                                             "rotary_dim",
                                             "rotary_emb_base",
                                             "original_max_position_embeddings",
                                             "layer_types",
                                             "sliding_window",
                                             "use_sliding_window",
                                             "max_window_layers",
                                             "sliding_window_pattern",
                                             "_sliding_window_pattern",
                                             "attention_chunk_size",
                                             "no_rope_layers",
                                             "attn_logit_softcapping",
                                             "final_logit_softcapping",
                                             "clip_qkv",
                                             "num_local_experts",
                                             "num_experts",
                                             "n_routed_experts",
                                             "moe_num_experts",
                                             "num_experts_per_tok",
                                             "moe_top_k",
                                             "moe_intermediate_size",
                                             "n_shared_experts",
                                             "shared_expert_intermediate_size",
                                             "decoder_sparse_step",
                                             "mlp_only_layers",
                                             "first_k_dense_replace",
                                             "moe_layer_freq",
                                             "interleave_moe_layer_step",
                                             "moe_layers",
                                             "q_lora_rank",
                                             "kv_lora_rank",
                                             "qk_nope_head_dim",
                                             "qk_rope_head_dim",
                                             "v_head_dim",
                                             "qk_head_dim",
                                             "quantization_config",
                                             "dtype",
                                             "torch_dtype",
                                             "qkv_bias",
                                             "qk_layernorm",
                                             "use_qk_norm",
                                             "use_qkv_bias",
                                             "use_parallel_residual",
                                             "parallel_attn",
                                             "new_decoder_architecture",
                                             "num_ln_in_parallel_attn",
                                             "bias",
                                             "alibi",
                                             "use_bias",
                                             "enable_bias",
                                             "do_layer_norm_before",
                                             "word_embed_proj_dim",
                                             "embedding_multiplier",
                                             "residual_multiplier",
                                             "logits_scaling",
                                             "attention_multiplier",
                                             "logit_scale",
                                             "intermediate_size_mlp",
                                             "attn_temperature_tuning",
                                             "attention_out_bias",
                                             "block_size",
                                             "expand",
                                             "state_size",
                                             "conv_kernel",
                                             "time_step_rank",
                                             "use_conv_bias",
                                             "mamba_expand",
                                             "mamba_d_state",
                                             "mamba_d_conv",
                                             "mamba_dt_rank",
                                             "mamba_conv_bias",
                                             "mamba_proj_bias",
                                             "attn_layer_period",
                                             "attn_layer_offset",
                                             "expert_layer_period",
                                             "expert_layer_offset",
                                             "attn_config",
                                             "ffn_config",
                                             "type_vocab_size",
                                             "model_type",
                                             "n_ctx",
                                             "sliding_window_size",
                                             "apply_residual_connection_post_layernorm"};
  return keys;
}

const std::set<std::string>& rope_keys() {
  static const std::set<std::string> keys{
      "rope_theta", "rope_type", "type", "factor", "original_max_position_embeddings",
      "low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow", "truncate",
      "attention_factor", "mscale", "mscale_all_dim", "short_factor", "long_factor", "short_mscale",
      "long_mscale", "partial_rotary_factor",
      // Qwen2-VL's multimodal RoPE: the same rotation, split over sections
      "mrope_section", "mrope_interleaved"};
  return keys;
}

void report_unread(TransformerConfig& c, const ConfigReader& r,
                   const std::vector<std::string>& known) {
  std::vector<std::string> candidates = known;
  const auto& ignored = ignored_config_keys();
  candidates.insert(candidates.end(), ignored.begin(), ignored.end());
  std::vector<std::string> unread;
  for (const std::string& k : r.unread())
    if (std::find(ignored.begin(), ignored.end(), k) == ignored.end()) unread.push_back(k);
  families_detail::warn_unread(c, r, unread, candidates);
}

// One rope_parameters object: the partial-rotary factor and the context the scaling states.
void read_rope_object(TransformerConfig& c, const json& o, const std::string& where,
                      double& partial, int64_t& stated) {
  ConfigReader r(o, where);
  partial = r.number_or("partial_rotary_factor", partial);
  double factor = r.number_or("factor", 0);
  int64_t original = r.integer_or("original_max_position_embeddings", 0, kMaxPositions);
  if (factor > 0 && original > 0)
    stated = std::max(stated,
                      static_cast<int64_t>(std::llround(factor * static_cast<double>(original))));
  r.string_or("rope_type", "default");
  r.string_or("type", "default");
  r.number_or("rope_theta", 0);
  r.ignore(rope_keys());
  families_detail::warn_unread(c, r, r.unread(),
                               std::vector<std::string>(rope_keys().begin(), rope_keys().end()));
}

void read_positions(TransformerConfig& c, ConfigReader& r) {
  double partial = 1.0;
  int64_t stated = 0;
  if (r.has("rotary_pct")) partial = r.number_or("rotary_pct", 1.0);
  partial = r.number_or("partial_rotary_factor", partial);
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const json* rope = r.object(key);
    if (!rope) continue;
    std::string where = r.where() + ": " + key;
    // Gemma 3 keeps one set per layer type.
    bool per_type = !rope->empty() && std::all_of(rope->begin(), rope->end(),
                                                  [](const json& v) { return v.is_object(); });
    if (per_type) {
      for (auto it = rope->begin(); it != rope->end(); ++it)
        read_rope_object(c, it.value(), where + "." + it.key(), partial, stated);
    } else {
      read_rope_object(c, *rope, where, partial, stated);
    }
  }
  r.number_or("rope_theta", 0);
  r.number_or("rotary_emb_base", 0);
  if (auto orig = r.optional_integer("original_max_position_embeddings", kMaxPositions);
      orig && stated == 0 && c.max_positions > *orig)
    stated =
        c.max_positions;  // Phi-3 long-context: the scaled limit is max_position_embeddings itself
  c.rope_stated_limit = stated;
  if (!(partial > 0 && partial <= 1))
    r.fail("partial_rotary_factor", fmt::format("is {}; it must be in (0, 1]", partial));
  c.rotary_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);
  if (auto rd = r.optional_integer("rotary_dim", kWidth)) {
    if (*rd > c.head_dim)
      r.fail("rotary_dim", fmt::format("({}) exceeds the head dim ({})", *rd, c.head_dim));
    c.rotary_dim = *rd;
  }
}

void read_dims(TransformerConfig& c, ConfigReader& r) {
  c.vocab = r.integer("vocab_size", kWidth);
  auto need = [&](std::initializer_list<const char*> keys, int64_t limit) {
    auto k = r.first_of(keys);
    if (!k)
      throw InputError(fmt::format("{}: missing required key '{}' (model_type {})", c.path,
                                   *keys.begin(), c.model_type));
    return r.integer(*k, limit);
  };
  c.hidden = need({"hidden_size", "n_embd", "d_model"}, kWidth);
  c.layers = need({"num_hidden_layers", "n_layer", "n_layers"}, kMaxLayers);
  if (auto k = r.first_of({"num_attention_heads", "n_head", "n_heads"}))
    c.heads = r.integer(*k, kWidth);
  if (auto k = r.first_of({"num_key_value_heads", "num_kv_heads"}))
    c.kv_heads = r.integer(*k, kWidth);
  else if (r.boolean_or("multi_query", false))
    c.kv_heads = 1;
  else
    c.kv_heads = c.heads;
  if (auto k = r.first_of({"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"}))
    c.intermediate = r.integer(*k, kWidth);
  if (auto k = r.first_of({"max_position_embeddings", "n_positions", "max_seq_len", "n_ctx"}))
    c.max_positions = r.integer(*k, kMaxPositions);
  // BLOOM's and Falcon's option to take the residual after the norm: a layout rooflens does not
  // lower.
  if (r.boolean_or("apply_residual_connection_post_layernorm", false))
    r.fail("apply_residual_connection_post_layernorm", "true is not supported");
  c.tie_embeddings = r.boolean_or("tie_word_embeddings", c.tie_embeddings);
  c.dtype = r.has("dtype") ? r.string_or("dtype", "") : r.string_or("torch_dtype", "");
}

void read_attention(TransformerConfig& c, ConfigReader& r) {
  if (r.has("attention_bias")) c.qkv_bias = c.o_bias = r.boolean_or("attention_bias", false);
  c.mlp_bias = r.boolean_or("mlp_bias", c.mlp_bias);
  c.attn_softcap = r.number_or("attn_logit_softcapping", 0);
  c.final_softcap = r.number_or("final_logit_softcapping", 0);
  c.clip_qkv = r.number_or("clip_qkv", 0);
  if (auto k = r.first_of({"hidden_act", "hidden_activation", "activation_function", "activation"}))
    c.activation = r.string_or(*k, c.activation);
  // MLA: per-head q/k dims come from the latent shapes; DeepSeek's head_dim is the rope part.
  c.kv_lora_rank = r.integer_or("kv_lora_rank", 0, kWidth);
  if (c.mla()) {
    c.q_lora_rank = r.integer_or("q_lora_rank", 0, kWidth);
    c.qk_nope_dim = r.integer("qk_nope_head_dim", kWidth);
    c.qk_rope_dim = r.integer("qk_rope_head_dim", kWidth);
    c.v_head_dim = r.integer("v_head_dim", kWidth);
    if (auto qk = r.optional_integer("qk_head_dim", kWidth);
        qk && *qk != c.qk_nope_dim + c.qk_rope_dim)
      r.fail("qk_head_dim", fmt::format("({}) is not qk_nope_head_dim + qk_rope_head_dim ({})", *qk,
                                        c.qk_nope_dim + c.qk_rope_dim));
    r.has("head_dim");
    c.head_dim = c.qk_nope_dim + c.qk_rope_dim;
    c.kv_heads = c.heads;
    return;
  }
  if (c.heads == 0) return;  // no attention layers (Mamba)
  if (auto hd = r.optional_integer("head_dim", kWidth)) {
    c.head_dim = *hd;
  } else {
    if (c.hidden % c.heads != 0)
      throw InputError(
          fmt::format("{}: hidden_size ({}) is not divisible by num_attention_heads ({}) and "
                      "head_dim is not given",
                      c.path, c.hidden, c.heads));
    c.head_dim = c.hidden / c.heads;
  }
}

void read_moe(TransformerConfig& c, ConfigReader& r) {
  if (auto k =
          r.first_of({"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}))
    c.experts = r.integer(*k, kWidth);
  if (c.experts == 0) return;
  auto k = r.first_of({"num_experts_per_tok", "moe_top_k"});
  if (!k)
    throw InputError(fmt::format(
        "{}: missing required key 'num_experts_per_tok' (the experts each token uses)", c.path));
  c.experts_per_token = r.integer(*k, kWidth);
  c.moe_intermediate = r.integer_or("moe_intermediate_size", c.intermediate, kWidth);
  c.shared_experts = r.integer_or("n_shared_experts", 0, kWidth);
  c.shared_intermediate = checked_mul(c.shared_experts, c.moe_intermediate, "shared experts");
}

void read_quantization(TransformerConfig& c, ConfigReader& r) {
  const json* q = r.object("quantization_config");
  if (!q) return;
  ConfigReader qr(*q, r.where() + ": quantization_config");
  c.quantization = read_quantization_config(qr);
  report_unread(c, qr, quantization_keys());
}

bool listed(const std::vector<int64_t>& v, int64_t i) {
  return std::find(v.begin(), v.end(), i) != v.end();
}

// Each layer's mixer, window, chunk, RoPE and MLP-or-experts, from layer_types and its kin.
void build_layers(TransformerConfig& c, ConfigReader& r) {
  c.layer_specs.assign(static_cast<size_t>(c.layers), LayerSpec{});
  std::vector<std::string> types = r.strings("layer_types");
  if (!types.empty() && static_cast<int64_t>(types.size()) != c.layers)
    r.fail("layer_types",
           fmt::format("has {} entries; num_hidden_layers is {}", types.size(), c.layers));
  std::optional<int64_t> window = r.optional_integer("sliding_window", kMaxPositions);
  if (!window)
    window = r.optional_integer("sliding_window_size", kMaxPositions);  // early Gemma 2 configs
  if (window && *window == 0) window.reset();  // Qwen2-MoE writes 0 for "none"
  bool use_window = r.boolean_or("use_sliding_window", true);
  std::optional<int64_t> max_window_layers = r.optional_integer("max_window_layers", kMaxLayers);
  std::optional<int64_t> pattern = r.optional_integer("sliding_window_pattern", kMaxLayers);
  if (!pattern) pattern = r.optional_integer("_sliding_window_pattern", kMaxLayers);
  std::optional<int64_t> chunk = r.optional_integer("attention_chunk_size", kMaxPositions);
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerSpec& l = c.layer_specs[static_cast<size_t>(i)];
    std::string t;
    if (!types.empty())
      t = types[static_cast<size_t>(i)];
    else if (window && use_window && (!max_window_layers || i >= *max_window_layers) &&
             (!pattern || *pattern <= 1 || (i + 1) % *pattern != 0))
      t = "sliding_attention";
    else if (chunk)
      t = "chunked_attention";
    else
      t = "full_attention";
    if (t == "sliding_attention") {
      if (!window)
        r.fail("sliding_window", fmt::format("is not set, but layer {} is sliding_attention", i));
      l.window = *window;
    } else if (t == "chunked_attention") {
      if (!chunk)
        r.fail("attention_chunk_size",
               fmt::format("is not set, but layer {} is chunked_attention", i));
      l.chunk = *chunk;
    } else if (t == "linear_attention") {
      l.mixer = MixerKind::linear_attention;
      l.rope = false;
    } else if (t != "full_attention") {
      r.fail("layer_types",
             fmt::format("entry {} is '{}': rooflens knows full_attention, sliding_attention, "
                         "chunked_attention and linear_attention",
                         i, t));
    }
  }
  std::vector<int64_t> rope = r.integers("no_rope_layers", 1);
  if (!rope.empty() && static_cast<int64_t>(rope.size()) != c.layers)
    r.fail("no_rope_layers",
           fmt::format("has {} entries; num_hidden_layers is {}", rope.size(), c.layers));
  for (size_t i = 0; i < rope.size(); ++i)
    c.layer_specs[i].rope = rope[i] != 0;  // 1: RoPE, 0: NoPE
  if (c.positions != PositionKind::rope)
    for (LayerSpec& l : c.layer_specs) l.rope = false;

  if (c.experts == 0) return;
  std::vector<int64_t> mlp_only = r.integers("mlp_only_layers", kMaxLayers);
  std::vector<int64_t> moe_layers = r.integers("moe_layers", kMaxLayers);
  bool has_moe_list = r.has("moe_layers");
  int64_t sparse_step = r.integer_or("decoder_sparse_step", 1, kMaxLayers);
  int64_t interleave = r.integer_or("interleave_moe_layer_step", 1, kMaxLayers);
  int64_t first_dense = r.integer_or("first_k_dense_replace", 0, kMaxLayers);
  int64_t freq = r.integer_or("moe_layer_freq", 1, kMaxLayers);
  if (sparse_step == 0) r.fail("decoder_sparse_step", "must be positive");
  if (interleave == 0) r.fail("interleave_moe_layer_step", "must be positive");
  if (freq == 0) r.fail("moe_layer_freq", "must be positive");
  for (int64_t i = 0; i < c.layers; ++i) {
    bool moe = !listed(mlp_only, i) && (i + 1) % sparse_step == 0 && i >= first_dense &&
               (i - first_dense) % freq == 0;
    if (has_moe_list)
      moe = listed(moe_layers, i);
    else if (interleave > 1)
      moe = moe && (i + 1) % interleave == 0;
    c.layer_specs[static_cast<size_t>(i)].moe = moe;
  }
}

void require_positive(const std::string& path, const char* what, int64_t v) {
  if (v <= 0) throw InputError(fmt::format("{}: {} must be positive, got {}", path, what, v));
}

void validate(const TransformerConfig& c) {
  const std::string& p = c.path;
  require_positive(p, "vocab_size", c.vocab);
  require_positive(p, "hidden_size", c.hidden);
  require_positive(p, "num_hidden_layers", c.layers);
  bool attention = c.attention_layers() > 0 || c.any_layer(MixerKind::linear_attention);
  if (attention) {
    if (c.heads == 0)
      throw InputError(fmt::format("{}: missing required key 'num_attention_heads' (model_type {})",
                                   p, c.model_type));
    require_positive(p, "num_attention_heads", c.heads);
    require_positive(p, "num_key_value_heads", c.kv_heads);
    require_positive(p, "head_dim", c.head_dim);
    if (c.heads % c.kv_heads != 0)
      throw InputError(
          fmt::format("{}: num_attention_heads ({}) is not divisible by num_key_value_heads ({})",
                      p, c.heads, c.kv_heads));
  }
  if (c.mla()) {
    require_positive(p, "qk_nope_head_dim", c.qk_nope_dim);
    require_positive(p, "qk_rope_head_dim", c.qk_rope_dim);
    require_positive(p, "v_head_dim", c.v_head_dim);
  }
  bool dense_mlp = false, moe = false;
  for (const LayerSpec& l : c.layer_specs) {
    dense_mlp = dense_mlp || (l.mlp && !l.moe);
    moe = moe || l.moe;
  }
  if (dense_mlp && c.intermediate <= 0)
    throw InputError(fmt::format("{}: missing required key 'intermediate_size' (model_type {})", p,
                                 c.model_type));
  if (moe || c.experts > 0) {
    require_positive(p, "num_experts_per_tok", c.experts_per_token);
    if (c.experts_per_token > c.experts)
      throw InputError(
          fmt::format("{}: num_experts_per_tok ({}) exceeds the number of experts ({})", p,
                      c.experts_per_token, c.experts));
    require_positive(p, "moe_intermediate_size", c.moe_intermediate);
  }
  if (c.any_layer(MixerKind::mamba)) {
    require_positive(p, "state_size", c.ssm_state);
    require_positive(p, "conv_kernel", c.ssm_conv);
    require_positive(p, "time_step_rank", c.ssm_dt_rank);
    require_positive(p, "intermediate_size (the SSM's inner width)", c.ssm_inner);
  }
  if (c.any_layer(MixerKind::linear_attention)) require_positive(p, "block_size", c.linear_block);
  if (c.positions == PositionKind::learned && c.max_positions <= 0)
    throw InputError(fmt::format(
        "{}: missing required key 'max_position_embeddings' (the learned position table)", p));
  // Weight elements of the whole model must stay far inside 64 bits.
  int64_t widest = std::max({c.intermediate, c.vocab, c.hidden, c.moe_intermediate, c.ssm_inner});
  checked_mul(checked_mul(checked_mul(c.layers, c.hidden, "model size"), widest, "model size"),
              std::max<int64_t>(c.experts, 1), "model size");
}

}  // namespace

bool TransformerConfig::any_layer(MixerKind k) const {
  return std::any_of(layer_specs.begin(), layer_specs.end(),
                     [k](const LayerSpec& l) { return l.mixer == k; });
}

int64_t TransformerConfig::attention_layers() const {
  return std::count_if(layer_specs.begin(), layer_specs.end(),
                       [](const LayerSpec& l) { return l.mixer == MixerKind::attention; });
}

int64_t TransformerConfig::context_limit() const {
  return std::max(max_positions, rope_stated_limit);
}

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const Family& f : families()) t.emplace_back(f.model_type);
    return t;
  }();
  return types;
}

namespace {

// Dropout probabilities under the names families use (all in ignored_config_keys: they change no
// inference cost). A value outside [0, 1) is an input error.
void read_dropout(TransformerConfig& c, const json& j) {
  auto first = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (j.contains(k) && j.at(k).is_number()) {
        double p = j.at(k).get<double>();
        if (!(p >= 0 && p < 1))
          throw InputError(
              fmt::format("{}: '{}' = {}: a dropout probability is in [0, 1)", c.path, k, p));
        return p;
      }
    return 0.0;
  };
  c.embed_dropout = first({"embd_pdrop", "emb_pdrop", "embedding_dropout", "embed_dropout"});
  c.attn_dropout = first({"attn_pdrop", "attention_dropout", "attention_probs_dropout_prob"});
  c.resid_dropout =
      first({"resid_pdrop", "hidden_dropout", "hidden_dropout_prob", "residual_dropout"});
}

}  // namespace

namespace {

TransformerConfig config_of(const json& j, const std::string& path, const std::string& where);

}  // namespace

TransformerConfig parse_transformer_config(const std::string& text, const std::string& path,
                                           ConfigPart part) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}", path, e.byte));
  } catch (const json::exception& e) {  // e.g. a number too large for any type
    throw InputError(fmt::format("{}: malformed JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: a config must be a JSON object", path));
  if (!j.contains("model_type") || !j.at("model_type").is_string())
    throw InputError(fmt::format("{}: missing required key 'model_type'", path));
  if (is_encoder_decoder_type(j.at("model_type").get<std::string>())) {
    if (part != ConfigPart::text)
      throw InputError(fmt::format("{}: --part {}: model_type '{}' has no vision_config", path,
                                   part == ConfigPart::vision ? "vision" : "all",
                                   j.at("model_type").get<std::string>()));
    return encoder_decoder_config(j, path);
  }
  if (!is_multimodal_wrapper(j)) {
    if (part != ConfigPart::text)
      throw InputError(fmt::format("{}: --part {}: model_type '{}' has no vision_config", path,
                                   part == ConfigPart::vision ? "vision" : "all",
                                   j.at("model_type").get<std::string>()));
    return config_of(j, path, path);
  }
  if (part == ConfigPart::vision) {
    TransformerConfig c = vision_tower(j, path);
    check_wrapper_keys(c, j);
    return c;
  }
  TextPart text_part_of = text_part(j, path);
  TransformerConfig c = config_of(text_part_of.object, path, text_part_of.where);
  rename_for_wrapper(c);
  check_wrapper_keys(c, j);
  if (part == ConfigPart::all) {
    c.image = std::make_shared<const TransformerConfig>(image_encoder(j, path, c.hidden));
    c.warnings.insert(c.warnings.begin(), c.image->warnings.front());
  } else {
    c.warnings.insert(c.warnings.begin(), text_part_of.note);
  }
  return c;
}

namespace {

// One config object (the file's top level, or a wrapper's text_config), read under `where`.
TransformerConfig config_of(const json& j, const std::string& path, const std::string& where) {
  TransformerConfig c;
  c.path = path;
  c.model_type = j.at("model_type").get<std::string>();
  const Family* family = find_family(c.model_type);
  c.verified = family != nullptr;
  ConfigReader r(j, where);
  r.has("model_type");
  if (family) family->defaults(c);
  try {
    read_dims(c, r);
    read_attention(c, r);
    read_positions(c, r);
    read_moe(c, r);
    build_layers(c, r);
    read_quantization(c, r);
    if (family) family->read(c, r);
    read_dropout(c, j);
    validate(c);
  } catch (const InputError& e) {
    if (family) throw;
    std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) what = what.substr(path.size() + 2);
    throw InputError(
        fmt::format("{}: model_type '{}' is not one rooflens knows, and as a generic decoder: {}",
                    path, c.model_type, what));
  }
  if (!family)
    c.warnings.push_back(
        fmt::format("generic decoder lowering (model_type {} not verified)", c.model_type));
  report_unread(c, r, read_somewhere());
  return c;
}

}  // namespace

TransformerConfig load_transformer_config(const std::string& path, ConfigPart part) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) {
    // A Hugging Face model directory: config.json, and the safetensors index to check against.
    std::string dir = path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    std::string config = dir + "/config.json";
    struct stat cs;
    if (::stat(config.c_str(), &cs) != 0 || !S_ISREG(cs.st_mode))
      throw InputError(fmt::format(
          "{}: is a directory without a config.json (a Hugging Face model directory holds one)",
          path));
    TransformerConfig c = load_transformer_config(config, part);
    c.checkpoint = read_checkpoint_index(dir);
    return c;
  }
  if (st.st_size > limits::kMaxConfigBytes)
    throw InputError(fmt::format("{}: {} bytes is too large for a config", path, st.st_size));
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_transformer_config(ss.str(), path, part);
}

}  // namespace rooflens
