// Encoder-decoder configs (T5, Flan-T5, BART, Whisper). Parameter counts are hand counts of each
// architecture, equal to the counts transformers publishes for the models (model.num_parameters());
// FLOPs and KV cache bytes of a t5-small decode step are hand counts.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "analyzer/transformers/config.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis run(const std::string& name, Workload w, int64_t seq, int64_t context = 0) {
  TransformerOptions o;
  o.workload = w;
  o.lowering.seq = seq;
  o.lowering.context = context;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
  return analyze_transformer(
      load_transformer_config(data_path("samples/configs/" + name + "/config.json")), o);
}

int64_t sum_flops(const Analysis& a, std::initializer_list<const char*> ops) {
  int64_t s = 0;
  for (const auto& n : a.nodes)
    for (const char* op : ops)
      if (n.op == op) s += n.cost.flops;
  return s;
}

bool has_node(const Analysis& a, const std::string& name) {
  for (const auto& n : a.nodes)
    if (n.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "encoder-decoder parameter counts equal the architectures' hand counts and transformers' "
    "published ones",
    "[transformer][encoder-decoder]") {
  // t5-small: shared 32128*512 = 16,449,536; encoder layer: q,k,v,o 4*512*512 + wi,wo 2*512*2048 +
  // 2 norms*512 = 3,146,752, x6 + relative bias 32*8 + final norm 512 = 18,881,280; decoder layer
  // adds EncDecAttention 4*512*512 and a norm: 4,195,840, x6 + 256 + 512 = 25,175,808. Total
  // 60,506,624 (transformers: 60,506,624).
  CHECK(run("t5-small", Workload::prefill, 8).transformer->params_total == 60506624);
  // flan-t5-small: inner 6*64 = 384; encoder layer 4*512*384 + wi_0,wi_1,wo 3*512*1024 + 2*512 =
  // 2,360,320, x8
  // + 32*6 + 512 = 18,883,264; decoder layer 2*786,432 + 1,572,864 + 3*512 = 3,147,264, x8 + 192 +
  // 512 = 25,178,816; shared and the untied lm_head 2*16,449,536. Total 76,961,152 (published for
  // google/flan-t5-small).
  CHECK(run("flan-t5-small", Workload::prefill, 8).transformer->params_total == 76961152);
  // bart-base: shared 50265*768 = 38,603,520; two position tables (1024+2)*768 = 787,968 each; two
  // layernorm_embedding 1536 each; encoder layer 4*(768*768+768) + 2*(768*3072) + 3072 + 768 +
  // 2*1536 = 7,087,872, x6; decoder layer + encoder_attn 2,362,368 + 1536 = 9,451,776, x6. Total
  // 139,420,416; final_logits_bias (50265) is a buffer, not counted (transformers: 139,420,416 and
  // that one buffer).
  CHECK(run("bart-base", Workload::prefill, 8).transformer->params_total == 139420416);
  // whisper-tiny: conv1 80*384*3 + 384 = 92,544; conv2 384*384*3 + 384 = 442,752; encoder positions
  // 1500*384 = 576,000 (a frozen nn.Embedding: counted); encoder layer 4*384*384 + 3*384 (k_proj
  // has no bias) + 2*384*1536 + 1536 + 384 + 2*768 = 1,774,080, x4; encoder norm 768; decoder
  // tokens 51865*384 = 19,916,160 (tied proj_out), positions 448*384 = 172,032, layer 1,774,080 +
  // 590,976 + 768 = 2,365,824, x4; norm 768. Total 37,760,640 (transformers: 37,760,640).
  CHECK(run("whisper-tiny", Workload::prefill, 8).transformer->params_total == 37760640);
}

TEST_CASE("a t5-small decode step: FLOPs and KV cache by hand", "[transformer][encoder-decoder]") {
  const int64_t S = 512, C = 100;
  Analysis a = run("t5-small", Workload::decode, S, C);
  // Matrices one decoder token touches: per layer SelfAttention q,k,v,o 4*512*512, EncDecAttention
  // q,o 2*512*512 (its k,v were projected at prefill), wi,wo 2*512*2048 = 3,670,016, x6 =
  // 22,020,096; the tied head 32128*512 = 16,449,536. Two FLOPs per weight.
  CHECK(sum_flops(a, {"MatMul", "com.microsoft.FusedMatMul"}) == 2 * (22020096 + 16449536));
  // Attention: 6 layers x 8 heads x (C+1 self keys + S cross keys) x (2*64 QK + 1 scale + 5 softmax
  // + 2*64 PV).
  const int64_t attention = 6LL * 8 * ((C + 1) + S) * 262;
  CHECK(sum_flops(a, {"Attention"}) == attention);
  double rest = static_cast<double>(a.totals.flops - 2 * (22020096 + 16449536) - attention);
  CHECK(rest >= 0);
  CHECK(rest / static_cast<double>(a.totals.flops) <
        0.01);  // norms, residuals, ReLU, the bias gather
  // KV cache after the step, bf16: K and V of 8 heads x 64 = 2,048 bytes a token a layer; self C+1
  // = 101 tokens and cross S = 512 tokens in each of 6 decoder layers.
  CHECK(a.transformer->kv_bytes_per_sequence == 2048LL * 6 * (101 + 512));
  CHECK(a.transformer->kv_bytes_per_token == 2048LL * 6);
  // The step runs only the decoder, but the whole model stays resident: all 60,506,624 parameters
  // (the hand count above), in bf16 2 bytes each.
  CHECK(a.transformer->params_total == 60506624);
  CHECK(a.transformer->memory.weight_bytes == 60506624LL * 2);
}

TEST_CASE("encoder-decoder phases: the encoder once at prefill, cross K/V projected only there",
          "[transformer][encoder-decoder]") {
  Analysis prefill = run("t5-small", Workload::prefill, 64);
  CHECK(has_node(prefill, "encoder.block.0.layer.0.SelfAttention.q"));
  CHECK(has_node(prefill, "decoder.block.0.layer.1.EncDecAttention.k"));
  CHECK(has_node(prefill, "decoder.block.5.layer.2.DenseReluDense.wo"));
  // Prefill's cache: the decoder's first token (self) and the 64 source tokens (cross), 6 layers.
  CHECK(prefill.transformer->kv_bytes_per_sequence == 2048LL * 6 * (1 + 64));
  Analysis decode = run("t5-small", Workload::decode, 64, 10);
  CHECK_FALSE(has_node(decode, "encoder.block.0.layer.0.SelfAttention.q"));
  CHECK_FALSE(has_node(decode, "decoder.block.0.layer.1.EncDecAttention.k"));
  CHECK(has_node(decode, "decoder.block.0.layer.1.EncDecAttention.q"));
  Analysis bart = run("bart-base", Workload::prefill, 64);
  CHECK(has_node(bart, "model.encoder.layers.0.self_attn.q_proj"));
  CHECK(has_node(bart, "model.decoder.layers.0.encoder_attn.k_proj"));
  Analysis whisper = run("whisper-tiny", Workload::prefill, 7);
  CHECK(has_node(whisper, "model.encoder.conv2"));
  CHECK(whisper.transformer->lowering.seq == 1500);  // 3000 mel frames halved; --seq does not apply
}

TEST_CASE("encoder-decoder generate: the encoder once then a decoder step per token",
          "[transformer][encoder-decoder]") {
  TransformerOptions o;
  o.workload = Workload::generate;
  o.prompt = 64;
  o.gen = 5;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
  TransformerConfig c = load_transformer_config(data_path("samples/configs/t5-small/config.json"));
  Analysis g = analyze_transformer(c, o);
  const GenerationSweep& s = *g.transformer->generation;
  // The first token is the prefill's (encoder over the 64-token prompt); the steps after it
  // attend to 1, 2, 3, 4 cached decoder tokens, each over the same 64 cross-cached source tokens.
  CHECK(s.ttft_s == Approx(run("t5-small", Workload::prefill, 64).totals.predicted_s));
  REQUIRE(s.step_s.size() == 4);
  CHECK(s.step_s.front() == Approx(run("t5-small", Workload::decode, 64, 1).totals.predicted_s));
  CHECK(s.step_s.back() == Approx(run("t5-small", Workload::decode, 64, 4).totals.predicted_s));
  // The cache when the 5th token is out: 5 decoder tokens and 64 source tokens, each 2 (K, V) x
  // 8 heads x 64 dims x 2 bytes = 2,048 B a token, in 6 layers.
  CHECK(g.transformer->kv_bytes_per_sequence == 2048LL * 6 * (5 + 64));
  CHECK(s.tokens_per_s == Approx(5.0 / s.total_s));
}

TEST_CASE("encoder-decoder: a bad T5 config is refused with one line",
          "[transformer][encoder-decoder]") {
  CHECK_THROWS_WITH(parse_transformer_config(
                        R"({"model_type": "t5", "vocab_size": 100, "d_model": 64, "d_ff": 128,
      "num_heads": 4, "num_layers": 2, "d_kv": 16, "feed_forward_proj": "gated-gelu-x"})",
                        "c.json"),
                    Catch::Contains("feed_forward_proj"));
}
