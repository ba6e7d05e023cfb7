// Reading T5/mT5/Flan-T5, BART/mBART and Whisper configs. Each family's structure follows what
// transformers builds for its model_type (T5ForConditionalGeneration, BartForConditionalGeneration,
// MBartForConditionalGeneration, WhisperForConditionalGeneration); the keys give the sizes.
#include "analyzer/transformers/families_encoder_decoder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/transformers/config_reader.hpp"
#include "analyzer/transformers/families.hpp"

namespace rooflens {
namespace {

constexpr int64_t kWidth = limits::kMaxConfigWidth;
constexpr int64_t kMaxLayers = limits::kMaxConfigLayers;
constexpr int64_t kMaxPositions = 1LL << 30;

// Keys that change nothing rooflens costs in these families: generation defaults, training-only
// switches (layer drop, SpecAugment), legacy BART flags transformers' BART no longer reads.
const std::vector<std::string>& family_ignored() {
  static const std::vector<std::string> keys{"dropout_rate",
                                             "classif_dropout",
                                             "encoder_layerdrop",
                                             "decoder_layerdrop",
                                             "output_past",
                                             "num_beams",
                                             "max_length",
                                             "min_length",
                                             "early_stopping",
                                             "no_repeat_ngram_size",
                                             "length_penalty",
                                             "forced_bos_token_id",
                                             "forced_eos_token_id",
                                             "forced_decoder_ids",
                                             "suppress_tokens",
                                             "begin_suppress_tokens",
                                             "apply_spec_augment",
                                             "mask_time_prob",
                                             "mask_time_length",
                                             "mask_time_min_masks",
                                             "mask_feature_prob",
                                             "mask_feature_length",
                                             "mask_feature_min_masks",
                                             "median_filter_width",
                                             "use_weighted_layer_sum",
                                             "classifier_proj_size",
                                             "normalize_before",
                                             "add_final_layer_norm",
                                             "add_bias_logits",
                                             "normalize_embedding",
                                             "static_position_embeddings",
                                             "extra_pos_embeddings",
                                             "gradient_checkpointing",
                                             "n_positions",
                                             "num_hidden_layers",
                                             "decoder_start_token_id"};
  return keys;
}

// The keys each family reads: the did-you-mean candidates for its unread keys.
const std::vector<std::string>& t5_keys() {
  static const std::vector<std::string> keys{"vocab_size",
                                             "d_model",
                                             "d_kv",
                                             "d_ff",
                                             "num_heads",
                                             "num_layers",
                                             "num_decoder_layers",
                                             "relative_attention_num_buckets",
                                             "relative_attention_max_distance",
                                             "feed_forward_proj",
                                             "dense_act_fn",
                                             "is_gated_act",
                                             "tie_word_embeddings",
                                             "scale_decoder_outputs",
                                             "dtype",
                                             "torch_dtype"};
  return keys;
}

const std::vector<std::string>& bart_whisper_keys() {
  static const std::vector<std::string> keys{"vocab_size",
                                             "d_model",
                                             "encoder_layers",
                                             "decoder_layers",
                                             "encoder_attention_heads",
                                             "decoder_attention_heads",
                                             "encoder_ffn_dim",
                                             "decoder_ffn_dim",
                                             "max_position_embeddings",
                                             "activation_function",
                                             "scale_embedding",
                                             "tie_word_embeddings",
                                             "num_mel_bins",
                                             "max_source_positions",
                                             "max_target_positions",
                                             "dtype",
                                             "torch_dtype"};
  return keys;
}

void positive(const std::string& path, const char* key, int64_t v) {
  if (v <= 0) throw InputError(fmt::format("{}: key '{}' must be positive, got {}", path, key, v));
}

int64_t head_dim_of(const std::string& path, int64_t hidden, int64_t heads, const char* heads_key) {
  positive(path, heads_key, heads);
  if (hidden % heads != 0)
    throw InputError(fmt::format("{}: d_model ({}) is not divisible by {} ({})", path, hidden,
                                 heads_key, heads));
  return hidden / heads;
}

// T5ForConditionalGeneration: a shared embedding, pre-norm blocks with T5LayerNorm (RMS, no
// bias), attention without biases or score scaling, a relative position bias table in the first
// layer of each stack, ReLU MLP (T5) or gated GELU (v1.1, Flan-T5, mT5).
void read_t5(TransformerConfig& c, EncoderDecoderSpec& e, ConfigReader& r) {
  e.kind = EncoderDecoderKind::t5;
  c.hidden = r.integer("d_model", kWidth);
  c.head_dim = r.integer("d_kv", kWidth);
  c.intermediate = r.integer("d_ff", kWidth);
  c.heads = c.kv_heads = r.integer("num_heads", kWidth);
  e.encoder_layers = r.integer("num_layers", kMaxLayers);
  c.layers = r.integer_or("num_decoder_layers", e.encoder_layers, kMaxLayers);
  e.encoder_heads = c.heads;
  e.encoder_head_dim = c.head_dim;
  e.encoder_intermediate = c.intermediate;
  e.relative_buckets = r.integer_or("relative_attention_num_buckets", 32, kWidth);
  e.relative_max_distance = r.integer_or("relative_attention_max_distance", 128, kMaxPositions);
  // transformers' T5Config: "[gated-]ACT"; "gated-gelu" runs gelu_new (T5 v1.1).
  std::string proj = r.string_or("feed_forward_proj", "relu");
  bool gated = proj.rfind("gated-", 0) == 0;
  std::string act = gated ? proj.substr(6) : proj;
  if (act.empty() || act.find('-') != std::string::npos)
    r.fail(
        "feed_forward_proj",
        fmt::format("is '{}'; transformers accepts ACT or gated-ACT (relu, gated-gelu, gated-silu)",
                    proj));
  if (proj == "gated-gelu") act = "gelu_new";
  if (r.has("is_gated_act") && r.boolean_or("is_gated_act", gated) != gated)
    r.fail("is_gated_act", fmt::format("contradicts feed_forward_proj '{}'", proj));
  c.activation = r.string_or("dense_act_fn", act);
  c.gated_mlp = gated;
  c.tie_embeddings =
      r.boolean_or("tie_word_embeddings", c.model_type != "mt5");  // MT5Config unties by default
  // The decoder output times d_model^-0.5 before the head: transformers 4 did it whenever the head
  // was tied, transformers 5 writes the choice as scale_decoder_outputs. A linear factor, applied
  // to the logits here (the same result; a Mul over the vocabulary instead of d_model).
  if (r.boolean_or("scale_decoder_outputs", c.tie_embeddings))
    c.logits_scale = 1.0 / std::sqrt(static_cast<double>(c.hidden));
  c.norm = NormKind::rms;
  c.block = BlockKind::pre_norm;
  c.positions = PositionKind::none;
  positive(c.path, "d_kv", c.head_dim);
  positive(c.path, "num_heads", c.heads);
  positive(c.path, "d_ff", c.intermediate);
  positive(c.path, "relative_attention_num_buckets", e.relative_buckets);
}

// BART (post-norm) and mBART (pre-norm, a final norm per stack): learned positions with 2 rows
// before position 0, a norm after the embeddings, biases everywhere, a tied head plus
// final_logits_bias (a buffer). Whisper: a convolution stem over mel frames, sinusoidal encoder
// positions kept as a frozen nn.Embedding (a parameter), pre-norm, k_proj without bias.
void read_bart_or_whisper(TransformerConfig& c, EncoderDecoderSpec& e, ConfigReader& r) {
  bool whisper = c.model_type == "whisper";
  e.kind = whisper ? EncoderDecoderKind::whisper : EncoderDecoderKind::bart;
  c.hidden = r.integer("d_model", kWidth);
  e.encoder_layers = r.integer("encoder_layers", kMaxLayers);
  c.layers = r.integer("decoder_layers", kMaxLayers);
  e.encoder_heads = r.integer("encoder_attention_heads", kWidth);
  c.heads = c.kv_heads = r.integer("decoder_attention_heads", kWidth);
  e.encoder_intermediate = r.integer("encoder_ffn_dim", kWidth);
  c.intermediate = r.integer("decoder_ffn_dim", kWidth);
  e.encoder_head_dim = head_dim_of(c.path, c.hidden, e.encoder_heads, "encoder_attention_heads");
  c.head_dim = head_dim_of(c.path, c.hidden, c.heads, "decoder_attention_heads");
  positive(c.path, "encoder_ffn_dim", e.encoder_intermediate);
  positive(c.path, "decoder_ffn_dim", c.intermediate);
  c.activation = r.string_or("activation_function", "gelu");
  if (r.boolean_or("scale_embedding", false))
    c.embed_scale = std::sqrt(static_cast<double>(c.hidden));
  c.tie_embeddings = r.boolean_or("tie_word_embeddings", true);
  c.norm = NormKind::layer;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.gated_mlp = false;
  c.positions = PositionKind::learned;
  if (whisper) {
    e.mel_bins = r.integer("num_mel_bins", kWidth);
    e.source_positions = r.integer("max_source_positions", kMaxPositions);
    c.max_positions = r.integer("max_target_positions", kMaxPositions);
    positive(c.path, "num_mel_bins", e.mel_bins);
    positive(c.path, "max_source_positions", e.source_positions);
    c.block = BlockKind::pre_norm;
  } else {
    c.max_positions = e.source_positions = r.integer("max_position_embeddings", kMaxPositions);
    c.position_offset = 2;
    c.block = c.model_type == "mbart" ? BlockKind::pre_norm : BlockKind::post_norm;
  }
  positive(c.path, whisper ? "max_target_positions" : "max_position_embeddings", c.max_positions);
  c.final_norm = c.model_type != "bart";  // mBART and Whisper close each stack with a LayerNorm
}

}  // namespace

bool is_encoder_decoder_type(const std::string& t) {
  return t == "t5" || t == "mt5" || t == "bart" || t == "mbart" || t == "whisper";
}

TransformerConfig encoder_decoder_config(const nlohmann::json& j, const std::string& path) {
  TransformerConfig c;
  c.path = path;
  c.model_type = j.at("model_type").get<std::string>();
  ConfigReader r(j, path);
  r.has("model_type");
  EncoderDecoderSpec e;
  c.vocab = r.integer("vocab_size", kWidth);
  bool t5 = c.model_type == "t5" || c.model_type == "mt5";
  if (t5)
    read_t5(c, e, r);
  else
    read_bart_or_whisper(c, e, r);
  c.dtype = r.has("dtype") ? r.string_or("dtype", "") : r.string_or("torch_dtype", "");
  if (r.has("quantization_config"))
    r.fail("quantization_config",
           fmt::format("on an encoder-decoder ({}) is not read by rooflens", c.model_type));
  positive(path, "vocab_size", c.vocab);
  positive(path, "d_model", c.hidden);
  positive(path, t5 ? "num_layers" : "encoder_layers", e.encoder_layers);
  positive(path, t5 ? "num_decoder_layers" : "decoder_layers", c.layers);
  c.causal = true;
  c.layer_specs.assign(static_cast<size_t>(c.layers),
                       LayerSpec{MixerKind::attention, 0, 0, false, false, true});
  c.encdec = e;
  // Weight elements of the whole model must stay far inside 64 bits.
  checked_mul(checked_mul(c.layers + e.encoder_layers, c.hidden, "model size"),
              std::max({c.vocab, c.intermediate, e.encoder_intermediate, c.heads * c.head_dim}),
              "model size");

  std::vector<std::string> ignored = ignored_config_keys();
  ignored.insert(ignored.end(), family_ignored().begin(), family_ignored().end());
  std::vector<std::string> unread, known = t5 ? t5_keys() : bart_whisper_keys();
  for (const std::string& k : r.unread())
    if (std::find(ignored.begin(), ignored.end(), k) == ignored.end()) unread.push_back(k);
  known.insert(known.end(), ignored.begin(), ignored.end());
  families_detail::warn_unread(c, r, unread, known);
  return c;
}

}  // namespace rooflens
