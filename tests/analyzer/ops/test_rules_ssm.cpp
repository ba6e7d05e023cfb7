// Rules for state-space and linear-attention mixers, and the attention options lowered configs
// set (chunks, soft-capping, sinks, ALiBi), each against a hand count.
#include <catch2/catch.hpp>

#include "analyzer/core/formulas.hpp"
#include "analyzer/ir/graph_builder.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("SelectiveScan: 8 FLOPs per state element and 11 per channel, inputs read once",
          "[rules][ssm]") {
  auto scan = [](bool with_state) {
    GraphBuilder b("t");
    int64_t S = with_state ? 1 : 4;
    int x = b.input("x", DType::bf16, {1, S, 8}), dt = b.input("dt", DType::bf16, {1, S, 8}),
        z = b.input("z", DType::bf16, {1, S, 8});
    int bm = b.input("B", DType::bf16, {1, S, 2}), cm = b.input("C", DType::bf16, {1, S, 2});
    int a = b.weight("A", DType::bf16, {8, 2}), d = b.weight("D", DType::bf16, {8});
    int state = with_state ? b.input("state", DType::f32, {1, 8, 2}) : -1;
    return analyze_built(
        b, b.op("SelectiveScan", "scan", {x, dt, a, bm, cm, d, z, state}, {}, "rooflens"));
  };
  Analysis prefill = scan(false);
  const NodeCost& c = prefill.nodes[0].cost;
  CHECK(c.flops == 4 * 8 * (8 * 2 + 11));
  CHECK(c.read_act == 3 * 32 * 2 + 2 * 8 * 2);  // x, dt, z; B, C
  CHECK(c.read_weight == (16 + 8) * 2);         // A, D
  CHECK(c.written == 32 * 2);
  CHECK(prefill.totals.params == 16 + 8);
  Analysis decode = scan(true);
  const NodeCost& d = decode.nodes[0].cost;
  CHECK(d.flops == 8 * (8 * 2 + 11));
  CHECK(d.read_act == 3 * 8 * 2 + 2 * 2 * 2 + 16 * 4);  // + the fp32 state
  CHECK(d.written == 8 * 2 + 16 * 4);                   // y and the state written back
}

TEST_CASE("CausalConv1d: K multiply-adds, bias and SiLU per output", "[rules][ssm]") {
  GraphBuilder b("t");
  int x = b.input("x", DType::bf16, {1, 4, 8});
  int w = b.weight("w", DType::bf16, {8, 4}), bias = b.weight("b", DType::bf16, {8});
  Analysis a = analyze_built(b, b.op("CausalConv1d", "conv", {x, w, bias, -1},
                                     {{"activation", string_attr("silu")}}, "rooflens"));
  const NodeCost& c = a.nodes[0].cost;
  CHECK(c.flops == 32 * (2 * 4 + 1 + 5));
  CHECK(*c.macs == 32 * 4);
  CHECK(c.read_weight == (32 + 8) * 2);
  CHECK(a.totals.params == 40);
}

TEST_CASE("LinearAttention: quadratic inside blocks, through the d x d state across and per token",
          "[rules][ssm]") {
  auto lightning = [](int64_t S, bool state) {
    GraphBuilder b("t");
    int q = b.input("q", DType::bf16, {1, S, 8}), k = b.input("k", DType::bf16, {1, S, 8}),
        v = b.input("v", DType::bf16, {1, S, 8});
    int st = state ? b.input("state", DType::bf16, {1, 2, 4, 4}) : -1;
    return analyze_built(
        b, b.op("LinearAttention", "la", {q, k, v, st},
                {{"num_heads", int_attr(2)}, {"block_size", int_attr(4)}}, "rooflens"));
  };
  // 2 heads of d=4, 6 tokens in blocks of 4 and 2. A block of L: products 4 d L^2 + 4 d^2 L, then
  // the decay mask L^2, q and k decays and the sum 3 L d, the state's decay and add 2 d^2.
  Analysis p = lightning(6, false);
  int64_t block4 = 4 * 4 * 16 + 4 * 16 * 4 + (16 + 3 * 16 + 2 * 16);
  int64_t block2 = 4 * 4 * 4 + 4 * 16 * 2 + (4 + 3 * 8 + 2 * 16);
  CHECK(p.nodes[0].cost.flops == 2 * (block4 + block2));
  CHECK(*p.nodes[0].cost.macs == (512 + 192) * 2 / 2);
  // One token against the state: K^T V, decay, add and q times the state: 6 d^2 per head.
  Analysis d = lightning(1, true);
  CHECK(d.nodes[0].cost.flops == 2 * 6 * 16);
  CHECK(*d.nodes[0].cost.macs == 2 * 2 * 16);
  CHECK(d.nodes[0].cost.written == 8 * 2 + 32 * 2);  // output and the state
}

TEST_CASE("attention options: chunks, soft-capping, sinks and ALiBi", "[rules][ssm][attention]") {
  // Chunks of 2 over 4 positions: the queries see 1, 2, 1, 2 keys.
  CHECK(chunked_attention_pairs(4, 4, 2) == 6);
  CHECK(chunked_attention_pairs(1, 10, 4) == 2);  // position 9 is second in its chunk
  CHECK(chunked_attention_pairs(3, 10, 4) ==
        4 + 1 + 2);  // positions 7, 8, 9: 4th, 1st, 2nd of their chunks
  auto gqa = [](std::map<std::string, Attribute> extra, bool sinks) {
    GraphBuilder b("t");
    int q = b.input("q", DType::bf16, {1, 4, 16}), k = b.input("k", DType::bf16, {1, 4, 8}),
        v = b.input("v", DType::bf16, {1, 4, 8});
    std::vector<int> in{q, k, v, -1, -1, b.input("seqlens", DType::i32, {1})};
    if (sinks) {
      in.resize(12, -1);
      in[11] = b.weight("sinks", DType::bf16, {2});
    }
    std::map<std::string, Attribute> attrs{{"num_heads", int_attr(2)},
                                           {"kv_num_heads", int_attr(1)}};
    attrs.insert(extra.begin(), extra.end());
    return analyze_built(b, b.op("GroupQueryAttention", "attn", in, attrs, "com.microsoft"));
  };
  int64_t per_score = 2 * 8 + 1 + 5 + 2 * 8;
  Analysis chunked = gqa({{"chunk_size", int_attr(2)}}, false);
  CHECK(chunked.nodes[0].cost.flops == 2 * 6 * per_score);
  CHECK(*chunked.nodes[0].cost.dense_flops == 2 * 16 * per_score);
  // Soft-capping adds a divide, tanh and multiply per score; sinks one softmax column per row.
  Analysis capped = gqa({{"softcap", float_attr(50.0)}}, true);
  CHECK(capped.nodes[0].cost.flops == 2 * 10 * (per_score + 3) + 2 * 4 * 5);
  CHECK(capped.totals.params == 2);  // the sink logits are parameters
  Analysis alibi = gqa({{"alibi", int_attr(1)}}, false);
  CHECK(alibi.nodes[0].cost.flops == 2 * 10 * (per_score + 2));
  AttentionDims d;
  d.batch = 1, d.q_heads = 2, d.kv_heads = 1, d.q_len = 4, d.kv_len = 4,
  d.head_dim_qk = d.head_dim_v = 8, d.causal = true;
  CHECK(attention_matmul_flops(d, false) == 2 * 10 * 32);
  CHECK(attention_matmul_flops(d, true) == 2 * 16 * 32);
}
