// The family table. Each entry states what transformers' modeling file for that model_type does
// that its config does not say (module names, norm, block layout) and reads the keys only that
// family has. Checked against transformers 5.17 (tests/data/configs/family_reference.json).
#include "analyzer/transformers/families.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/transformers/config_reader.hpp"

namespace rooflens {
using namespace families_detail;
namespace {

constexpr int64_t kWidth = limits::kMaxConfigWidth;

void nothing(TransformerConfig&) {}
void no_keys(TransformerConfig&, ConfigReader&) {}

// q/k/v biases always, o without (Qwen2's modeling file hard-codes them).
void qkv_bias_only(TransformerConfig& c, ConfigReader&) {
  c.qkv_bias = true;
  c.o_bias = false;
}

void per_head_qk_norm(TransformerConfig& c) {
  c.qk_norm = true;
}

void scaled_embeddings(TransformerConfig& c) {
  c.embed_scale = std::sqrt(static_cast<double>(c.hidden));
}

void sandwich(TransformerConfig& c) {
  c.block = BlockKind::sandwich;
  c.names.norm_mlp = "pre_feedforward_layernorm";
  c.names.post_attn_norm = "post_attention_layernorm";
  c.names.post_mlp_norm = "post_feedforward_layernorm";
  c.tie_embeddings = true;
}

void post_sublayer(TransformerConfig& c) {
  c.block = BlockKind::post_sublayer;
  c.names.norm_attn = c.names.norm_mlp = "";
  c.names.post_attn_norm = "post_attention_layernorm";
  c.names.post_mlp_norm = "post_feedforward_layernorm";
}

}  // namespace

void families_detail::plain_mlp(TransformerConfig& c, const char* up, const char* down) {
  c.gated_mlp = false;
  c.names.up = up;
  c.names.down = down;
  c.names.gate = "";
}

namespace families_detail {

void model_names(TransformerConfig& c, const char* embed, const char* layers,
                 const char* final_norm) {
  c.names.embed = embed;
  c.names.layers = layers;
  c.names.final_norm = final_norm;
}

void fused_attention_names(TransformerConfig& c, const char* attn, const char* qkv, const char* o) {
  c.names.attn = attn;
  c.names.qkv = std::string(attn) + "." + qkv;
  c.names.o = std::string(attn) + "." + o;
}

void feed_forward_names(TransformerConfig& c) {
  c.names.mlp = c.names.moe = "feed_forward";
  c.names.gate = "feed_forward.gate_proj";
  c.names.up = "feed_forward.up_proj";
  c.names.down = "feed_forward.down_proj";
  c.names.router = "feed_forward.router";
  c.names.experts = "feed_forward.experts";
}

}  // namespace families_detail

namespace {

// GPT-2 and GPT-BigCode: transformer.h.N with ln_1/ln_2, c_attn/c_proj, c_fc/c_proj.
void gpt2_names(TransformerConfig& c) {
  model_names(c, "transformer.wte", "transformer.h", "transformer.ln_f");
  c.names.positions = "transformer.wpe";
  fused_attention_names(c, "attn", "c_attn", "c_proj");
  c.names.norm_attn = "ln_1";
  c.names.norm_mlp = "ln_2";
  plain_mlp(c, "mlp.c_fc", "mlp.c_proj");
  c.norm = NormKind::layer;
  c.positions = PositionKind::learned;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.activation = "gelu_new";
  c.tie_embeddings = true;
}

void gpt2_keys(TransformerConfig& c, ConfigReader& r) {
  c.activation = r.string_or("activation_function", c.activation);
  if (!r.has("n_inner")) c.intermediate = 4 * c.hidden;
  if (c.model_type == "gpt2")
    c.tie_embeddings = true;  // GPT2LMHeadModel always ties lm_head to wte
}

void qwen2_moe_keys(TransformerConfig& c, ConfigReader& r) {
  c.qkv_bias = r.boolean_or("qkv_bias", true);
  c.o_bias = false;
  c.names.shared = "mlp.shared_expert";
  c.names.shared_gate = "mlp.shared_expert_gate";
  if (auto s = r.optional_integer("shared_expert_intermediate_size", kWidth); s && *s > 0) {
    c.shared_intermediate = *s;
    c.shared_experts = 1;
    c.shared_expert_gate = true;
  }
}

void phi_names(TransformerConfig& c) {
  c.names.o = "self_attn.dense";
  plain_mlp(c, "mlp.fc1", "mlp.fc2");
  c.names.final_norm = "model.final_layernorm";
  c.names.q_norm = "self_attn.q_layernorm";
  c.names.k_norm = "self_attn.k_layernorm";
  c.names.norm_mlp = "";
  c.norm = NormKind::layer;
  c.block = BlockKind::parallel;
  c.qkv_bias = c.o_bias = c.mlp_bias = c.lm_head_bias = true;
  c.activation = "gelu_new";
}

void phi_keys(TransformerConfig& c, ConfigReader& r) {
  c.qk_norm = r.boolean_or("qk_layernorm", false);
  c.qk_norm_kind = NormKind::layer;
}

void phi3_names(TransformerConfig& c) {
  c.names.qkv = "self_attn.qkv_proj";
  c.names.gate_up = "mlp.gate_up_proj";
}

void olmoe_names(TransformerConfig& c) {
  c.qk_norm = true;
  c.qk_norm_full_width = c.qk_norm_across_heads = true;
}

void olmo2_names(TransformerConfig& c) {
  post_sublayer(c);
  olmoe_names(c);
}

void granite_keys(TransformerConfig& c, ConfigReader& r) {
  c.embed_scale = r.number_or("embedding_multiplier", 1.0);
  c.residual_scale = r.number_or("residual_multiplier", 1.0);
  double logits = r.number_or("logits_scaling", 1.0);
  if (logits == 0) r.fail("logits_scaling", "must not be 0");
  c.logits_scale = 1.0 / logits;
  r.number_or("attention_multiplier", 1.0);  // the softmax scale: free inside attention
}

void falcon_names(TransformerConfig& c) {
  model_names(c, "transformer.word_embeddings", "transformer.h", "transformer.ln_f");
  fused_attention_names(c, "self_attention", "query_key_value", "dense");
  plain_mlp(c, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h");
  c.norm = NormKind::layer;
  c.activation = "gelu";
  c.tie_embeddings = true;
}

void falcon_keys(TransformerConfig& c, ConfigReader& r) {
  bool bias = r.boolean_or("bias", false);
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
  c.activation = r.string_or("activation", c.activation);
  bool new_arch = r.boolean_or("new_decoder_architecture", false);
  bool multi_query = r.boolean_or("multi_query", true);
  if (new_arch)
    c.kv_heads = r.integer_or("num_kv_heads", c.heads, kWidth);
  else
    c.kv_heads = multi_query ? 1 : c.heads;
  if (r.boolean_or("alibi", false)) c.positions = PositionKind::alibi;
  bool parallel = new_arch || r.boolean_or("parallel_attn", true);
  if (parallel) {
    c.block = BlockKind::parallel;
    int64_t norms = r.integer_or("num_ln_in_parallel_attn", new_arch ? 2 : 1, 2);
    c.parallel_norms = new_arch && norms == 2 ? 2 : 1;
    if (c.parallel_norms == 2) {
      c.names.norm_attn = "ln_attn";
      c.names.norm_mlp = "ln_mlp";
    } else {
      c.names.norm_mlp = "";
    }
  }
  if (!r.has("ffn_hidden_size")) c.intermediate = 4 * c.hidden;
}

void neox_names(TransformerConfig& c) {
  model_names(c, "gpt_neox.embed_in", "gpt_neox.layers", "gpt_neox.final_layer_norm");
  fused_attention_names(c, "attention", "query_key_value", "dense");
  plain_mlp(c, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h");
  c.norm = NormKind::layer;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.activation = "gelu";
}

void parallel_residual(TransformerConfig& c, ConfigReader& r, int norms) {
  if (!r.boolean_or("use_parallel_residual", false)) return;
  c.block = BlockKind::parallel;
  c.parallel_norms = norms;
  if (norms == 1) c.names.norm_mlp = "";
}

void neox_keys(TransformerConfig& c, ConfigReader& r) {
  parallel_residual(c, r, 2);
}

void gptj_names(TransformerConfig& c) {
  model_names(c, "transformer.wte", "transformer.h", "transformer.ln_f");
  c.names.attn = "attn";
  c.names.q = "attn.q_proj";
  c.names.k = "attn.k_proj";
  c.names.v = "attn.v_proj";
  c.names.o = "attn.out_proj";
  plain_mlp(c, "mlp.fc_in", "mlp.fc_out");
  c.names.norm_attn = "ln_1";
  c.names.norm_mlp = "";
  c.norm = NormKind::layer;
  c.block = BlockKind::parallel;
  c.mlp_bias = c.lm_head_bias = true;
  c.activation = "gelu_new";
}

void gptj_keys(TransformerConfig& c, ConfigReader& r) {
  c.activation = r.string_or("activation_function", c.activation);
  if (!r.has("n_inner")) c.intermediate = 4 * c.hidden;
}

void starcoder2_names(TransformerConfig& c) {
  plain_mlp(c, "mlp.c_fc", "mlp.c_proj");
  c.norm = NormKind::layer;
  c.activation = "gelu_pytorch_tanh";
}

void starcoder2_keys(TransformerConfig& c, ConfigReader& r) {
  bool bias = r.boolean_or("use_bias", true);
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
}

void stablelm_names(TransformerConfig& c) {
  c.norm = NormKind::layer;
  c.names.q_norm = "self_attn.q_layernorm";
  c.names.k_norm = "self_attn.k_layernorm";
}

void stablelm_keys(TransformerConfig& c, ConfigReader& r) {
  c.qkv_bias = r.boolean_or("use_qkv_bias", false);
  c.o_bias = false;
  c.qk_norm = r.boolean_or("qk_layernorm", false);
  c.qk_norm_kind = NormKind::layer_no_bias;
  c.qk_norm_full_width = true;  // one LayerNorm per head
  parallel_residual(c, r, 1);
}

void cohere_names(TransformerConfig& c) {
  c.norm = NormKind::layer_no_bias;
  c.block = BlockKind::parallel;
  c.names.norm_mlp = "";
  c.tie_embeddings = true;
}

void cohere_keys(TransformerConfig& c, ConfigReader& r) {
  c.logits_scale = r.number_or("logit_scale", 0.0625);
  c.qk_norm = r.boolean_or("use_qk_norm", false);
  c.qk_norm_kind = NormKind::layer_no_bias;
  c.qk_norm_full_width = true;
}

void glm_names(TransformerConfig& c) {
  c.names.gate_up = "mlp.gate_up_proj";
}

void glm_keys(TransformerConfig& c, ConfigReader& r) {
  c.qkv_bias = r.boolean_or("attention_bias", true);
  c.o_bias = false;
}

void bigcode_keys(TransformerConfig& c, ConfigReader& r) {
  gpt2_keys(c, r);
  c.kv_heads = r.boolean_or("multi_query", true) ? 1 : c.heads;
}

void opt_names(TransformerConfig& c) {
  model_names(c, "model.decoder.embed_tokens", "model.decoder.layers",
              "model.decoder.final_layer_norm");
  c.names.positions = "model.decoder.embed_positions";
  c.names.o = "self_attn.out_proj";
  c.names.norm_attn = "self_attn_layer_norm";
  c.names.norm_mlp = "final_layer_norm";
  c.names.mlp = "";
  plain_mlp(c, "fc1", "fc2");
  c.norm = NormKind::layer;
  c.positions = PositionKind::learned;
  c.position_offset = 2;  // OPTLearnedPositionalEmbedding keeps two rows before position 0
  c.activation = "relu";
  c.tie_embeddings = true;
}

void opt_keys(TransformerConfig& c, ConfigReader& r) {
  bool bias = r.boolean_or("enable_bias", true);
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
  c.activation = r.string_or("activation_function", c.activation);
  if (!r.boolean_or("do_layer_norm_before", true)) c.block = BlockKind::post_norm;
  // The final norm exists only with pre-norm layers (OPT-350m has none).
  c.final_norm = c.block == BlockKind::pre_norm && !r.boolean_or("_remove_final_layer_norm", false);
  if (!r.boolean_or("layer_norm_elementwise_affine", true))
    r.fail("layer_norm_elementwise_affine", "false is not supported");
  int64_t proj = r.integer_or("word_embed_proj_dim", c.hidden, kWidth);
  if (proj != c.hidden) {
    c.embed_proj = proj;
    c.names.project_in = "model.decoder.project_in";
    c.names.project_out = "model.decoder.project_out";
  }
}

void bloom_names(TransformerConfig& c) {
  model_names(c, "transformer.word_embeddings", "transformer.h", "transformer.ln_f");
  c.names.embed_norm = "transformer.word_embeddings_layernorm";
  fused_attention_names(c, "self_attention", "query_key_value", "dense");
  plain_mlp(c, "mlp.dense_h_to_4h", "mlp.dense_4h_to_h");
  c.norm = NormKind::layer;
  c.positions = PositionKind::alibi;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.activation = "gelu_pytorch_tanh";  // bloom_gelu_forward is the tanh approximation
  c.tie_embeddings = true;
}

void bloom_keys(TransformerConfig& c, ConfigReader&) {
  c.intermediate = 4 * c.hidden;
}

void llama4_names(TransformerConfig& c) {
  feed_forward_names(c);
  c.names.shared = "feed_forward.shared_expert";
  c.sigmoid_router = true;
}

void llama4_keys(TransformerConfig& c, ConfigReader& r) {
  // Experts and the shared expert use intermediate_size; dense layers intermediate_size_mlp.
  c.moe_intermediate = c.intermediate;
  c.shared_experts = 1;
  c.shared_intermediate = c.intermediate;
  c.dense_intermediate = r.integer_or("intermediate_size_mlp", c.intermediate, kWidth);
  if (r.boolean_or("use_qk_norm", false)) {
    c.qk_norm = true;  // on RoPE layers only: the lowering asks the layer
    c.qk_norm_kind = NormKind::l2;
  }
  c.temperature_tuning = r.boolean_or("attn_temperature_tuning", false);
  r.number_or("attn_scale", 0);
  r.number_or("floor_scale", 0);
}

void gpt_oss_names(TransformerConfig& c) {
  c.names.router = "mlp.router";
  c.sinks = true;
  c.router_bias = c.expert_bias = true;
  c.expert_activation = "swiglu_clamp";
}

void ernie_keys(TransformerConfig& c, ConfigReader& r) {
  bool bias = r.boolean_or("use_bias", false);
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
}

void exaone4_keys(TransformerConfig& c, ConfigReader& r) {
  // EXAONE 4 rotates q/k only on sliding layers when the model has any (its global layers are
  // NoPE).
  if (r.has("sliding_window"))
    for (LayerSpec& l : c.layer_specs)
      if (l.window == 0 && l.mixer == MixerKind::attention) l.rope = false;
}

void seed_oss_keys(TransformerConfig& c, ConfigReader& r) {
  c.qkv_bias = r.boolean_or("attention_bias", true);
  c.o_bias = r.boolean_or("attention_out_bias", false);
}

void apertus_names(TransformerConfig& c) {
  c.names.norm_attn = "attention_layernorm";
  c.names.norm_mlp = "feedforward_layernorm";
  plain_mlp(c, "mlp.up_proj", "mlp.down_proj");
  c.qk_norm = true;
  c.activation = "xielu";
}

void nemotron_names(TransformerConfig& c) {
  c.norm = NormKind::layer;  // LayerNorm1P: weight and bias
  plain_mlp(c, "mlp.up_proj", "mlp.down_proj");
  c.activation = "relu2";
}

void hunyuan_names(TransformerConfig& c) {
  c.qk_norm = true;
  c.names.q_norm = "self_attn.query_layernorm";
  c.names.k_norm = "self_attn.key_layernorm";
}

void bert_names(TransformerConfig& c) {
  model_names(c, "embeddings.word_embeddings", "encoder.layer", "");
  c.names.positions = "embeddings.position_embeddings";
  c.names.embed_norm = "embeddings.LayerNorm";
  c.names.attn = "attention.self";
  c.names.q = "attention.self.query";
  c.names.k = "attention.self.key";
  c.names.v = "attention.self.value";
  c.names.o = "attention.output.dense";
  c.names.norm_attn = "attention.output.LayerNorm";
  c.names.norm_mlp = "output.LayerNorm";
  c.names.mlp = "intermediate";
  plain_mlp(c, "intermediate.dense", "output.dense");
  c.norm = NormKind::layer;
  c.block = BlockKind::post_norm;
  c.positions = PositionKind::learned;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.activation = "gelu";
  c.causal = false;
  c.pooler = true;
  c.final_norm = false;
}

void bert_keys(TransformerConfig& c, ConfigReader& r) {
  c.type_vocab = r.integer_or("type_vocab_size", 2, kWidth);
  r.string_or("position_embedding_type", "absolute");
  c.tie_embeddings = false;  // BertModel has no head
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> table{
      {"llama", nothing, no_keys},
      {"mistral", nothing, no_keys},
      {"mixtral", nothing, no_keys},
      {"qwen2", nothing, qkv_bias_only},
      {"qwen2_moe", nothing, qwen2_moe_keys},
      {"qwen3", per_head_qk_norm, no_keys},
      {"qwen3_moe", per_head_qk_norm, no_keys},
      {"gemma", [](TransformerConfig& c) { c.tie_embeddings = true; },
       [](TransformerConfig& c, ConfigReader&) { scaled_embeddings(c); }},
      {"gemma2", sandwich, [](TransformerConfig& c, ConfigReader&) { scaled_embeddings(c); }},
      {"gemma3_text",
       [](TransformerConfig& c) {
         sandwich(c);
         c.qk_norm = true;
       },
       [](TransformerConfig& c, ConfigReader&) { scaled_embeddings(c); }},
      {"phi", phi_names, phi_keys},
      {"phi3", phi3_names, no_keys},
      {"olmo2", olmo2_names, no_keys},
      {"olmoe", olmoe_names, no_keys},
      {"granite", nothing, granite_keys},
      {"falcon", falcon_names, falcon_keys},
      {"gpt_neox", neox_names, neox_keys},
      {"gptj", gptj_names, gptj_keys},
      {"starcoder2", starcoder2_names, starcoder2_keys},
      {"stablelm", stablelm_names, stablelm_keys},
      {"cohere", cohere_names, cohere_keys},
      {"glm", glm_names, glm_keys},
      {"gpt_bigcode", gpt2_names, bigcode_keys},
      {"opt", opt_names, opt_keys},
      {"bloom", bloom_names, bloom_keys},
      {"deepseek_v2", nothing, no_keys},
      {"deepseek_v3", [](TransformerConfig& c) { c.sigmoid_router = true; }, no_keys},
      {"llama4_text", llama4_names, llama4_keys},
      {"gpt_oss", gpt_oss_names, no_keys},
      {"smollm3", [](TransformerConfig& c) { c.tie_embeddings = true; }, no_keys},
      {"ernie4_5", [](TransformerConfig& c) { c.tie_embeddings = true; }, ernie_keys},
      {"exaone4",
       [](TransformerConfig& c) {
         post_sublayer(c);
         c.qk_norm = true;
       },
       exaone4_keys},
      {"seed_oss", nothing, seed_oss_keys},
      {"apertus", apertus_names, no_keys},
      {"minimax", minimax_names, minimax_keys},
      {"mamba", mamba_names, mamba_keys},
      {"jamba", jamba_names, jamba_keys},
      {"nemotron", nemotron_names, no_keys},
      {"dbrx", dbrx_names, dbrx_keys},
      {"hunyuan_v1_dense", hunyuan_names, no_keys},
      {"gpt2", gpt2_names, gpt2_keys},
      {"bert", bert_names, bert_keys},
  };
  return table;
}

const Family* find_family(const std::string& model_type) {
  for (const Family& f : families())
    if (model_type == f.model_type) return &f;
  return nullptr;
}

// Kept whole: one list of keys, grouped by where they come from.
const std::vector<std::string>& ignored_config_keys() {
  static const std::vector<std::string> keys{
      // Every PretrainedConfig: bookkeeping, token ids, outputs, generation and training switches.
      "architectures",
      "transformers_version",
      "_name_or_path",
      "auto_map",
      "model_type",
      "use_cache",
      "return_dict",
      "output_hidden_states",
      "output_attentions",
      "torchscript",
      "chunk_size_feed_forward",
      "is_encoder_decoder",
      "is_decoder",
      "add_cross_attention",
      "cross_attention_hidden_size",
      "tie_encoder_decoder",
      "pruned_heads",
      "id2label",
      "label2id",
      "problem_type",
      "finetuning_task",
      "task_specific_params",
      "tokenizer_class",
      "prefix",
      "bos_token_id",
      "eos_token_id",
      "pad_token_id",
      "sep_token_id",
      "decoder_start_token_id",
      "eod_token_id",
      "tf_legacy_loss",
      "use_bfloat16",
      "output_router_logits",
      "router_aux_loss_coef",
      "router_z_loss_coef",
      "router_jitter_noise",
      "moe_aux_loss_coef",
      "aux_loss_alpha",
      "seq_aux",
      "num_labels",
      "classifier_dropout",
      "keys_to_ignore_at_inference",
      "gradient_checkpointing",
      "pretraining_tp",
      "use_return_dict",
      "cache_implementation",
      "attn_implementation",
      "_attn_implementation_autoset",
      // Numerics that change no FLOP or byte: norm epsilons, initialisation, dropout.
      "rms_norm_eps",
      "layer_norm_eps",
      "layer_norm_epsilon",
      "norm_eps",
      "norm_epsilon",
      "initializer_range",
      "init_std",
      "initializer_factor",
      "attention_dropout",
      "hidden_dropout",
      "hidden_dropout_prob",
      "attention_probs_dropout_prob",
      "attn_pdrop",
      "embd_pdrop",
      "resid_pdrop",
      "summary_first_dropout",
      "dropout",
      "activation_dropout",
      "embedding_dropout",
      "residual_dropout",
      "emb_pdrop",
      "layerdrop",
      "embed_dropout",
      "attention_softmax_in_fp32",
      "scale_attention_softmax_in_fp32",
      "scale_attn_weights",
      "scale_attn_by_inverse_layer_idx",
      "reorder_and_upcast_attn",
      "rescale_prenorm_residual",
      "residual_in_fp32",
      "query_pre_attn_scalar",
      "use_bidirectional_attention",
      "rope_interleave",
      "norm_topk_prob",
      "routed_scaling_factor",
      "topk_method",
      "n_group",
      "topk_group",
      "scoring_func",
      "num_nextn_predict_layers",
      "ep_size",
      "time_step_min",
      "time_step_max",
      "time_step_floor",
      "time_step_init_scheme",
      "time_step_scale",
      "use_mambapy",
      "use_associative_scan",
      "use_mamba_kernels",
      "slow_but_exact",
      "no_rope_layer_interval",
      // GPT-2's sequence-summary head (not part of GPT2LMHeadModel).
      "summary_activation",
      "summary_proj_to_labels",
      "summary_type",
      "summary_use_proj",
  };
  return keys;
}

void families_detail::warn_unread(TransformerConfig& c, const ConfigReader& r,
                                  const std::vector<std::string>& unread,
                                  const std::vector<std::string>& known) {
  // Named from the top of the config ("rope_parameters.rope_thta"); the file is in the report's
  // header.
  std::string where = r.where();
  where =
      where.rfind(c.path, 0) == 0 ? where.substr(std::min(where.size(), c.path.size() + 2)) : where;
  for (char& ch : where)
    if (ch == ':') ch = '.';
  where.erase(std::remove(where.begin(), where.end(), ' '), where.end());
  for (const std::string& k : unread) {
    std::string key = where.empty() ? k : where + "." + k, near = closest_key(k, known);
    // A near miss is a typo whose intended value would otherwise be silently defaulted
    // (num_key_value_head: full multi-head attention, a 4x KV cache): refused, not noted.
    if (!near.empty())
      throw InputError(fmt::format("{}: key '{}' is not one rooflens reads: did you mean '{}'?",
                                   c.path, key, near));
    c.has_unknown_keys = true;
    c.warnings.push_back(
        fmt::format("key {} is not read by rooflens (not costed if it changes the model)", key));
  }
}

}  // namespace rooflens
