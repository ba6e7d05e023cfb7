#include "analyzer/transformers/multimodal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/transformers/config_reader.hpp"
#include "analyzer/transformers/families.hpp"

namespace rooflens {
namespace {

using nlohmann::json;

constexpr int64_t kWidth = limits::kMaxConfigWidth;

// The wrapper's own keys: token ids, the projector's settings and the parts. They change nothing
// in the language model's or the tower's cost.
const std::vector<std::string>& wrapper_keys() {
  static const std::vector<std::string> k{"text_config",
                                          "vision_config",
                                          "image_token_index",
                                          "image_token_id",
                                          "video_token_id",
                                          "vision_start_token_id",
                                          "vision_end_token_id",
                                          "vision_token_id",
                                          "boi_token_index",
                                          "eoi_token_index",
                                          "mm_tokens_per_image",
                                          "vision_feature_layer",
                                          "vision_feature_select_strategy",
                                          "projector_hidden_act",
                                          "multimodal_projector_bias",
                                          "image_seq_length",
                                          "spatial_merge_size",
                                          "ignore_index",
                                          "projection_dim",
                                          "tie_word_embeddings",
                                          "dtype",
                                          "torch_dtype"};
  return k;
}

// The language model's family when its config does not name it (transformers' defaults per
// wrapper).
std::string text_model_type(const std::string& wrapper_type, const json& text) {
  static const std::map<std::string, std::string> same_as{{"qwen2_vl_text", "qwen2"},
                                                          {"qwen2_5_vl_text", "qwen2"},
                                                          {"qwen2_vl", "qwen2"},
                                                          {"qwen2_5_vl", "qwen2"}};
  static const std::map<std::string, std::string> by_wrapper{
      {"gemma3", "gemma3_text"}, {"llava", "llama"},    {"mistral3", "mistral"},
      {"paligemma", "gemma"},    {"qwen2_vl", "qwen2"}, {"qwen2_5_vl", "qwen2"}};
  std::string t = text.contains("model_type") && text["model_type"].is_string()
                      ? text["model_type"].get<std::string>()
                      : "";
  if (t.empty()) {
    auto it = by_wrapper.find(wrapper_type);
    if (it == by_wrapper.end()) return "";
    t = it->second;
  }
  auto same = same_as.find(t);
  return same == same_as.end() ? t : same->second;
}

bool is_object_key(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_object();
}

}  // namespace

bool is_multimodal_wrapper(const json& j) {
  return is_object_key(j, "text_config") || is_object_key(j, "vision_config");
}

TextPart text_part(const json& w, const std::string& path) {
  std::string wrapper_type = w.at("model_type").get<std::string>();
  TextPart p;
  if (is_object_key(w, "text_config")) {
    p.object = w.at("text_config");
    p.where = path + ": text_config";
  } else {  // Qwen2-VL as published: the language model's keys at the top level
    p.object = w;
    for (const std::string& k : wrapper_keys())
      if (k != "tie_word_embeddings" && k != "dtype" && k != "torch_dtype") p.object.erase(k);
    p.where = path;
  }
  std::string type = text_model_type(wrapper_type, p.object);
  if (type.empty())
    throw InputError(fmt::format(
        "{}: the language model of multimodal model_type '{}' names no model_type in text_config",
        path, wrapper_type));
  p.object["model_type"] = type;
  for (const char* k : {"dtype", "torch_dtype", "tie_word_embeddings"})
    if (w.contains(k) && !p.object.contains(k)) p.object[k] = w.at(k);
  std::string vision = "";
  if (is_object_key(w, "vision_config")) {
    const json& v = w.at("vision_config");
    auto layers = [&](const char* k) {
      return v.contains(k) && v.at(k).is_number_integer() ? v.at(k).get<int64_t>() : -1;
    };
    int64_t n = std::max(layers("num_hidden_layers"), layers("depth"));
    vision = n > 0 ? fmt::format(" (vision_config, {} layers)", n) : " (vision_config)";
  }
  p.note = fmt::format(
      "multimodal {}: the language model only ({} layout); the vision tower{} and the projector "
      "are not "
      "included: --part vision analyzes the tower",
      wrapper_type, type, vision);
  return p;
}

void rename_for_wrapper(TransformerConfig& c) {
  for (std::string* name : {&c.names.embed, &c.names.layers, &c.names.final_norm,
                            &c.names.positions, &c.names.embed_norm})
    if (name->rfind("model.", 0) == 0) *name = "model.language_model." + name->substr(6);
}

void check_wrapper_keys(TransformerConfig& c, const json& w) {
  ConfigReader r(w, c.path);
  r.has("model_type");
  std::vector<std::string> known = wrapper_keys();
  r.ignore(std::set<std::string>(known.begin(), known.end()));
  const auto& ignored = ignored_config_keys();
  r.ignore(std::set<std::string>(ignored.begin(), ignored.end()));
  if (!is_object_key(w, "text_config")) {  // Qwen2-VL: the text part read the rest
    for (auto it = w.begin(); it != w.end(); ++it) r.has(it.key());
  }
  known.insert(known.end(), ignored.begin(), ignored.end());
  families_detail::warn_unread(c, r, r.unread(), known);
}

namespace {

// The tower's sizes from vision_config, each checked; the keys it does not read are warned of.
VisionSpec read_tower_sizes(ConfigReader& r, bool clip, TransformerConfig& c) {
  c.hidden = r.integer("hidden_size", kWidth);
  c.intermediate = r.integer("intermediate_size", kWidth);
  c.layers = r.integer("num_hidden_layers", limits::kMaxConfigLayers);
  c.heads = r.integer("num_attention_heads", kWidth);
  VisionSpec s;
  s.image_size = r.integer("image_size", kWidth);
  s.patch_size = r.integer("patch_size", kWidth);
  s.channels = r.integer_or("num_channels", 3, 64);
  s.class_token = clip;
  s.patch_bias = !clip;
  for (auto [key, value] : {std::pair{"hidden_size", c.hidden},
                            {"intermediate_size", c.intermediate},
                            {"num_hidden_layers", c.layers},
                            {"num_attention_heads", c.heads},
                            {"image_size", s.image_size},
                            {"patch_size", s.patch_size},
                            {"num_channels", s.channels}})
    if (value <= 0) r.fail(key, "must be positive");
  if (c.hidden % c.heads != 0)
    r.fail("num_attention_heads",
           fmt::format("({}) does not divide hidden_size ({})", c.heads, c.hidden));
  if (s.image_size % s.patch_size != 0)
    r.fail("patch_size",
           fmt::format("({}) does not divide image_size ({})", s.patch_size, s.image_size));
  // A token per patch: the grid squared must stay a sequence length (and inside 64 bits).
  int64_t grid = s.image_size / s.patch_size;
  if (grid > (1 << 15))
    r.fail("image_size", fmt::format("({}) is {} patches a side; rooflens takes at most 32768",
                                     s.image_size, grid));
  checked_mul(checked_mul(checked_mul(c.hidden, s.channels, "patch embedding"), s.patch_size,
                          "patch embedding"),
              s.patch_size, "patch embedding");
  c.activation = r.string_or("hidden_act", clip ? "quick_gelu" : "gelu_pytorch_tanh");
  // projection_dim: CLIP's projection head, which the tower a wrapper uses does not have.
  r.ignore({"projection_dim", "vision_use_head", "dtype", "torch_dtype", "num_image_tokens"});
  const auto& ignored = ignored_config_keys();
  r.ignore(std::set<std::string>(ignored.begin(), ignored.end()));
  std::vector<std::string> known{"hidden_size",         "intermediate_size", "num_hidden_layers",
                                 "num_attention_heads", "image_size",        "patch_size",
                                 "num_channels",        "hidden_act",        "projection_dim",
                                 "vision_use_head"};
  known.insert(known.end(), ignored.begin(), ignored.end());
  families_detail::warn_unread(c, r, r.unread(), known);

  return s;
}

// What every tower lowered here shares: full multi-head attention, pre-LayerNorm, biased
// projections and MLP, bidirectional attention.
void bidirectional_encoder(TransformerConfig& c) {
  c.kv_heads = c.heads;
  c.head_dim = c.hidden / c.heads;
  c.norm = NormKind::layer;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.causal = false;
}

// transformers' SiglipVisionTransformer / CLIPVisionTransformer under the wrapper: module names
// and the encoder's layout (pre-norm, LayerNorm, biased projections, learned positions).
void name_tower(TransformerConfig& c, VisionSpec s, bool clip) {
  const std::string tower = "model.vision_tower.vision_model";
  s.patch_embed = tower + ".embeddings.patch_embedding";
  s.class_embed = tower + ".embeddings.class_embedding";
  c.vision = s;
  c.names.embed = s.patch_embed;
  c.names.positions = tower + ".embeddings.position_embedding";
  c.names.embed_norm = clip ? tower + ".pre_layrnorm" : "";  // CLIP's own spelling
  c.names.layers = tower + ".encoder.layers";
  c.names.final_norm = tower + ".post_layernorm";
  c.names.o = "self_attn.out_proj";
  c.names.norm_attn = "layer_norm1";
  c.names.norm_mlp = "layer_norm2";
  families_detail::plain_mlp(c, "mlp.fc1", "mlp.fc2");
  bidirectional_encoder(c);
  c.positions = PositionKind::learned;
  c.max_positions = s.tokens();
  c.tie_embeddings = false;
  c.layer_specs.assign(static_cast<size_t>(c.layers), LayerSpec{});
  for (LayerSpec& l : c.layer_specs) l.rope = false;
}

// Qwen2-VL's tower (Qwen2VLVisionConfig): its sizes, with transformers' defaults where a
// config leaves one out; each checked, the keys it does not read warned of.
VisionSpec read_qwen2_vl_tower(ConfigReader& r, TransformerConfig& c) {
  c.hidden = r.integer("embed_dim", kWidth);
  c.layers = r.integer("depth", limits::kMaxConfigLayers);
  // num_attention_heads: transformers' attribute_map alias of num_heads.
  c.heads =
      r.integer(r.first_of({"num_heads", "num_attention_heads"}).value_or("num_heads"), kWidth);
  VisionSpec s;
  s.kind = VisionKind::qwen2_vl;
  s.out_hidden = r.integer("hidden_size", kWidth);
  s.patch_size = r.integer("patch_size", kWidth);
  s.channels = r.integer_or("in_channels", 3, 64);
  s.temporal_patch = r.integer_or("temporal_patch_size", 2, 64);
  s.merge = r.integer_or("spatial_merge_size", 2, 64);
  s.class_token = false;
  s.patch_bias = false;
  double ratio = r.number_or("mlp_ratio", 4);
  for (auto [key, value] : {std::pair{"embed_dim", c.hidden},
                            {"depth", c.layers},
                            {"num_heads", c.heads},
                            {"hidden_size", s.out_hidden},
                            {"patch_size", s.patch_size},
                            {"in_channels", s.channels},
                            {"temporal_patch_size", s.temporal_patch},
                            {"spatial_merge_size", s.merge}})
    if (value <= 0) r.fail(key, "must be positive");
  if (!(ratio > 0) || ratio * static_cast<double>(c.hidden) > static_cast<double>(kWidth))
    r.fail("mlp_ratio",
           fmt::format("({}) must be positive and keep the MLP within {} wide", ratio, kWidth));
  c.intermediate = static_cast<int64_t>(static_cast<double>(c.hidden) * ratio);  // Python's int()
  if (c.intermediate <= 0) r.fail("mlp_ratio", fmt::format("({}) leaves no MLP", ratio));
  if (c.hidden % c.heads != 0)
    r.fail("num_heads", fmt::format("({}) does not divide embed_dim ({})", c.heads, c.hidden));
  // The 2-D rotary embedding: a quarter of each head's dims per axis, rotated in pairs.
  if ((c.hidden / c.heads) % 4 != 0)
    r.fail("num_heads", fmt::format("leaves a head dim of {}: the 2-D rotary embedding needs a "
                                    "multiple of 4",
                                    c.hidden / c.heads));
  checked_mul(checked_mul(checked_mul(checked_mul(c.hidden, s.channels, "patch embedding"),
                                      s.temporal_patch, "patch embedding"),
                          s.patch_size, "patch embedding"),
              s.patch_size, "patch embedding");
  checked_mul(checked_mul(c.hidden, s.merge, "patch merger"), s.merge, "patch merger");
  c.activation = r.string_or("hidden_act", "quick_gelu");
  if (const json* rope = r.object("rope_parameters")) {
    ConfigReader rr(*rope, r.where() + ": rope_parameters");
    std::string kind = rr.string_or("rope_type", "axial");
    if (kind != "axial")
      rr.fail("rope_type", fmt::format("'{}': Qwen2-VL's tower takes axial rope only", kind));
    rr.number_or("rope_theta", 10000);  // the frequencies, not the cost
    families_detail::warn_unread(c, rr, rr.unread(), {"rope_type", "rope_theta"});
  }
  // in_chans and spatial_patch_size: keys of the published Qwen2-VL configs that transformers
  // keeps but never reads (in_channels and patch_size are what it builds from).
  r.ignore({"dtype", "torch_dtype", "in_chans", "spatial_patch_size"});
  const auto& ignored = ignored_config_keys();
  r.ignore(std::set<std::string>(ignored.begin(), ignored.end()));
  std::vector<std::string> known{"embed_dim",         "depth",           "num_heads",
                                 "hidden_size",       "patch_size",      "in_channels",
                                 "mlp_ratio",         "hidden_act",      "temporal_patch_size",
                                 "in_chans",          "rope_parameters", "spatial_merge_size",
                                 "spatial_patch_size"};
  known.insert(known.end(), ignored.begin(), ignored.end());
  families_detail::warn_unread(c, r, r.unread(), known);
  return s;
}

// transformers' Qwen2VisionTransformerPretrainedModel under the wrapper (model.visual): pre-norm
// LayerNorm blocks, a fused biased qkv with 2-D rope on q and k over the whole head dim, a plain
// biased MLP; no final norm (the merger's ln_q is its own).
void name_qwen2_vl_tower(TransformerConfig& c, VisionSpec s) {
  const std::string tower = "model.visual";
  s.patch_embed = tower + ".patch_embed.proj";
  s.merger = tower + ".merger";
  c.vision = s;
  c.names.embed = s.patch_embed;
  c.names.positions = tower + ".rotary_pos_emb";
  c.names.embed_norm = "";
  c.names.layers = tower + ".blocks";
  c.names.final_norm = "";
  c.final_norm = false;
  c.names.attn = "attn";
  c.names.qkv = "attn.qkv";
  c.names.o = "attn.proj";
  c.names.norm_attn = "norm1";
  c.names.norm_mlp = "norm2";
  families_detail::plain_mlp(c, "mlp.fc1", "mlp.fc2");
  bidirectional_encoder(c);
  c.positions = PositionKind::rope;
  c.rotary_dim = c.head_dim;
  c.max_positions = 0;  // any number of patches
  c.tie_embeddings = false;
  c.layer_specs.assign(static_cast<size_t>(c.layers), LayerSpec{});
}

}  // namespace

TransformerConfig vision_tower(const json& w, const std::string& path) {
  std::string wrapper_type = w.at("model_type").get<std::string>();
  if (!is_object_key(w, "vision_config"))
    throw InputError(
        fmt::format("{}: --part vision: model_type '{}' has no vision_config", path, wrapper_type));
  const json& v = w.at("vision_config");
  ConfigReader r(v, path + ": vision_config");
  // The published Qwen2-VL configs name no model_type in vision_config: transformers' sub-config.
  std::string type = r.string_or("model_type", wrapper_type == "qwen2_vl" ? "qwen2_vl_vision" : "");
  bool clip = type == "clip_vision_model", siglip = type == "siglip_vision_model",
       qwen2_vl = type == "qwen2_vl_vision";
  if (!clip && !siglip && !qwen2_vl)
    throw InputError(fmt::format(
        "{}: --part vision: vision_config model_type '{}' is not a tower rooflens lowers "
        "(siglip_vision_model, clip_vision_model, qwen2_vl_vision)",
        path, type.empty() ? "(none)" : type));
  if (siglip && r.boolean_or("vision_use_head", true))
    r.fail(
        "vision_use_head",
        "is true: the attention-pooling head is not lowered (Gemma 3 and PaliGemma set it false)");
  TransformerConfig c;
  c.path = path;
  c.model_type = type;
  c.dtype = v.contains("dtype") ? r.string_or("dtype", "") : r.string_or("torch_dtype", "");
  if (c.dtype.empty()) {
    for (const char* k : {"dtype", "torch_dtype"})
      if (w.contains(k) && w.at(k).is_string()) c.dtype = w.at(k).get<std::string>();
  }
  if (qwen2_vl) {
    VisionSpec s = read_qwen2_vl_tower(r, c);
    name_qwen2_vl_tower(c, s);
    c.warnings.push_back(fmt::format(
        "multimodal {}: the vision tower and its patch merger ({}; --seq = an image's {}x{} "
        "patches, a multiple of {}); the language model is not included; batch = images",
        wrapper_type, type, s.patch_size, s.patch_size, s.merge * s.merge));
    return c;
  }
  VisionSpec s = read_tower_sizes(r, clip, c);
  name_tower(c, s, clip);
  c.warnings.push_back(fmt::format(
      "multimodal {}: the vision tower only ({}, {} patches of {}x{} an image of {}x{}); the "
      "language "
      "model and the projector are not included; batch = images",
      wrapper_type, type, s.patches(), s.patch_size, s.patch_size, s.image_size, s.image_size));
  return c;
}

TransformerConfig image_encoder(const json& w, const std::string& path, int64_t text_hidden) {
  TransformerConfig c = vision_tower(w, path);
  std::string wrapper_type = w.at("model_type").get<std::string>();
  VisionSpec& v = *c.vision;
  std::string what;
  if (v.dynamic()) {
    what = fmt::format("its patch merger ({} patches of {}x{}, {} image tokens)",
                       VisionSpec::kPartAllPatches, v.patch_size, v.patch_size,
                       VisionSpec::kPartAllPatches / (v.merge * v.merge));
  } else if (wrapper_type == "gemma3") {
    v.projector = VisionSpec::Projector::gemma3;
    v.projector_tokens = w.value("mm_tokens_per_image", int64_t{256});
    int64_t side = std::llround(std::sqrt(static_cast<double>(v.projector_tokens)));
    int64_t grid = v.image_size / v.patch_size;
    if (side * side != v.projector_tokens || side <= 0 || grid % side != 0)
      throw InputError(fmt::format(
          "{}: mm_tokens_per_image {} is not a square that divides the {}x{} patch grid", path,
          v.projector_tokens, grid, grid));
    what = fmt::format("the projector (average-pooled to {} tokens, RMS-normed, projected)",
                       v.projector_tokens);
  } else if (wrapper_type == "llava") {
    v.projector = VisionSpec::Projector::llava;
    what = fmt::format(
        "the projector (the penultimate layer's {} patch tokens through "
        "Linear-GELU-Linear)",
        v.patches());
  } else {
    throw InputError(fmt::format(
        "{}: --part all: the {} projector is not lowered (Gemma 3, LLaVA and Qwen2-VL are); "
        "--part text and --part vision analyze the parts",
        path, wrapper_type));
  }
  v.out_hidden = v.dynamic() ? v.out_hidden : text_hidden;
  c.warnings.insert(c.warnings.begin(),
                    fmt::format("multimodal {}: one image a sequence through the vision tower ({}) "
                                "and {}, then the language model over --seq tokens, which include "
                                "the image's",
                                wrapper_type, c.model_type, what));
  return c;
}

}  // namespace rooflens
