// Reading config.json without misreading it: every key used, known-and-ignored or reported;
// contradictions refused with the field named; the context limit; quantization_config; model
// directories and their safetensors index. Expected values are hand counts or published figures.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "analyzer/transformers/checkpoint_index.hpp"
#include "analyzer/transformers/families.hpp"
#include "analyzer/transformers/quantization.hpp"
#include "model_builder.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read(const std::string& relative) {
  std::ifstream in(data_path(relative));
  return json::parse(in);
}

TransformerConfig parse(const json& j) {
  return parse_transformer_config(j.dump(), "config.json");
}

Analysis analyze(const TransformerConfig& c, Workload w, int64_t tokens, bool strict = false) {
  TransformerOptions o;
  o.workload = w;
  o.lowering.seq = o.lowering.context = tokens;
  o.strict = strict;
  return analyze_transformer(c, o);
}

bool has_note(const Analysis& a, const std::string& needle) {
  for (const std::string& n : a.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

std::vector<std::string> family_configs() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(data_path("tests/data/configs")))
    if (e.is_directory()) {
      out.push_back(e.path() / "config.json");
      out.push_back(e.path() / "two-layer" / "config.json");
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("every key of every family's config is read or on the ignore list",
          "[transformer][config]") {
  // The configs transformers 5.17's own classes wrote: nothing unread, nothing generic.
  std::vector<std::string> paths = family_configs();
  CHECK(paths.size() == 2 * 42);
  for (const std::string& p : paths) {
    TransformerConfig c = load_transformer_config(p);
    INFO(p << (c.warnings.empty() ? "" : ": " + c.warnings[0]));
    CHECK(c.verified);
    CHECK(c.warnings.empty());
  }
  CHECK(supported_model_types().size() == 42);
}

TEST_CASE("docs/transformers.md lists every key rooflens deliberately ignores",
          "[transformer][config]") {
  std::ifstream in(data_path("docs/transformers.md"));
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::string& k : ignored_config_keys()) {
    if (k == "model_type") continue;  // read, not ignored: the list names it so the reader skips it
    INFO(k);
    CHECK(doc.find("`" + k + "`") != std::string::npos);
  }
}

TEST_CASE(
    "a misspelled key is an error naming both keys, and a key near nothing a note (an error under "
    "--strict)",
    "[transformer][config]") {
  // Read as written, num_key_value_head would leave num_key_value_heads at its default (32, full
  // multi-head attention): a 4x KV cache for Llama-3.1-8B (8 KV heads). So a near miss is refused.
  json j = read("samples/configs/llama-3.1-8b/config.json");
  j["num_key_value_head"] = j["num_key_value_heads"];
  j.erase("num_key_value_heads");
  CHECK_THROWS_AS(parse(j), InputError);
  CHECK_THROWS_WITH(parse(j), Catch::Contains("key 'num_key_value_head' is not one rooflens reads: "
                                              "did you mean 'num_key_value_heads'?"));
  // Inside a nested object, named from the top of the config.
  j = read("samples/configs/llama-2-7b/config.json");
  j["rope_parameters"]["rope_thta"] = 10000.0;
  CHECK_THROWS_WITH(
      parse(j),
      Catch::Contains(
          "key 'rope_parameters.rope_thta' is not one rooflens reads: did you mean 'rope_theta'?"));
  // A one-letter slip (intermediat_size is 1 edit from intermediate_size).
  j = read("samples/configs/llama-2-7b/config.json");
  j["intermediat_size"] = 11008;
  CHECK_THROWS_WITH(parse(j), Catch::Contains("did you mean 'intermediate_size'?"));
  // A key near nothing is reported as unread, a note; --strict refuses it.
  j = read("samples/configs/llama-2-7b/config.json");
  j["flux_capacitor"] = 1;
  TransformerConfig c = parse(j);
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0].find("key flux_capacitor is not read by rooflens") != std::string::npos);
  Analysis a = analyze(c, Workload::decode, 100);
  CHECK(has_note(a, "key flux_capacitor is not read"));
  CHECK_THROWS_WITH(analyze(c, Workload::decode, 100, true),
                    Catch::Contains("--strict") && Catch::Contains("flux_capacitor"));
}

TEST_CASE(
    "an unknown model_type with a standard decoder's fields: generic lowering, refused by --strict",
    "[transformer][config]") {
  json j = read("samples/configs/llama-2-7b/config.json");
  j["model_type"] = "my_llama";
  TransformerConfig c = parse(j);
  CHECK_FALSE(c.verified);
  Analysis a = analyze(c, Workload::prefill, 8);
  CHECK(has_note(a, "generic decoder lowering (model_type my_llama not verified)"));
  CHECK(a.transformer->params_total ==
        6738415616);  // Llama-2-7B's published count: the fields say it all
  CHECK_THROWS_WITH(analyze(c, Workload::prefill, 8, true),
                    Catch::Contains("model_type my_llama is not verified"));
}

TEST_CASE("contradictory or missing fields name the field", "[transformer][config][errors]") {
  json base = read("samples/configs/llama-2-7b/config.json");
  auto fails = [&](std::function<void(json&)> edit, const std::string& needle) {
    json j = base;
    edit(j);
    INFO(j.dump().substr(0, 200));
    CHECK_THROWS_WITH(parse(j), Catch::Contains(needle));
  };
  fails(
      [](json& j) {
        j["num_attention_heads"] = 48;
        j.erase("head_dim");
      },
      "hidden_size (4096) is not divisible by num_attention_heads (48) and head_dim is not given");
  fails(
      [](json& j) {
        j["layer_types"] = json::array({"full_attention", "sliding_attention"});
      },
      "key 'layer_types' has 2 entries; num_hidden_layers is 32");
  fails(
      [](json& j) {
        j["layer_types"] = std::vector<std::string>(32, "full_attention");
        j["layer_types"][3] = "ring_attention";
      },
      "entry 3 is 'ring_attention'");
  fails([](json& j) { j["layer_types"] = std::vector<std::string>(32, "sliding_attention"); },
        "key 'sliding_window' is not set, but layer 0 is sliding_attention");
  fails(
      [](json& j) {
        j["num_local_experts"] = 8;
        j["num_experts_per_tok"] = 9;
      },
      "num_experts_per_tok (9) exceeds the number of experts (8)");
  fails([](json& j) { j["num_local_experts"] = 8; }, "missing required key 'num_experts_per_tok'");
  fails([](json& j) { j.erase("intermediate_size"); }, "missing required key 'intermediate_size'");
  fails([](json& j) { j["num_key_value_heads"] = 5; },
        "num_attention_heads (32) is not divisible by num_key_value_heads (5)");
  fails(
      [](json& j) {
        j["quantization_config"] = {{"quant_method", "eetq"}};
      },
      "quant_method' 'eetq' is not a method rooflens knows");
  fails([](json& j) { j["quantization_config"] = {{"bits", 4}}; }, "key 'quant_method' is missing");
  fails(
      [](json& j) {
        j["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 3}};
      },
      "key 'bits' is 3");
  fails([](json& j) { j["no_rope_layers"] = {1, 0}; }, "key 'no_rope_layers' has 2 entries");
  fails([](json& j) { j["partial_rotary_factor"] = 1.5; }, "partial_rotary_factor' is 1.5");
}

TEST_CASE("a context beyond max_position_embeddings is a warning and caps the largest context",
          "[transformer][config]") {
  TransformerConfig c =
      load_transformer_config(data_path("samples/configs/llama-2-7b/config.json"));
  Analysis short_run = analyze(c, Workload::decode, 1000);
  // Memory alone would fit 136,450 tokens of Llama-2-7B's cache; the model states 4096.
  CHECK(short_run.transformer->memory.max_context == 4096);
  CHECK(short_run.transformer->memory.context_limit == 4096);
  CHECK(has_note(short_run, "largest context capped at the model's stated limit 4096"));
  Analysis long_run = analyze(c, Workload::decode, 8191);
  CHECK(has_note(long_run,
                 "8192 tokens exceed max_position_embeddings 4096 (beyond the trained context)"));
  CHECK_THROWS_WITH(analyze(c, Workload::decode, 8191, true),
                    Catch::Contains("--strict: 8192 tokens exceed"));
  // gpt-oss: yarn scaling states 32 x 4096 = 131,072, as max_position_embeddings does.
  TransformerConfig oss =
      load_transformer_config(data_path("tests/data/configs/gpt_oss/config.json"));
  CHECK(oss.rope_stated_limit == 131072);
  CHECK(oss.context_limit() == 131072);
}

TEST_CASE("quantization_config: gpt-oss-20b's mxfp4 experts weigh what its checkpoint index says",
          "[transformer][config][quantization]") {
  TransformerConfig c =
      load_transformer_config(data_path("tests/data/configs/gpt_oss/config.json"));
  REQUIRE(c.quantization);
  CHECK(c.quantization->method == "mxfp4");
  TransformerOptions o;
  o.lowering.seq = 8;
  o.lowering.quantization = c.quantization;
  Analysis a = analyze_transformer(c, o);
  // openai/gpt-oss-20b's model.safetensors.index.json states total_size 13,761,264,768 bytes. By
  // hand: experts 24 x 32 x 3 x 2880^2 fp4 + one e8m0 scale per 32 = 10,149,027,840; their bf16
  // biases 24 x 32 x 8640 x 2; attention (with biases and sinks), routers, norms, embeddings
  // and lm_head in bf16.
  int64_t experts = 24LL * 32 * 3 * (2880LL * 2880 / 2 + 2880LL * 2880 / 32);
  int64_t expert_bias = 24LL * 32 * (5760 + 2880) * 2;
  int64_t attention =
      24LL * (2880LL * 4096 * 2 + 2880LL * 512 * 2 + 4096 + 2 * 512 + 2880 + 64) * 2;
  int64_t other = 24LL * (2880 * 32 + 32 + 2 * 2880) * 2 + 2LL * 201088 * 2880 * 2 + 2880 * 2;
  CHECK(experts + expert_bias + attention + other == 13761264768);
  int64_t rope_tables =
      2LL * 8 * 32 * 2;  // cos/sin rows of the 8 positions: buffers, not in a checkpoint
  CHECK(a.totals.weight_bytes - rope_tables == 13761264768);
  CHECK(a.transformer->params_total == 20914757184);  // KerasHub's count of gpt-oss-20b
  const NodeResult& q = node_named(a, "model.layers.0.self_attn.q_proj");
  CHECK(q.roof.unit == "tensor bf16");  // attention is not converted
  // Each flag still overrides: --weights int4 quantizes every linear layer (int4 + fp16 scales).
  QuantizationSpec flag = flag_quantization(DType::i4, 128);
  CHECK(quantized_storage(flag, 2880, 4096).aux[0].shape == Shape{23, 4096});
  CHECK(glob_contains("model.layers.*.self_attn", "model.layers.7.self_attn.q_proj"));
  CHECK_FALSE(glob_contains("model.layers.*.self_attn", "model.layers.7.mlp.experts"));
}

TEST_CASE(
    "quantization_config: GPTQ, AWQ, fp8 blocks and bitsandbytes store what their formats store",
    "[transformer][config][quantization]") {
  auto spec = [](json q) {
    json j = read("samples/configs/llama-2-7b/config.json");
    j["quantization_config"] = q;
    return *parse(j).quantization;
  };
  // GPTQ 4-bit g128 with act-order: int4 weights, fp16 scales and int4 zeros per group, int32
  // g_idx.
  QuantizedStorage g = quantized_storage(
      spec({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", true}}), 4096,
      11008);
  CHECK(g.weight == DType::i4);
  REQUIRE(g.aux.size() == 3);
  CHECK(g.aux[0].shape == Shape{32, 11008});
  CHECK(g.aux[1].dtype == DType::i4);
  CHECK(g.aux[2].shape == Shape{4096});
  // AWQ without zero points: scales only.
  CHECK(quantized_storage(
            spec({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 64}, {"zero_point", false}}),
            4096, 4096)
            .aux.size() == 1);
  // DeepSeek-V3's fp8: one fp32 scale per 128 x 128 block; activations quantized too (W8A8).
  QuantizationSpec fp8 = spec({{"quant_method", "fp8"},
                               {"fmt", "e4m3"},
                               {"activation_scheme", "dynamic"},
                               {"weight_block_size", {128, 128}}});
  CHECK(fp8.dynamic_activations);
  QuantizedStorage f = quantized_storage(fp8, 7168, 18432);
  CHECK(f.weight == DType::f8e4m3fn);
  CHECK(f.aux[0].shape == Shape{56, 144});
  // bitsandbytes nf4 with double quantization: an 8-bit absmax per 64 weights, an fp32 per 256 of
  // those.
  QuantizedStorage b = quantized_storage(spec({{"quant_method", "bitsandbytes"},
                                               {"load_in_4bit", true},
                                               {"bnb_4bit_quant_type", "nf4"},
                                               {"bnb_4bit_use_double_quant", true}}),
                                         4096, 4096);
  CHECK(b.aux[0].shape == Shape{4096 * 4096 / 64});
  CHECK(b.aux[1].shape == Shape{4096 * 4096 / 64 / 256});
  QuantizationSpec skip = spec({{"quant_method", "bitsandbytes"},
                                {"load_in_8bit", true},
                                {"llm_int8_skip_modules", {"lm_head", "mlp.down_proj"}}});
  CHECK_FALSE(quantizes(skip, "model.layers.3.mlp.down_proj", false));
  CHECK(quantizes(skip, "model.layers.3.mlp.up_proj", false));
}

TEST_CASE(
    "a Hugging Face model directory: config.json, and the safetensors index checks the weights",
    "[transformer][config]") {
  fs::path dir = scratch_dir("hfdir") / "gpt-oss-20b";
  fs::create_directories(dir);
  fs::copy_file(data_path("tests/data/configs/gpt_oss/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  auto index = [&](int64_t total) {
    json idx = {{"metadata", {{"total_size", total}}},
                {"weight_map",
                 {{"model.embed_tokens.weight", "model-00002-of-00002.safetensors"},
                  {"lm_head.weight", "model-00002-of-00002.safetensors"}}}};
    std::ofstream(dir / "model.safetensors.index.json") << idx.dump();
  };
  index(13761264768);
  TransformerConfig c = load_transformer_config(dir.string());
  REQUIRE(c.checkpoint);
  CHECK(c.checkpoint->tensors == 2);
  CHECK(c.checkpoint->shards_missing == 1);
  TransformerOptions o;
  o.lowering.quantization = c.quantization;
  Analysis a = analyze_transformer(c, o);
  CHECK(has_note(a, "13.761 GB; rooflens' weights 13.761 GB (agree)"));
  // The same directory read as bf16 weights: the index disagrees, and the report says so.
  Analysis bf16 = analyze_transformer(c, TransformerOptions{});
  CHECK(has_note(bf16, "MISMATCH"));
  // A shard's header: 8-byte length, then JSON with each tensor's dtype and shape.
  fs::path tiny = scratch_dir("hfdir") / "tiny";
  fs::create_directories(tiny);
  json cfg = read("samples/configs/llama-2-7b/config.json");
  cfg["num_hidden_layers"] = 1;
  cfg["vocab_size"] = 64;
  cfg["hidden_size"] = 32;
  cfg["intermediate_size"] = 64;
  cfg["num_attention_heads"] = 4;
  cfg["num_key_value_heads"] = 4;
  cfg["head_dim"] = 8;
  std::ofstream(tiny / "config.json") << cfg.dump();
  // 64x32 embed and lm_head, four 32x32 attention projections, three 32x64 MLP matrices, 3 norms
  // of 32.
  json header = {
      {"model.embed_tokens.weight",
       {{"dtype", "F16"}, {"shape", {64, 32}}, {"data_offsets", {0, 0}}}},
      {"lm_head.weight", {{"dtype", "F16"}, {"shape", {64, 32}}, {"data_offsets", {0, 0}}}},
      {"model.layers.0.attn", {{"dtype", "F16"}, {"shape", {4, 32, 32}}, {"data_offsets", {0, 0}}}},
      {"model.layers.0.mlp", {{"dtype", "F16"}, {"shape", {3, 32, 64}}, {"data_offsets", {0, 0}}}},
      {"model.norms", {{"dtype", "F16"}, {"shape", {3, 32}}, {"data_offsets", {0, 0}}}}};
  std::string h = header.dump();
  std::ofstream shard(tiny / "model.safetensors", std::ios::binary);
  for (int i = 0; i < 8; ++i) shard.put(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  shard << h;
  shard.close();
  TransformerConfig t = load_transformer_config(tiny.string());
  REQUIRE(t.checkpoint);
  CHECK(t.checkpoint->header_elements == 2 * 64 * 32 + 4 * 32 * 32 + 3 * 32 * 64 + 3 * 32);
  Analysis ta = analyze_transformer(t, TransformerOptions{});
  CHECK(ta.transformer->params_total == t.checkpoint->header_elements);
  CHECK_FALSE(has_note(ta, "MISMATCH"));  // same count, float16 as the config says
  cfg["dtype"] = "bfloat16";
  cfg["intermediate_size"] = 96;
  std::ofstream(tiny / "config.json") << cfg.dump();
  Analysis off = analyze_transformer(load_transformer_config(tiny.string()), TransformerOptions{});
  CHECK(has_note(off,
                 "checkpoint weights are float16 but the config's dtype is bfloat16 (MISMATCH)"));
  CHECK(has_note(off, "weight elements, config: "));
  CHECK_THROWS_WITH(load_transformer_config(scratch_dir("hfdir").string()),
                    Catch::Contains("is a directory without a config.json"));
}
