// Multimodal wrappers (text_config + vision_config), their vision towers (SigLIP, CLIP, Qwen2-VL's
// with its patch merger) and the quantization formats people export
// (compressed-tensors, HQQ, bitsandbytes nf4/fp4). Parameter counts come from transformers itself
// (tests/data/multimodal/reference.json, written by scripts/gpu/reference_multimodal.py) and
// from hand counts; stored bytes are hand counts of each format's tensors.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "analyzer/transformers/quantization.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;
using nlohmann::json;

namespace {

json read(const std::string& relative) {
  std::ifstream in(data_path(relative));
  return json::parse(in);
}

const json& reference() {
  static const json r = read("tests/data/multimodal/reference.json");
  return r;
}

std::string config_path(const std::string& name) {
  return data_path("tests/data/multimodal/" + name + "/config.json");
}

Analysis prefill(const TransformerConfig& c, int64_t tokens) {
  TransformerOptions o;
  o.workload = Workload::prefill;
  o.lowering.seq = tokens;
  return analyze_transformer(c, o);
}

bool has_note(const Analysis& a, const std::string& needle) {
  for (const std::string& n : a.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

// Within 0.1% of transformers' count (the brief's tolerance); every family below is exact.
void check_params(int64_t ours, int64_t theirs) {
  INFO("rooflens " << ours << " transformers " << theirs);
  CHECK(std::abs(static_cast<double>(ours - theirs)) <= 0.001 * static_cast<double>(theirs));
  CHECK(ours == theirs);
}

}  // namespace

TEST_CASE("a multimodal wrapper analyzes its language model by default and says so",
          "[transformer][multimodal]") {
  for (const char* name : {"gemma-3-4b", "llava-1.5-7b", "qwen2-vl-7b"}) {
    INFO(name);
    TransformerConfig c = load_transformer_config(config_path(name));
    Analysis a = prefill(c, 16);
    check_params(a.transformer->params_total, reference()[name]["language_params"].get<int64_t>());
    CHECK(has_note(a, "the language model only"));
    CHECK(has_note(a, "--part vision"));
    CHECK(a.coverage.not_costed == 0);
  }
  // Under the wrapper the language model's modules are model.language_model.* (transformers 5).
  Analysis g = prefill(load_transformer_config(config_path("gemma-3-4b")), 16);
  CHECK(node_named(g, "model.language_model.layers.0.self_attn.q_proj").status ==
        NodeStatus::costed);
}

TEST_CASE(
    "Qwen2-VL as published (the language model's keys at the top level) reads as its text_config "
    "form",
    "[transformer][multimodal]") {
  json j = read("tests/data/multimodal/qwen2-vl-7b/config.json");
  json flat = j;
  flat.erase("text_config");
  for (auto it = j["text_config"].begin(); it != j["text_config"].end(); ++it)
    if (!flat.contains(it.key())) flat[it.key()] = it.value();
  flat["model_type"] = "qwen2_vl";
  TransformerConfig c = parse_transformer_config(flat.dump(), "config.json");
  check_params(prefill(c, 16).transformer->params_total,
               reference()["qwen2-vl-7b"]["language_params"].get<int64_t>());
}

TEST_CASE(
    "the vision tower (--part vision): SigLIP and CLIP, params as transformers counts them and as "
    "by hand",
    "[transformer][multimodal]") {
  TransformerConfig g = load_transformer_config(config_path("gemma-3-4b"), ConfigPart::vision);
  REQUIRE(g.vision);
  CHECK(g.vision->tokens() == 4096);  // (896 / 14)^2 patches
  Analysis a = prefill(g, 4096);
  // By hand (SigLIP so400m, 27 layers of width 1152, MLP 4304): patch conv 1152 x 3 x 14 x 14 +
  // bias, 4096 position rows, per layer q/k/v/o with biases, fc1/fc2 with biases, two LayerNorms;
  // the post-LayerNorm.
  int64_t layer = 4 * (1152LL * 1152 + 1152) + (2 * 1152LL * 4304 + 4304 + 1152) + 2 * 2 * 1152;
  int64_t by_hand = 1152LL * 588 + 1152 + 4096LL * 1152 + 27 * layer + 2 * 1152;
  CHECK(by_hand == 416866032);
  check_params(a.transformer->params_total,
               reference()["gemma-3-4b"]["vision_params"].get<int64_t>());
  CHECK(has_note(a, "the vision tower only"));
  // The patch embedding is a 14x14 stride-14 convolution: 4096 x 1152 x 588 MACs an image.
  const NodeResult& conv =
      node_named(a, "model.vision_tower.vision_model.embeddings.patch_embedding");
  CHECK(conv.cost.macs == 4096LL * 1152 * 588);
  // CLIP ViT-L/14 at 336 (LLaVA-1.5): a class token (577 positions), a pre-LayerNorm, no conv bias.
  TransformerConfig l = load_transformer_config(config_path("llava-1.5-7b"), ConfigPart::vision);
  int64_t clip_layer = 4 * (1024LL * 1024 + 1024) + (2 * 1024LL * 4096 + 4096 + 1024) + 4 * 1024;
  CHECK(1024LL * 588 + 1024 + 577LL * 1024 + 2 * 1024 + 24 * clip_layer + 2 * 1024 == 303507456);
  check_params(prefill(l, 577).transformer->params_total,
               reference()["llava-1.5-7b"]["vision_params"].get<int64_t>());
  // A tower rooflens does not lower, a plain config, a decode step or another token count: one
  // line.
  json other = read("tests/data/multimodal/qwen2-vl-7b/config.json");
  other["vision_config"]["model_type"] = "qwen2_5_vl_vision";
  CHECK_THROWS_WITH(
      parse_transformer_config(other.dump(), "config.json", ConfigPart::vision),
      Catch::Contains(
          "vision_config model_type 'qwen2_5_vl_vision' is not a tower rooflens lowers"));
  CHECK_THROWS_WITH(load_transformer_config(data_path("samples/configs/llama-2-7b/config.json"),
                                            ConfigPart::vision),
                    Catch::Contains("has no vision_config"));
  CHECK_THROWS_WITH(prefill(g, 100), Catch::Contains("takes 4096 tokens an image"));
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.context = 10;
  CHECK_THROWS_AS(analyze_transformer(g, o), InputError);
}

TEST_CASE(
    "the Qwen2-VL vision tower (--part vision): the tower and its merger as transformers counts "
    "them",
    "[transformer][multimodal]") {
  TransformerConfig c = load_transformer_config(config_path("qwen2-vl-7b"), ConfigPart::vision);
  REQUIRE(c.vision);
  CHECK(c.vision->dynamic());
  CHECK(c.vision->tokens() == 0);  // the image size is --seq's: dynamic resolution
  // --seq 1024: one 448x448 image, 32x32 patches of 2 frames x 14x14.
  Analysis a = prefill(c, 1024);
  CHECK(a.coverage.not_costed == 0);
  // transformers' model.visual holds the PatchMerger (the projector to the language model: the
  // script's projector_params is 0 for Qwen2-VL), so --part vision counts it.
  const json& ref = reference()["qwen2-vl-7b"];
  CHECK(ref["projector_params"].get<int64_t>() == 0);
  // By hand: the Conv3d 1280 x 3 x 2 x 14 x 14 without bias; per block two LayerNorms, qkv
  // 1280 -> 3840 and proj with biases, fc1 1280 -> 5120 and fc2 with biases; the merger's ln_q,
  // 5120 -> 5120 and 5120 -> 3584 with biases.
  int64_t block = 2 * 2 * 1280 + (1280LL * 3840 + 3840) + (1280LL * 1280 + 1280) +
                  (1280LL * 5120 + 5120) + (5120LL * 1280 + 1280);
  int64_t merger = 2 * 1280 + (5120LL * 5120 + 5120) + (5120LL * 3584 + 3584);
  CHECK(1280LL * 1176 + 32 * block + merger == 675759104);
  check_params(a.transformer->params_total,
               ref["vision_params"].get<int64_t>() + ref["projector_params"].get<int64_t>());
  // Module names as transformers prints them; the patch embedding is 1024 x 1176 x 1280 MACs.
  const NodeResult& conv = node_named(a, "model.visual.patch_embed.proj");
  CHECK(conv.op == "Conv");
  CHECK(conv.cost.macs == 1024LL * 1176 * 1280);
  CHECK(node_named(a, "model.visual.blocks.0.attn.qkv").cost.macs == 1024LL * 1280 * 3840);
  CHECK(node_named(a, "model.visual.blocks.31.attn.proj").cost.macs == 1024LL * 1280 * 1280);
  CHECK(node_named(a, "model.visual.blocks.31.mlp.fc1").cost.macs == 1024LL * 1280 * 5120);
  CHECK(node_named(a, "model.visual.merger.mlp.0").cost.macs == 256LL * 5120 * 5120);
  const NodeResult& out = node_named(a, "model.visual.merger.mlp.2");
  CHECK(out.cost.macs == 256LL * 5120 * 3584);
  CHECK(node_named(a, "model.visual.blocks.0.attn.q_rope").status == NodeStatus::costed);
  CHECK(node_named(a, "model.visual.merger.ln_q").status == NodeStatus::costed);
  CHECK(has_note(a, "the vision tower and its patch merger"));
  CHECK(has_note(a, "--seq 1024: an image of 1024 patches of 14x14 pixels (about 448x448"));
  CHECK(has_note(a, "merged 2x2 into 256 tokens of width 3584"));
  // Batch = images: two images, twice the patches.
  TransformerOptions two;
  two.workload = Workload::prefill;
  two.lowering.seq = 1024;
  two.lowering.batch = 2;
  CHECK(node_named(analyze_transformer(c, two), "model.visual.patch_embed.proj").cost.macs ==
        2 * 1024LL * 1176 * 1280);
}

TEST_CASE("the Qwen2-VL tower refuses a --seq its merger cannot take and reads its keys strictly",
          "[transformer][multimodal]") {
  TransformerConfig c = load_transformer_config(config_path("qwen2-vl-7b"), ConfigPart::vision);
  CHECK_THROWS_WITH(prefill(c, 1023),
                    Catch::Contains("--seq 1023") && Catch::Contains("a positive multiple of 4"));
  CHECK_THROWS_WITH(prefill(c, 0),  // the CLI without --seq
                    Catch::Contains("the qwen2_vl_vision tower needs --seq as an image's 14x14 "
                                    "patches"));
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.context = 10;
  CHECK_THROWS_AS(analyze_transformer(c, o), InputError);
  o.workload = Workload::prefill;
  o.lowering.seq = 1024;
  o.lowering.tp = 2;
  CHECK_THROWS_WITH(analyze_transformer(c, o), Catch::Contains("--tp over the qwen2_vl_vision"));
  // As published on the Hub: no model_type in vision_config, in_chans and spatial_patch_size
  // (kept by transformers, never read): the same tower, nothing warned of.
  json j = read("tests/data/multimodal/qwen2-vl-7b/config.json");
  json published = j;
  published["vision_config"] = {{"depth", 32},
                                {"embed_dim", 1280},
                                {"mlp_ratio", 4},
                                {"num_heads", 16},
                                {"in_chans", 3},
                                {"hidden_size", 3584},
                                {"patch_size", 14},
                                {"spatial_merge_size", 2},
                                {"spatial_patch_size", 14},
                                {"temporal_patch_size", 2}};
  TransformerConfig p =
      parse_transformer_config(published.dump(), "config.json", ConfigPart::vision);
  CHECK_FALSE(p.has_unknown_keys);
  check_params(prefill(p, 1024).transformer->params_total,
               reference()["qwen2-vl-7b"]["vision_params"].get<int64_t>());
  // A near miss is refused with the key it meant; an unknown key is noted.
  json typo = j;
  typo["vision_config"]["spatial_merge_sise"] = 2;
  CHECK_THROWS_WITH(parse_transformer_config(typo.dump(), "config.json", ConfigPart::vision),
                    Catch::Contains("vision_config.spatial_merge_sise") &&
                        Catch::Contains("did you mean 'spatial_merge_size'?"));
  json unknown = j;
  unknown["vision_config"]["fullatt_block_indexes"] = {7, 15, 23, 31};
  TransformerConfig u = parse_transformer_config(unknown.dump(), "config.json", ConfigPart::vision);
  CHECK(u.has_unknown_keys);
  json rope = j;
  rope["vision_config"]["rope_parameters"]["rope_type"] = "default";
  CHECK_THROWS_WITH(parse_transformer_config(rope.dump(), "config.json", ConfigPart::vision),
                    Catch::Contains("axial rope only"));
  json heads = j;
  heads["vision_config"]["num_heads"] = 3;
  CHECK_THROWS_WITH(parse_transformer_config(heads.dump(), "config.json", ConfigPart::vision),
                    Catch::Contains("num_heads"));
}

TEST_CASE("a 2-layer SigLIP tower's matrix FLOPs match FlopCounterMode's",
          "[transformer][multimodal]") {
  // scripts/gpu/reference_multimodal.py: transformers' SiglipVisionModel with Gemma-3-4B's tower
  // cut to 2 layers, one 896x896 image, eager attention, FlopCounterMode by aten op.
  const json& ref = reference()["gemma-3-4b"]["vision_two_layer_flops"];
  json j = read("tests/data/multimodal/gemma-3-4b/config.json");
  j["vision_config"]["num_hidden_layers"] = 2;
  TransformerConfig c = parse_transformer_config(j.dump(), "config.json", ConfigPart::vision);
  Analysis a = prefill(c, 4096);
  int64_t linear = 0, conv_macs = 0, attention = 0;
  for (const NodeResult& n : a.nodes) {
    if (n.op == "MatMul") linear += n.cost.flops;
    if (n.op == "Conv") conv_macs += n.cost.macs.value_or(0);
    if (n.op == "Attention") attention += n.cost.flops;
  }
  // The projections and MLPs (biases are Add nodes of their own) and the patch convolution: exact.
  CHECK(linear == ref["addmm"].get<int64_t>());
  CHECK(2 * conv_macs == ref["convolution"].get<int64_t>());
  // Attention's two products, with the softmax on top in rooflens: within 1% of the whole count.
  double ours = static_cast<double>(linear + 2 * conv_macs + attention),
         theirs = ref["total"].get<double>();
  CHECK(std::abs(ours - theirs) / theirs < 0.01);
  CHECK(attention >= ref["bmm"].get<int64_t>());
}

TEST_CASE(
    "a misspelled key at a wrapper's top level or in its vision_config is refused with the key it "
    "meant",
    "[transformer][multimodal]") {
  json j = read("tests/data/multimodal/gemma-3-4b/config.json");
  j["mm_tokens_per_imag"] = 256;
  CHECK_THROWS_WITH(parse_transformer_config(j.dump(), "config.json"),
                    Catch::Contains("did you mean 'mm_tokens_per_image'?"));
  j = read("tests/data/multimodal/gemma-3-4b/config.json");
  j["vision_config"]["patch_sise"] = 14;
  CHECK_THROWS_WITH(parse_transformer_config(j.dump(), "config.json", ConfigPart::vision),
                    Catch::Contains("did you mean 'patch_size'?"));
  j = read("tests/data/multimodal/gemma-3-4b/config.json");
  j["text_config"]["num_key_value_head"] = 4;
  CHECK_THROWS_WITH(parse_transformer_config(j.dump(), "config.json"),
                    Catch::Contains("text_config.num_key_value_head") &&
                        Catch::Contains("did you mean 'num_key_value_heads'?"));
}

TEST_CASE(
    "compressed-tensors, HQQ and bitsandbytes are labelled as what they are and store what they "
    "store",
    "[transformer][quantization]") {
  auto spec = [](json q) {
    json j = read("samples/configs/llama-2-7b/config.json");
    j["quantization_config"] = q;
    return *parse_transformer_config(j.dump(), "config.json").quantization;
  };
  // llm-compressor's W4A16 (pack-quantized, int4, symmetric, group 128): 4096 x 11008 int4 weights
  // (22,544,384 bytes), bf16 scales [11008, 32], the int64 [2] weight_shape.
  QuantizationSpec w4 = spec({{"quant_method", "compressed-tensors"},
                              {"format", "pack-quantized"},
                              {"config_groups",
                               {{"group_0",
                                 {{"targets", {"Linear"}},
                                  {"weights",
                                   {{"num_bits", 4},
                                    {"type", "int"},
                                    {"symmetric", true},
                                    {"strategy", "group"},
                                    {"group_size", 128}}}}}}},
                              {"ignore", {"lm_head"}}});
  CHECK(w4.label == "compressed-tensors pack-quantized int4 (group 128), 16-bit activations");
  QuantizedStorage s = quantized_storage(w4, 4096, 11008);
  CHECK(s.weight == DType::i4);
  REQUIRE(s.aux.size() == 2);
  CHECK(s.aux[0].shape == Shape{11008, 32});
  CHECK(s.aux[0].dtype == DType::bf16);
  CHECK_FALSE(quantizes(w4, "lm_head", false));
  // FP8 dynamic (float-quantized, per-channel fp8 weights, fp8 per-token activations): W8A8 on
  // the fp8 roof.
  QuantizationSpec fp8 = spec(
      {{"quant_method", "compressed-tensors"},
       {"format", "float-quantized"},
       {"config_groups",
        {{"group_0",
          {{"targets", {"Linear"}},
           {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}}},
           {"input_activations",
            {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}}}}}}}});
  CHECK(fp8.dynamic_activations);
  CHECK(quantized_storage(fp8, 4096, 4096).weight == DType::f8e4m3fn);
  CHECK(quantized_storage(fp8, 4096, 4096).aux[0].shape == Shape{4096, 1});
  // HQQ 4-bit, group 64 (transformers' HqqConfig as saved): an fp16 scale and zero per 64 weights.
  QuantizationSpec h = spec({{"quant_method", "hqq"},
                             {"quant_config",
                              {{"weight_quant_params",
                                {{"nbits", 4},
                                 {"group_size", 64},
                                 {"axis", 1},
                                 {"channel_wise", true},
                                 {"optimize", true},
                                 {"round_zero", true},
                                 {"view_as_float", false}}},
                               {"scale_quant_params", nullptr},
                               {"zero_quant_params", nullptr},
                               {"offload_meta", false}}},
                             {"skip_modules", {"lm_head"}}});
  CHECK(h.label == "hqq int4 (fp16 scale and zero per 64 weights)");
  QuantizedStorage hs = quantized_storage(h, 4096, 4096);
  CHECK(hs.aux[0].shape == Shape{4096 * 4096 / 64, 1});
  CHECK(hs.aux[1].dtype == DType::f16);
  // bitsandbytes: nf4 and fp4 are named, with their block of 64.
  CHECK(spec({{"quant_method", "bitsandbytes"},
              {"load_in_4bit", true},
              {"bnb_4bit_quant_type", "nf4"}})
            .label == "bitsandbytes nf4 (4-bit NormalFloat, absmax per 64 weights)");
  CHECK(spec({{"quant_method", "bitsandbytes"},
              {"load_in_4bit", true},
              {"bnb_4bit_quant_type", "fp4"}})
            .label == "bitsandbytes fp4 (4-bit float, absmax per 64 weights)");
  // Formats rooflens does not lower are refused with the key named.
  CHECK_THROWS_WITH(spec({{"quant_method", "compressed-tensors"}, {"format", "marlin-24"}}),
                    Catch::Contains("'marlin-24' is not lowered"));
  CHECK_THROWS_WITH(spec({{"quant_method", "hqq"}, {"nbits", 3}}),
                    Catch::Contains("rooflens stores 4- and 8-bit HQQ weights"));
}

TEST_CASE(
    "a wrapper under --part all: the image through the tower and projector then the prompt, "
    "parameters equal the whole wrapper's",
    "[transformer][multimodal]") {
  // total_params: transformers' model.num_parameters() of the whole wrapper on the meta device.
  for (const char* name : {"gemma-3-4b", "llava-1.5-7b", "qwen2-vl-7b"}) {
    TransformerConfig c = load_transformer_config(
        data_path(std::string("tests/data/multimodal/") + name + "/config.json"), ConfigPart::all);
    Analysis a = prefill(c, 1024);
    INFO(name);
    CHECK(a.totals.params == reference()[name]["total_params"].get<int64_t>());
    CHECK(has_note(a, "one image a sequence through the vision tower"));
  }
  // Gemma 3's projector by hand: the 64x64 SigLIP patch grid average-pooled 4x4 to 256 tokens of
  // 1152, times the [1152, 2560] projection: 2 x 256 x 1152 x 2560 FLOPs.
  TransformerConfig g = load_transformer_config(
      data_path("tests/data/multimodal/gemma-3-4b/config.json"), ConfigPart::all);
  Analysis a = prefill(g, 1024);
  CHECK(node_named(a, "model.multi_modal_projector.mm_input_projection").cost.flops ==
        2LL * 256 * 1152 * 2560);
  CHECK(node_named(a, "model.multi_modal_projector.avg_pool").output_shapes.at(0) ==
        "[1,1152,16,16]");
  // The prompt holds the image's 256 tokens: a shorter one is refused; decode has no image.
  CHECK_THROWS_WITH(prefill(g, 100), Catch::Contains("shorter than the image's 256 tokens"));
  CHECK_THROWS_WITH(
      load_transformer_config(data_path("samples/configs/llama-2-7b/config.json"), ConfigPart::all),
      Catch::Contains("--part all: model_type 'llama' has no vision_config"));
}
