// Transformer configs: parameter counts against transformers' own counts and published figures,
// KV cache, FLOPs against 2 * params * tokens, decode, TP, MoE, quantization, the generation
// sweep and bad configs.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

TransformerConfig config(const std::string& name) {
  return load_transformer_config(data_path("samples/configs/" + name + "/config.json"));
}

Analysis run(const std::string& name, Workload w, int64_t batch, int64_t tokens,
             std::function<void(TransformerOptions&)> tweak = {}) {
  TransformerOptions o;
  o.workload = w;
  o.lowering.batch = batch;
  o.lowering.seq = tokens;
  o.lowering.context = tokens;
  TransformerConfig c = config(name);
  o.lowering.weights = o.lowering.activations = o.lowering.kv =
      c.dtype == "float16" ? DType::f16 : DType::bf16;
  if (tweak) tweak(o);
  return analyze_transformer(c, o);
}

int64_t sum_flops(const Analysis& a, const std::string& op) {
  int64_t s = 0;
  for (const auto& n : a.nodes)
    if (n.op == op) s += n.cost.flops;
  return s;
}

const NodeResult& first_op(const Analysis& a, const std::string& op) {
  for (const auto& n : a.nodes)
    if (n.op == op) return n;
  throw std::runtime_error("no " + op);
}

}  // namespace

TEST_CASE("params from config match transformers' own count for every sample", "[transformer]") {
  // tests/data/configs/transformers_reference.json: sum(p.numel()) of each model built on the
  // meta device by transformers 5.17 (scripts/gpu/export_configs.py).
  std::ifstream in(data_path("tests/data/configs/transformers_reference.json"));
  auto ref = nlohmann::json::parse(in);
  for (const char* name : {"llama-2-7b", "llama-3.1-8b", "llama-2-70b", "mistral-7b", "qwen2-7b",
                           "mixtral-8x7b", "gpt2", "bert-base-uncased", "deepseek-v3"}) {
    INFO(name);
    Analysis a = run(name, Workload::prefill, 1, 8);
    CHECK(a.transformer->params_total == ref[name]["params"].get<int64_t>());
    CHECK(a.coverage.not_costed == 0);
  }
}

TEST_CASE("published parameter counts and active params", "[transformer]") {
  CHECK(run("llama-2-7b", Workload::prefill, 1, 8).transformer->params_total == 6738415616);
  CHECK(run("llama-3.1-8b", Workload::prefill, 1, 8).transformer->params_total ==
        8030261248);  // Llama-3-8B dims
  CHECK(run("gpt2", Workload::prefill, 1, 8).transformer->params_total == 124439808);
  CHECK(run("bert-base-uncased", Workload::prefill, 1, 8).transformer->params_total == 109482240);
  auto mixtral = run("mixtral-8x7b", Workload::prefill, 1, 8).transformer;
  CHECK(mixtral->params_total == 46702792704);
  CHECK(mixtral->params_active == 12879925248);
}

TEST_CASE("KV cache per token: GQA, MLA latent, sliding window cap", "[transformer]") {
  CHECK(run("llama-2-7b", Workload::decode, 1, 100).transformer->kv_bytes_per_token ==
        524288);  // 2*32*32*128*2
  CHECK(run("llama-3.1-8b", Workload::decode, 1, 100, [](TransformerOptions& o) {
          o.lowering.kv = DType::f16;
        }).transformer->kv_bytes_per_token == 131072);  // 2*32*8*128*2
  // DeepSeek-V3: (512 latent + 64 rope) x 61 layers x 2 bytes = 70,272 ("70 KB per token").
  CHECK(run("deepseek-v3", Workload::decode, 1, 100).transformer->kv_bytes_per_token ==
        576 * 61 * 2);
  // Mistral keeps the last window - 1 = 4095 tokens, as transformers' DynamicSlidingWindowLayer
  // does (with the next token the 4096-token window is full).
  auto mistral = run("mistral-7b", Workload::decode, 2, 10000).transformer;
  CHECK(mistral->memory.cached_tokens == 4095);
  CHECK(mistral->kv_bytes_batch == 2LL * 4095 * 131072);
}

TEST_CASE("prefill FLOPs of a dense decoder are 2 * params * tokens plus attention",
          "[transformer]") {
  const int64_t tokens = 512;
  Analysis a = run("llama-2-7b", Workload::prefill, 1, tokens);
  // The embedding lookup is not a GEMM and norm weights are element-wise; everything else is.
  int64_t gemm_params = 6738415616 - 32000LL * 4096 - 65 * 4096;
  CHECK(sum_flops(a, "MatMul") == 2 * gemm_params * tokens);
  // 32 layers x 32 heads x causal pairs 512*513/2, each 2*128 + 1 + 5 + 2*128 FLOPs.
  int64_t attention = 32LL * 32 * (512 * 513 / 2) * 518;
  CHECK(sum_flops(a, "Attention") == attention);
  // The rest (norms, rope, SiLU, residuals) is documented element-wise work: under 1%.
  double rest = static_cast<double>(a.totals.flops - 2 * gemm_params * tokens - attention);
  CHECK(rest > 0);
  CHECK(rest / static_cast<double>(a.totals.flops) < 0.01);
  CHECK(*first_op(a, "Attention").cost.dense_flops == 32LL * 512 * 512 * 518);
}

TEST_CASE("decode attention reads the whole KV cache", "[transformer]") {
  Analysis a = run("llama-2-7b", Workload::decode, 2, 1000);
  const NodeResult& attn = first_op(a, "Attention");
  int64_t cache = 2LL * 2 * 32 * 1000 * 128 * 2;  // K and V, batch 2, 32 heads, fp16
  int64_t new_qkv = 3LL * 2 * 4096 * 2;
  CHECK(attn.cost.read_act == cache + new_qkv);
  CHECK(attn.cost.flops == 2LL * 32 * 1001 * 518);
  CHECK(attn.roof.bound == Bound::memory);
}

TEST_CASE("a decode step writes its keys and values into the cache before attending",
          "[transformer]") {
  // Llama-2-7B, batch 2: the new token's K and V rows (32 heads x 128, fp16) read and written once
  // by one kernel per layer; prefill (no cache input) and MLA's one latent likewise by hand.
  auto kv_writes = [](const Analysis& a) {
    std::vector<const NodeResult*> out;
    for (const auto& n : a.nodes)
      if (n.name.size() > 9 && n.name.substr(n.name.size() - 9) == ".kv_write") out.push_back(&n);
    return out;
  };
  Analysis decode = run("llama-2-7b", Workload::decode, 2, 1000);
  auto w = kv_writes(decode);
  REQUIRE(w.size() == 32);
  CHECK(w[0]->cost.read_act == 2LL * 2 * 4096 * 2);
  CHECK(w[0]->cost.written == 2LL * 2 * 4096 * 2);
  CHECK(w[0]->cost.kernel.memory == MemoryKernel::copy);
  CHECK(kv_writes(run("llama-2-7b", Workload::prefill, 2, 1000)).empty());
  // DeepSeek-V3: the compressed latent (512) and the shared rope key (64), one row a token.
  Analysis ds = run("deepseek-v3", Workload::decode, 1, 100);
  auto mla = kv_writes(ds);
  REQUIRE_FALSE(mla.empty());
  CHECK(mla[0]->cost.written == (512 + 64) * 2);
}

TEST_CASE("naive attention materializes the scores", "[transformer]") {
  Analysis a = run("llama-2-7b", Workload::prefill, 1, 256,
                   [](TransformerOptions& o) { o.lowering.attention = AttentionImpl::naive; });
  const NodeResult& scores = node_named(a, "model.layers.0.self_attn.scores");
  CHECK(scores.cost.written == 32LL * 256 * 256 * 2);  // S x S per head, fp16
  CHECK(node_named(a, "model.layers.0.self_attn.softmax").cost.bytes() == 2 * 32LL * 256 * 256 * 2);
  CHECK(*scores.cost.macs == 32LL * 256 * 256 * 128);  // dense: the mask is applied after
}

TEST_CASE("tensor parallelism shards heads and FFN and adds two all-reduces per layer",
          "[transformer]") {
  Analysis a = run("llama-2-7b", Workload::prefill, 1, 128,
                   [](TransformerOptions& o) { o.lowering.tp = 2; });
  const auto& t = *a.transformer;
  CHECK(t.params_total == 6738415616);
  // Per GPU: attention and MLP halved, vocab-parallel embedding and lm_head halved, norms whole.
  CHECK(t.params_per_gpu == (6738415616 - 65 * 4096) / 2 + 65 * 4096);
  CHECK(t.allreduces == 2 * 32 + 1);  // o_proj and down_proj in every layer, and the embedding
  const NodeResult& ar = node_named(a, "model.layers.0.self_attn.all_reduce");
  CHECK(ar.cost.collective_bytes == 128 * 4096 * 2);
  CHECK(node_named(a, "model.layers.0.self_attn.q_proj").output_shapes[0] == "[1,128,2048]");
}

TEST_CASE("MoE decode reads only the experts a batch touches", "[transformer]") {
  auto expert_bytes = [](int64_t batch) {
    Analysis a = run("mixtral-8x7b", Workload::decode, batch, 100);
    return node_named(a, "model.layers.0.mlp.experts").cost.read_weight;
  };
  int64_t all = 3LL * 8 * 4096 * 14336 * 2;
  CHECK(expert_bytes(1) == all / 4);                     // one token: its 2 of 8 experts
  CHECK(expert_bytes(64) == Approx(all).epsilon(1e-6));  // 8 * (1 - 0.75^64): all of them
}

TEST_CASE("weight-only int4 moves int4 bytes and scales but computes at the 16-bit roof",
          "[transformer]") {
  Analysis a = run("llama-2-7b", Workload::decode, 1, 100, [](TransformerOptions& o) {
    o.lowering.weights = DType::i4;
    o.lowering.group_size = 128;
  });
  const NodeResult& q = node_named(a, "model.layers.0.self_attn.q_proj");
  CHECK(q.cost.read_weight ==
        4096LL * 4096 / 2 + 32 * 4096 * 2);  // packed int4 + fp16 scale per 128 rows
  CHECK(q.roof.unit == "tensor fp16");
  CHECK(q.params == 4096LL * 4096);
  Analysis fp8 = run("llama-2-7b", Workload::prefill, 1, 512, [](TransformerOptions& o) {
    o.lowering.weights = o.lowering.activations = DType::f8e4m3fn;
  });
  CHECK(node_named(fp8, "model.layers.0.mlp.up_proj").roof.unit == "tensor fp8");
}

TEST_CASE("the generation sweep costs every decode step as the context grows", "[transformer]") {
  Analysis g = run("llama-2-7b", Workload::generate, 4, 0, [](TransformerOptions& o) {
    o.prompt = 512;
    o.gen = 64;
  });
  const GenerationSweep& s = *g.transformer->generation;
  CHECK(s.step_s.size() == 63);
  CHECK(s.ttft_s == Approx(g.totals.predicted_s));  // the prompt's prefill
  CHECK(s.tpot_last_s > s.tpot_first_s);
  CHECK(s.tokens_per_s == Approx(4.0 * 64 / s.total_s));
  // The last step must equal a decode analysed from scratch at that context (prompt + 62 cached).
  Analysis last = run("llama-2-7b", Workload::decode, 4, 512 + 62);
  CHECK(s.tpot_last_s == Approx(last.totals.predicted_s).epsilon(1e-9));
  Analysis first = run("llama-2-7b", Workload::decode, 4, 512);
  CHECK(s.tpot_first_s == Approx(first.totals.predicted_s).epsilon(1e-9));
}

TEST_CASE("the generation sweep re-costs each kind of layer: sliding and full, recurrent",
          "[transformer]") {
  // gpt-oss alternates 128-token windows with full attention; its sliding layers stop growing at
  // 127 cached tokens. Each step must equal a decode analysed from scratch at that context.
  for (const char* family : {"gpt_oss", "minimax", "mamba", "jamba"}) {
    INFO(family);
    TransformerConfig c = load_transformer_config(
        data_path(std::string("tests/data/configs/") + family + "/config.json"));
    auto analyze = [&](Workload w, int64_t context, int64_t prompt = 0, int64_t gen = 0) {
      TransformerOptions o;
      o.workload = w;
      o.lowering.context = context;
      o.prompt = prompt;
      o.gen = gen;
      return analyze_transformer(c, o);
    };
    Analysis g = analyze(Workload::generate, 0, 100, 40);
    const GenerationSweep& s = *g.transformer->generation;
    CHECK(s.tpot_first_s ==
          Approx(analyze(Workload::decode, 100).totals.predicted_s).epsilon(1e-9));
    CHECK(s.tpot_last_s ==
          Approx(analyze(Workload::decode, 100 + 38).totals.predicted_s).epsilon(1e-9));
  }
}

TEST_CASE("the memory plan says whether it fits and the largest batch", "[transformer]") {
  auto t = run("llama-2-7b", Workload::decode, 8, 4096).transformer;
  const MemoryFit& m = t->memory;
  CHECK(m.fits);
  CHECK(m.kv_cache_bytes == 8LL * 4097 * 524288);
  int64_t per_seq = 4097LL * 524288 + (m.activation_bytes + 7) / 8;
  CHECK(m.max_batch * per_seq <= m.device_bytes - m.weight_bytes);
  CHECK((m.max_batch + 1) * per_seq > m.device_bytes - m.weight_bytes);
  CHECK_FALSE(run("deepseek-v3", Workload::decode, 1, 10).transformer->memory.fits);
}

TEST_CASE("module names follow the framework", "[transformer]") {
  Analysis l = run("llama-2-7b", Workload::prefill, 1, 8);
  for (const char* n : {"model.embed_tokens", "model.layers.3.self_attn.q_proj",
                        "model.layers.3.mlp.down_proj", "model.norm", "lm_head"})
    CHECK_NOTHROW(node_named(l, n));
  Analysis d = run("deepseek-v3", Workload::prefill, 1, 8);
  for (const char* n : {"model.layers.0.self_attn.kv_a_proj_with_mqa",
                        "model.layers.0.mlp.gate_proj", "model.layers.3.mlp.experts",
                        "model.layers.3.mlp.shared_experts.down_proj", "model.layers.3.mlp.gate"})
    CHECK_NOTHROW(node_named(d, n));
  CHECK_NOTHROW(node_named(run("gpt2", Workload::prefill, 1, 8), "transformer.h.11.mlp.c_fc"));
}

TEST_CASE("bad configs are input errors naming the problem", "[transformer][errors]") {
  auto bad = [](const std::string& json) { return parse_transformer_config(json, "config.json"); };
  CHECK_THROWS_WITH(bad("{\"model_type\": \"llama\", "), Catch::Contains("malformed JSON"));
  CHECK_THROWS_WITH(
      bad(R"({"model_type": "llama", "vocab_size": 10, "num_hidden_layers": 2, "num_attention_heads": 4})"),
      Catch::Contains("missing required key 'hidden_size'"));
  CHECK_THROWS_WITH(bad(R"({"model_type": "rwkv"})"),
                    Catch::Contains("model_type 'rwkv' is not one rooflens knows"));
  std::string base =
      R"("vocab_size": 100, "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 64, "max_position_embeddings": 64)";
  CHECK_THROWS_WITH(
      bad(R"({"model_type": "llama", "hidden_size": 64, )" + base + "}"),
      Catch::Contains("hidden_size (64) is not divisible by num_attention_heads (3)"));
  CHECK_THROWS_WITH(bad(R"({"model_type": "llama", "hidden_size": "4096", )" + base + "}"),
                    Catch::Contains("'hidden_size' must be an integer"));
  CHECK_THROWS_WITH(
      bad(R"({"model_type": "llama", "hidden_size": 96, "vocab_size": 100, "num_hidden_layers": 1000000000, "num_attention_heads": 3, "intermediate_size": 64, "max_position_embeddings": 64})"),
      Catch::Contains("num_hidden_layers' is 1000000000, beyond the limit"));
  TransformerOptions o;
  o.lowering.tp = 3;
  CHECK_THROWS_WITH(analyze_transformer(config("llama-2-7b"), o),
                    Catch::Contains("--tp 3 does not divide num_attention_heads 32"));
}
