#pragma once
// A Hugging Face config.json, as transformers saves it, read into the dims the lowering needs.
// Missing keys, wrong types and absurd sizes are InputErrors naming the key.
#include <cstdint>
#include <string>
#include <vector>

namespace rooflens {

enum class ModelFamily { llama, mistral, qwen2, mixtral, gpt2, bert, deepseek_v3 };

struct TransformerConfig {
  std::string path;
  std::string model_type;
  ModelFamily family = ModelFamily::llama;
  std::string dtype;  // "bfloat16" etc. from dtype/torch_dtype, "" if absent

  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  int64_t max_positions = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool rms_norm = true;        // RMSNorm (llama family) or LayerNorm (gpt2, bert)
  bool gated_mlp = true;       // gate/up/down (SwiGLU) or up/down
  std::string activation;      // silu, gelu, gelu_new, ...
  int64_t sliding_window = 0;  // 0: none
  bool causal = true;          // false for encoders
  bool learned_positions = false;  // gpt2, bert: a position embedding table instead of rope
  int64_t type_vocab = 0;          // bert token types
  bool pooler = false;             // bert

  // Mixture of experts (mixtral, deepseek_v3).
  int64_t experts = 0, experts_per_token = 0, moe_intermediate = 0, shared_experts = 0;
  int64_t first_dense_layers = 0;  // deepseek first_k_dense_replace
  int64_t moe_layer_freq = 1;
  bool sigmoid_router = false;     // deepseek_v3 scores experts with a sigmoid

  // Multi-head latent attention (deepseek_v3).
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;

  bool mla() const { return kv_lora_rank > 0; }
  bool is_moe_layer(int64_t layer) const;
  int64_t qk_head_dim() const { return mla() ? qk_nope_dim + qk_rope_dim : head_dim; }
  int64_t v_dim() const { return mla() ? v_head_dim : head_dim; }
};

// Reads and validates a config file; throws InputError with the file and key on any problem.
TransformerConfig load_transformer_config(const std::string& path);
TransformerConfig parse_transformer_config(const std::string& json_text, const std::string& path);

// The supported model_type values, for error messages and docs.
const std::vector<std::string>& supported_model_types();

}  // namespace rooflens
