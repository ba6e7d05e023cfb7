// The hybrid and recurrent families' entries (MiniMax, Mamba, Jamba) and DBRX's nested
// attn_config/ffn_config: the part of the family table that builds LayerSpecs itself.
#include <cmath>

#include "analyzer/core/limits.hpp"
#include "analyzer/transformers/families.hpp"

namespace rooflens::families_detail {
namespace {

constexpr int64_t kWidth = limits::kMaxConfigWidth;

// time_step_rank "auto" (or absent) is ceil(hidden / 16), as MambaConfig computes it.
int64_t dt_rank(ConfigReader& r, const char* key, int64_t hidden) {
  int64_t automatic = (hidden + 15) / 16;
  if (r.is_string(key)) {
    if (r.string_or(key, "") != "auto") r.fail(key, "must be an integer or \"auto\"");
    return automatic;
  }
  return r.integer_or(key, automatic, kWidth);
}

}  // namespace

void minimax_names(TransformerConfig& c) {
  c.block = BlockKind::normed_residual;
  c.residual_factors = true;
}

void minimax_keys(TransformerConfig& c, ConfigReader& r) {
  c.linear_block = r.integer_or("block_size", 256, kWidth);
  for (const char* k :
       {"full_attn_alpha_factor", "full_attn_beta_factor", "linear_attn_alpha_factor",
        "linear_attn_beta_factor", "mlp_alpha_factor", "mlp_beta_factor"})
    r.number_or(k, 1.0);  // multiplies on the residual terms, costed whatever their value
}

void mamba_names(TransformerConfig& c) {
  model_names(c, "backbone.embeddings", "backbone.layers", "backbone.norm_f");
  c.names.norm_attn = "norm";
  c.names.norm_mlp = "";
  c.names.mixer = "mixer";
  c.positions = PositionKind::none;
  c.tie_embeddings = true;
}

void mamba_keys(TransformerConfig& c, ConfigReader& r) {
  int64_t expand = r.integer_or("expand", 2, 64);
  c.ssm_inner = r.integer_or("intermediate_size", expand * c.hidden, kWidth);
  c.intermediate = c.ssm_inner;
  c.ssm_state = r.integer_or("state_size", 16, 4096);
  c.ssm_conv = r.integer_or("conv_kernel", 4, 64);
  c.ssm_dt_rank = dt_rank(r, "time_step_rank", c.hidden);
  c.ssm_conv_bias = r.boolean_or("use_conv_bias", true);
  c.ssm_proj_bias = r.boolean_or("use_bias", false);
  for (LayerSpec& l : c.layer_specs) {
    l.mixer = MixerKind::mamba;
    l.mlp = false;
    l.rope = false;
  }
}

void jamba_names(TransformerConfig& c) {
  c.names.final_norm = "model.final_layernorm";
  c.names.norm_mlp = "pre_ff_layernorm";
  feed_forward_names(c);
  c.names.mixer = "mamba";
  c.positions = PositionKind::none;  // Jamba's attention layers use no positional encoding
  c.ssm_norms = true;
}

void jamba_keys(TransformerConfig& c, ConfigReader& r) {
  int64_t expand = r.integer_or("mamba_expand", 2, 64);
  c.ssm_inner = expand * c.hidden;
  c.ssm_state = r.integer_or("mamba_d_state", 16, 4096);
  c.ssm_conv = r.integer_or("mamba_d_conv", 4, 64);
  c.ssm_dt_rank = dt_rank(r, "mamba_dt_rank", c.hidden);
  c.ssm_conv_bias = r.boolean_or("mamba_conv_bias", true);
  c.ssm_proj_bias = r.boolean_or("mamba_proj_bias", false);
  int64_t attn_period = r.integer_or("attn_layer_period", 8, limits::kMaxConfigLayers);
  int64_t attn_offset = r.integer_or("attn_layer_offset", 4, limits::kMaxConfigLayers);
  int64_t expert_period = r.integer_or("expert_layer_period", 2, limits::kMaxConfigLayers);
  int64_t expert_offset = r.integer_or("expert_layer_offset", 1, limits::kMaxConfigLayers);
  if (attn_period == 0) r.fail("attn_layer_period", "must be positive");
  if (expert_period == 0) r.fail("expert_layer_period", "must be positive");
  for (size_t i = 0; i < c.layer_specs.size(); ++i) {
    LayerSpec& l = c.layer_specs[i];
    int64_t li = static_cast<int64_t>(i);
    l.mixer = li % attn_period == attn_offset ? MixerKind::attention : MixerKind::mamba;
    l.rope = false;
    l.moe = c.experts > 0 && li % expert_period == expert_offset;
  }
}

void dbrx_names(TransformerConfig& c) {
  model_names(c, "transformer.wte", "transformer.blocks", "transformer.norm_f");
  fused_attention_names(c, "norm_attn_norm.attn", "Wqkv", "out_proj");
  c.names.norm_attn = "norm_attn_norm.norm_1";
  c.names.norm_mlp = "norm_attn_norm.norm_2";
  c.names.moe = "ffn";
  c.names.router = "ffn.router.layer";
  c.names.experts = "ffn.experts.mlp";
  c.norm = NormKind::layer_no_bias;
}

void dbrx_keys(TransformerConfig& c, ConfigReader& r) {
  if (const auto* attn = r.object("attn_config")) {
    ConfigReader a(*attn, r.where() + ": attn_config");
    c.kv_heads = a.integer_or("kv_n_heads", 1, kWidth);
    c.clip_qkv = a.number_or("clip_qkv", 0);
    a.number_or("rope_theta", 0);
    a.ignore({"attn_pdrop", "model_type"});
    warn_unread(c, a, a.unread(), {"kv_n_heads", "clip_qkv", "rope_theta", "attn_pdrop"});
  }
  const auto* ffn = r.object("ffn_config");
  if (!ffn) r.fail("ffn_config", "is required for dbrx (the experts)");
  ConfigReader f(*ffn, r.where() + ": ffn_config");
  c.intermediate = c.moe_intermediate = f.integer("ffn_hidden_size", kWidth);
  c.experts = f.integer("moe_num_experts", kWidth);
  c.experts_per_token = f.integer("moe_top_k", kWidth);
  if (const auto* act = f.object("ffn_act_fn")) {
    ConfigReader a(*act, f.where() + ": ffn_act_fn");
    c.activation = a.string_or("name", "silu");
  }
  f.integer_or("hidden_size", c.hidden, kWidth);
  f.ignore({"moe_jitter_eps", "moe_loss_weight", "moe_normalize_expert_weights", "model_type"});
  warn_unread(c, f, f.unread(),
              {"ffn_hidden_size", "moe_num_experts", "moe_top_k", "ffn_act_fn", "hidden_size",
               "moe_jitter_eps", "moe_loss_weight", "moe_normalize_expert_weights"});
  for (LayerSpec& l : c.layer_specs) l.moe = true;
}

}  // namespace rooflens::families_detail
