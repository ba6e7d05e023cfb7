#pragma once
// A Hugging Face config.json, as transformers saves it, read into the structure the lowering
// builds: dims, what each layer is (attention full/sliding/chunked, linear attention, a Mamba
// mixer; RoPE or not; dense MLP or experts), the block's norms and residuals, the MoE, MLA and
// SSM shapes, and the quantization. Fields decide; a per-model_type table
// supplies only what a config does not say (module names, norm kind, block layout; families.hpp).
// Missing keys, wrong types, contradictions and absurd sizes are InputErrors naming the key;
// keys rooflens does not read are warnings (did-you-mean), errors under --strict.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/transformers/checkpoint_index.hpp"
#include "analyzer/transformers/quantization_spec.hpp"

namespace rooflens {

enum class NormKind { rms, layer, layer_no_bias, l2 /* RMS without a weight (Llama 4 q/k) */ };
enum class BlockKind {
  pre_norm,         // x + f(norm(x)) per sublayer
  parallel,         // x + attn(norm_a(x)) + mlp(norm_m(x)) (GPT-J, GPT-NeoX, Falcon, Phi, Cohere)
  sandwich,         // x + post_norm(f(pre_norm(x))) (Gemma 2/3)
  post_sublayer,    // x + norm(f(x)) (OLMo 2, EXAONE 4)
  post_norm,        // norm(x + f(x)) (BERT, OPT with do_layer_norm_before false)
  normed_residual,  // x = norm(x); x = alpha*x + beta*f(x) (MiniMax)
};
enum class MixerKind { attention, linear_attention, mamba };
enum class PositionKind { rope, learned, alibi, none };

// One decoder layer as the config describes it.
struct LayerSpec {
  MixerKind mixer = MixerKind::attention;
  int64_t window = 0;  // sliding window: keys a query sees, 0 = all
  int64_t chunk = 0;   // chunked attention: a query sees the keys of its own chunk
  bool rope = true;    // false: a NoPE layer
  bool moe = false;    // experts instead of the dense MLP
  bool mlp = true;     // false: the mixer is the whole block (Mamba)
};

// Module names as the framework prints them; "" where the model has no such module. Model-level
// names are absolute; per-layer names are relative to "<layers>.<i>".
struct ModuleNames {
  std::string embed = "model.embed_tokens", positions, embed_norm, layers = "model.layers",
              final_norm = "model.norm", lm_head = "lm_head", project_in, project_out;
  std::string attn = "self_attn";  // the attention module: its core, rope and all-reduce nodes
  std::string q = "self_attn.q_proj", k = "self_attn.k_proj", v = "self_attn.v_proj",
              o = "self_attn.o_proj", qkv;
  std::string q_norm = "self_attn.q_norm", k_norm = "self_attn.k_norm";
  std::string mlp = "mlp", gate = "mlp.gate_proj", up = "mlp.up_proj", down = "mlp.down_proj",
              gate_up;
  std::string norm_attn = "input_layernorm", norm_mlp = "post_attention_layernorm", post_attn_norm,
              post_mlp_norm;
  std::string moe = "mlp", router = "mlp.gate", experts = "mlp.experts",
              shared = "mlp.shared_experts", shared_gate;
  std::string mixer = "mixer";
};

// Which model of a multimodal wrapper (text_config + vision_config) is analyzed: the language
// model (the default), the vision tower, or both: the tower and the projector over one image a
// sequence before the language model's prefill (--part).
enum class ConfigPart { text, vision, all };

// A vision tower: the image cut into patches by a strided convolution, one token per patch, then
// a bidirectional encoder. SigLIP and CLIP: a fixed image_size, learned positions. Qwen2-VL
// (transformers' Qwen2VisionTransformerPretrainedModel): any image size (the lowering's tokens are
// --seq patches of one image), a Conv3d over temporal_patch_size frames of each patch, 2-D rotary
// positions, and a patch merger that turns each merge x merge block of patches into one token of
// the language model's width.
enum class VisionKind { vit, qwen2_vl };
struct VisionSpec {
  VisionKind kind = VisionKind::vit;
  int64_t image_size = 0, patch_size = 0, channels = 3;  // image_size: 0 for Qwen2-VL (dynamic)
  int64_t temporal_patch = 1;  // Qwen2-VL: frames per patch (a still image is repeated)
  int64_t merge = 1;           // Qwen2-VL: spatial_merge_size (patches merged a side)
  int64_t out_hidden = 0;      // Qwen2-VL: the merger's output width (the language model's)
  // --part all: the wrapper's projector from the tower's tokens to the language model's (Gemma 3:
  // average-pooled to mm_tokens_per_image, RMS-normed, one matmul; LLaVA: the patch tokens of the
  // penultimate layer through Linear-GELU-Linear). Qwen2-VL's merger is the tower's own.
  enum class Projector { none, gemma3, llava } projector = Projector::none;
  int64_t projector_tokens = 0;  // Gemma 3: mm_tokens_per_image
  // --part all over a Qwen2-VL tower: an image of 1024 patches (448x448 pixels).
  static constexpr int64_t kPartAllPatches = 1024;
  bool class_token = false;  // CLIP: a learned class embedding before the patches
  bool patch_bias = true;    // SigLIP's patch convolution has a bias, CLIP's and Qwen2-VL's none
  std::string patch_embed, class_embed, merger;
  // Qwen2-VL: the image size is not in the config; --seq gives an image's patches.
  bool dynamic() const { return kind == VisionKind::qwen2_vl; }
  int64_t patches() const {
    return dynamic() ? 0 : (image_size / patch_size) * (image_size / patch_size);
  }
  // Tokens an image, fixed by the config; 0 where --seq says (dynamic()).
  int64_t tokens() const { return patches() + (class_token ? 1 : 0); }
};

// An encoder-decoder (T5/mT5/Flan-T5, BART, Whisper): the encoder runs once over the source; the
// decoder (the config's layers, heads, intermediate) attends to its own tokens and, in a second
// attention, to the encoder's output. families_encoder_decoder.cpp reads it, the lowering in
// lowering_encoder_decoder.cpp builds it.
enum class EncoderDecoderKind { t5, bart, whisper };
struct EncoderDecoderSpec {
  EncoderDecoderKind kind = EncoderDecoderKind::t5;
  int64_t encoder_layers = 0, encoder_heads = 0, encoder_head_dim = 0, encoder_intermediate = 0;
  int64_t relative_buckets = 0, relative_max_distance = 0;  // T5: the relative position bias table
  int64_t source_positions =
      0;                 // BART's learned source table; Whisper's 1500 positions after the stem
  int64_t mel_bins = 0;  // Whisper: log-mel channels of its input
  static constexpr int64_t kWhisperFrames = 3000;  // 30 s of audio at 100 frames/s
  // Source tokens the encoder runs over: Whisper's are fixed by its stem, the others' are --seq.
  int64_t source_tokens(int64_t seq) const {
    return kind == EncoderDecoderKind::whisper ? source_positions : seq;
  }
};

struct TransformerConfig {
  std::string path;
  std::string model_type;
  std::optional<VisionSpec>
      vision;  // --part vision: the tower; the lowering's tokens are its patches
  std::optional<EncoderDecoderSpec> encdec;  // set: the dims below are the decoder's
  // --part all: the vision tower (with the projector) whose image tokens a prefill starts from.
  std::shared_ptr<const TransformerConfig> image;
  bool verified = true;  // model_type is in the family table; false: generic decoder lowering
  std::string dtype;     // "bfloat16" etc. from dtype/torch_dtype, "" if absent
  ModuleNames names;

  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0,
          intermediate = 0;
  int64_t max_positions = 0;      // max_position_embeddings; 0: the config states none
  int64_t rope_stated_limit = 0;  // rope scaling factor x original_max_position_embeddings, 0: none
  bool tie_embeddings = false;
  bool causal = true;  // false for encoders

  // Attention.
  bool qkv_bias = false, o_bias = false;
  NormKind qk_norm_kind = NormKind::rms;
  bool qk_norm = false;
  bool qk_norm_full_width =
      false;  // one weight per head and dim (OLMo 2, Cohere, StableLM), else per dim
  bool qk_norm_across_heads = false;  // one norm over all heads' dims at once (OLMo 2, OLMoE)
  int64_t rotary_dim = 0;             // dims of each head that RoPE rotates (partial rotary)
  PositionKind positions = PositionKind::rope;
  int64_t position_offset = 0;      // rows of a learned table before position 0 (OPT: 2)
  double attn_softcap = 0;          // tanh soft-capping of the scores (Gemma 2)
  bool sinks = false;               // a learned sink logit per head (gpt-oss)
  double clip_qkv = 0;              // clamp of q/k/v (OLMoE, DBRX)
  bool temperature_tuning = false;  // Llama 4 NoPE layers scale q by position

  // Block.
  BlockKind block = BlockKind::pre_norm;
  NormKind norm = NormKind::rms;
  int parallel_norms = 1;  // parallel blocks: one shared norm or two
  bool gated_mlp = true;
  std::string activation = "silu";
  bool mlp_bias = false;
  double embed_scale = 0;         // Gemma's sqrt(hidden), Granite's embedding_multiplier; 0: none
  double residual_scale = 0;      // Granite's residual_multiplier; 0: none
  bool residual_factors = false;  // MiniMax alpha/beta on both residual terms
  double logits_scale = 0;        // Cohere logit_scale, Granite 1/logits_scaling; 0: none
  double final_softcap = 0;       // Gemma 2
  bool lm_head_bias = false;
  int64_t embed_proj = 0;  // OPT word_embed_proj_dim when it differs from hidden
  int64_t type_vocab = 0;  // bert token types
  bool pooler = false;     // bert
  bool final_norm = true;
  // Dropout in training (torch's nn.Dropout keeps a 1-byte mask per element for the backward):
  // after the embeddings, on the attention probabilities (fused kernels keep only an RNG state),
  // and on each sublayer's output before the residual add.
  double embed_dropout = 0, attn_dropout = 0, resid_dropout = 0;

  // Mixture of experts.
  int64_t experts = 0, experts_per_token = 0, moe_intermediate = 0, shared_experts = 0;
  int64_t shared_intermediate = 0;  // all shared experts together
  int64_t dense_intermediate =
      0;  // dense layers' FFN when it differs (Llama 4 intermediate_size_mlp)
  bool shared_expert_gate = false;  // Qwen2-MoE: sigmoid(Linear(h, 1)) scales the shared expert
  bool sigmoid_router = false;      // DeepSeek-V3, Llama 4 score experts with a sigmoid
  bool router_bias = false, expert_bias = false;
  std::string expert_activation = "silu";  // "swiglu_clamp": gpt-oss

  // Multi-head latent attention (DeepSeek-V2/V3).
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;

  // Selective state space (Mamba, Jamba) and linear attention (MiniMax).
  int64_t ssm_inner = 0, ssm_state = 0, ssm_conv = 0, ssm_dt_rank = 0;
  bool ssm_conv_bias = true, ssm_proj_bias = false, ssm_norms = false;  // Jamba: dt/B/C RMSNorms
  int64_t linear_block = 256;  // lightning attention's block size

  std::vector<LayerSpec> layer_specs;  // one per layer
  std::optional<QuantizationSpec> quantization;
  std::optional<CheckpointIndex> checkpoint;  // a model directory with a safetensors index
  std::vector<std::string> warnings;          // one line each: unknown keys, generic lowering
  bool has_unknown_keys = false;              // --strict refuses

  bool mla() const { return kv_lora_rank > 0; }
  bool is_moe_layer(int64_t layer) const { return layer_specs.at(static_cast<size_t>(layer)).moe; }
  int64_t qk_head_dim() const { return mla() ? qk_nope_dim + qk_rope_dim : head_dim; }
  int64_t v_dim() const { return mla() ? v_head_dim : head_dim; }
  bool any_layer(MixerKind k) const;
  int64_t attention_layers() const;  // layers whose mixer is softmax attention
  // The longest context the model states it handles (max_position_embeddings or the rope
  // scaling's stated limit, the larger); 0 when the config states none.
  int64_t context_limit() const;
};

}  // namespace rooflens
