#include "analyzer/transformer_config.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/checked.hpp"
#include "analyzer/errors.hpp"
#include "analyzer/limits.hpp"

namespace rooflens {
namespace {

using nlohmann::json;

// Sizes beyond these describe no real model; they would only overflow later arithmetic.
constexpr int64_t kMaxLayers = limits::kMaxConfigLayers;
constexpr int64_t kMaxWidth = limits::kMaxConfigWidth;

class Reader {
 public:
  Reader(const json& j, const std::string& path, const std::string& type) : j_(j), path_(path), type_(type) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  int64_t integer(const char* key, int64_t limit = kMaxWidth) const {
    if (!has(key)) throw InputError(fmt::format("{}: missing required key '{}' (model_type {})", path_, key, type_));
    return checked(key, limit);
  }

  int64_t integer_or(const char* key, int64_t fallback, int64_t limit = kMaxWidth) const {
    return has(key) ? checked(key, limit) : fallback;
  }

  // The first of several spellings transformers has used for one quantity.
  int64_t any_of(std::initializer_list<const char*> keys, int64_t limit = kMaxWidth) const {
    for (const char* k : keys)
      if (has(k)) return checked(k, limit);
    throw InputError(fmt::format("{}: missing required key '{}' (model_type {})", path_, *keys.begin(), type_));
  }

  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) throw InputError(fmt::format("{}: key '{}' must be true or false", path_, key));
    return j_.at(key).get<bool>();
  }

  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) throw InputError(fmt::format("{}: key '{}' must be a string", path_, key));
    return j_.at(key).get<std::string>();
  }

 private:
  int64_t checked(const char* key, int64_t limit) const {
    const json& v = j_.at(key);
    auto not_integer = [&] {
      return InputError(fmt::format("{}: key '{}' must be an integer, got {}", path_, key, v.dump().substr(0, 40)));
    };
    double as_double;
    if (v.is_number_unsigned()) as_double = static_cast<double>(v.get<uint64_t>());
    else if (v.is_number_integer()) as_double = static_cast<double>(v.get<int64_t>());
    else if (v.is_number_float()) as_double = v.get<double>();
    else throw not_integer();
    // Range first: converting a double beyond int64 is undefined (found by fuzz_config).
    if (!std::isfinite(as_double) || as_double != std::floor(as_double)) throw not_integer();
    if (as_double < 0) throw InputError(fmt::format("{}: key '{}' is {}; it must not be negative", path_, key, v.dump()));
    if (as_double > static_cast<double>(limit))
      throw InputError(fmt::format("{}: key '{}' is {}, beyond the limit {}", path_, key, v.dump().substr(0, 40), limit));
    return v.is_number_float() ? static_cast<int64_t>(as_double) : v.get<int64_t>();
  }

  const json& j_;
  const std::string& path_;
  const std::string& type_;
};

ModelFamily family_of(const std::string& type, const std::string& path) {
  static const std::vector<std::pair<std::string, ModelFamily>> families{
      {"llama", ModelFamily::llama}, {"mistral", ModelFamily::mistral}, {"qwen2", ModelFamily::qwen2},
      {"mixtral", ModelFamily::mixtral}, {"gpt2", ModelFamily::gpt2}, {"bert", ModelFamily::bert},
      {"deepseek_v3", ModelFamily::deepseek_v3}};
  for (auto& [name, f] : families)
    if (name == type) return f;
  throw InputError(fmt::format("{}: model_type '{}' is not supported; supported: {}", path, type,
                               fmt::join(supported_model_types(), ", ")));
}

void require_positive(const std::string& path, const char* what, int64_t v) {
  if (v <= 0) throw InputError(fmt::format("{}: {} must be positive, got {}", path, what, v));
}

void divides(const std::string& path, const char* a_name, int64_t a, const char* b_name, int64_t b) {
  if (b <= 0 || a % b != 0)
    throw InputError(fmt::format("{}: {} ({}) is not divisible by {} ({})", path, a_name, a, b_name, b));
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types{"llama", "mistral", "qwen2", "mixtral", "gpt2", "bert", "deepseek_v3"};
  return types;
}

bool TransformerConfig::is_moe_layer(int64_t layer) const {
  if (experts == 0) return false;
  if (layer < first_dense_layers) return false;
  return moe_layer_freq <= 1 || layer % moe_layer_freq == 0;
}

TransformerConfig parse_transformer_config(const std::string& text, const std::string& path) {
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
  TransformerConfig c;
  c.path = path;
  c.model_type = j.at("model_type").get<std::string>();
  c.family = family_of(c.model_type, path);
  Reader r(j, path, c.model_type);
  c.dtype = r.has("dtype") ? r.string_or("dtype", "") : r.string_or("torch_dtype", "");

  c.vocab = r.integer("vocab_size");
  c.hidden = r.any_of({"hidden_size", "n_embd"});
  c.layers = r.any_of({"num_hidden_layers", "n_layer"}, kMaxLayers);
  c.heads = r.any_of({"num_attention_heads", "n_head"});
  require_positive(path, "vocab_size", c.vocab);
  require_positive(path, "hidden_size", c.hidden);
  require_positive(path, "num_hidden_layers", c.layers);
  require_positive(path, "num_attention_heads", c.heads);
  c.kv_heads = r.integer_or("num_key_value_heads", c.heads);
  require_positive(path, "num_key_value_heads", c.kv_heads);
  divides(path, "num_attention_heads", c.heads, "num_key_value_heads", c.kv_heads);
  if (r.has("head_dim") && c.family != ModelFamily::deepseek_v3) {
    c.head_dim = r.integer("head_dim");
  } else {
    divides(path, "hidden_size", c.hidden, "num_attention_heads", c.heads);
    c.head_dim = c.hidden / c.heads;
  }
  require_positive(path, "head_dim", c.head_dim);
  c.max_positions = r.any_of({"max_position_embeddings", "n_positions"}, 1LL << 30);
  c.tie_embeddings = r.boolean_or("tie_word_embeddings", c.family == ModelFamily::gpt2);

  switch (c.family) {
    case ModelFamily::gpt2:
      c.intermediate = r.has("n_inner") ? r.integer("n_inner") : 4 * c.hidden;
      c.rms_norm = false;
      c.gated_mlp = false;
      c.activation = r.string_or("activation_function", "gelu_new");
      c.qkv_bias = c.o_bias = c.mlp_bias = true;
      c.learned_positions = true;
      c.tie_embeddings = true;  // GPT2LMHeadModel always ties lm_head to wte
      break;
    case ModelFamily::bert:
      c.intermediate = r.integer("intermediate_size");
      c.rms_norm = false;
      c.gated_mlp = false;
      c.activation = r.string_or("hidden_act", "gelu");
      c.qkv_bias = c.o_bias = c.mlp_bias = true;
      c.learned_positions = true;
      c.causal = false;
      c.type_vocab = r.integer_or("type_vocab_size", 2);
      c.pooler = true;
      break;
    default:
      c.intermediate = r.integer("intermediate_size");
      c.activation = r.string_or("hidden_act", "silu");
      c.qkv_bias = c.family == ModelFamily::qwen2 || r.boolean_or("attention_bias", false);
      c.o_bias = c.family != ModelFamily::qwen2 && r.boolean_or("attention_bias", false);
      c.mlp_bias = r.boolean_or("mlp_bias", false);
      break;
  }
  if (c.family == ModelFamily::mistral || c.family == ModelFamily::qwen2 || c.family == ModelFamily::mixtral) {
    bool use = c.family != ModelFamily::qwen2 || r.boolean_or("use_sliding_window", false);
    if (use) c.sliding_window = r.integer_or("sliding_window", 0, 1LL << 30);
  }
  if (c.family == ModelFamily::mixtral) {
    c.experts = r.integer("num_local_experts");
    c.experts_per_token = r.integer("num_experts_per_tok");
    c.moe_intermediate = c.intermediate;
  }
  if (c.family == ModelFamily::deepseek_v3) {
    c.experts = r.integer("n_routed_experts");
    c.experts_per_token = r.integer("num_experts_per_tok");
    c.moe_intermediate = r.integer("moe_intermediate_size");
    c.shared_experts = r.integer_or("n_shared_experts", 0);
    c.first_dense_layers = r.integer_or("first_k_dense_replace", 0, kMaxLayers);
    c.moe_layer_freq = r.integer_or("moe_layer_freq", 1, kMaxLayers);
    c.sigmoid_router = true;
    c.q_lora_rank = r.integer_or("q_lora_rank", 0);
    c.kv_lora_rank = r.integer("kv_lora_rank");
    c.qk_nope_dim = r.integer("qk_nope_head_dim");
    c.qk_rope_dim = r.integer("qk_rope_head_dim");
    c.v_head_dim = r.integer("v_head_dim");
    require_positive(path, "kv_lora_rank", c.kv_lora_rank);
    require_positive(path, "qk_nope_head_dim", c.qk_nope_dim);
    require_positive(path, "qk_rope_head_dim", c.qk_rope_dim);
    require_positive(path, "v_head_dim", c.v_head_dim);
  }
  if (c.experts > 0) {
    require_positive(path, "num_experts_per_tok", c.experts_per_token);
    if (c.experts_per_token > c.experts)
      throw InputError(fmt::format("{}: num_experts_per_tok ({}) exceeds the number of experts ({})", path,
                                   c.experts_per_token, c.experts));
  }
  require_positive(path, "intermediate_size", c.intermediate);
  // Weight elements of the whole model must stay far inside 64 bits.
  checked_mul(checked_mul(c.layers, c.hidden, "model size"), std::max({c.intermediate, c.vocab, c.hidden}), "model size");
  return c;
}

TransformerConfig load_transformer_config(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a config file", path));
  if (st.st_size > limits::kMaxConfigBytes) throw InputError(fmt::format("{}: {} bytes is too large for a config", path, st.st_size));
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_transformer_config(ss.str(), path);
}

}  // namespace rooflens
