// Rules for what lowered transformer configs use beyond core ONNX, by hand.
#include <catch2/catch.hpp>

#include "analyzer/core/formulas.hpp"
#include "analyzer/ir/graph_builder.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("Swish (SiLU) counts sigmoid and a multiply", "[rules][transformer]") {
  GraphBuilder b("t");
  int x = b.input("x", DType::bf16, {4, 8});
  Analysis a = analyze_built(b, b.op("Swish", "y", {x}));
  CHECK(a.nodes[0].cost.flops == 32 * 5);
  CHECK(a.nodes[0].cost.bytes() == 2 * 64);
}

TEST_CASE("RotaryEmbedding rotates rot_dim of each head and reads the cache rows it uses",
          "[rules][transformer]") {
  GraphBuilder b("t");
  int x = b.input("q", DType::f16, {2, 3, 4 * 16});  // B=2, S=3, 4 heads of 16
  int pos = b.input("pos", DType::i64, {2, 3});
  int cos = b.weight("cos", DType::f16, {100, 4}, false),
      sin = b.weight("sin", DType::f16, {100, 4}, false);
  Analysis a =
      analyze_built(b, b.op("RotaryEmbedding", "y", {x, pos, cos, sin},
                            {{"num_heads", int_attr(4)}, {"rotary_embedding_dim", int_attr(8)}},
                            "com.microsoft"));
  const NodeCost& c = a.nodes[0].cost;
  CHECK(c.flops == 6 * 4 * 8 * 3);  // 6 tokens x 4 heads x 8 rotated dims x 3
  CHECK(c.read_act == 6 * 64 * 2 + 6 * 8);
  CHECK(c.read_weight == 2 * 6 * 4 * 2);  // cos and sin: 6 tokens x rot/2 values
  CHECK(c.written == 6 * 64 * 2);
  CHECK(a.totals.params == 0);  // rope tables are not parameters
}

TEST_CASE("MoE: top-k FLOPs, and only the touched experts' weights are read",
          "[rules][transformer]") {
  auto moe = [](int64_t tokens) {
    GraphBuilder b("t");
    int x = b.input("x", DType::bf16, {tokens, 8});
    int probs = b.input("p", DType::bf16, {tokens, 4});
    int fc1 = b.weight("fc1", DType::bf16, {4, 8, 16}),
        fc2 = b.weight("fc2", DType::bf16, {4, 16, 8});
    int fc3 = b.weight("fc3", DType::bf16, {4, 8, 16});
    return analyze_built(b, b.op("MoE", "y", {x, probs, fc1, -1, fc2, -1, fc3},
                                 {{"k", int_attr(2)}}, "com.microsoft"));
  };
  Analysis one = moe(1);
  const NodeCost& c = one.nodes[0].cost;
  // Per assignment: 3 GEMMs of 8x16 (2*3*128), silu 5 + gate 1 per inter (96), weighted sum 2*8.
  CHECK(c.flops == 2 * (768 + 96 + 16));
  CHECK(*c.macs == 2 * 3 * 128);
  CHECK(c.read_weight == 3 * 512 * 2 / 4 * 2);  // 2 of 4 experts touched: half of 3 x 512 x 2 bytes
  CHECK(one.totals.params == 3 * 512);
  // 64 tokens touch all four experts: 4 * (1 - 0.5^64).
  CHECK(moe(64).nodes[0].cost.read_weight == 3 * 512 * 2);
  CHECK(expected_distinct_experts(8, 2, 1) == Approx(2.0));
}

TEST_CASE("AllReduce takes NCCL's time over the device's fabric (link model)",
          "[rules][transformer]") {
  GraphBuilder b("t");
  int x = b.input("x", DType::bf16, {1, 1024, 4096});
  Analysis a = analyze_built(b, b.op("AllReduce", "ar", {x}, {{"ranks", int_attr(8)}}, "rooflens"));
  const NodeResult& n = a.nodes[0];
  int64_t bytes = 1024 * 4096 * 2;
  CHECK(n.cost.collective_bytes == bytes);
  CHECK(n.roof.bound == Bound::communication);
  // H100 SXM on NVSwitch: bus bandwidth 476 GB/s (nccl-tests issue #290, published for 8 GPUs);
  // 2*(7/8) of the data; the tree's 2*log2(8) = 6 steps of 1 us beat the ring's 14
  // (data/collectives.json, analyzer/hw/link_model.cpp).
  CHECK(n.roof.predicted == Approx(1.75 * bytes / 476e9 + 6e-6));
  // Over 4 GPUs the curve measured through NCCL answers (data/collectives.json, 4 x H200), at its
  // times after an L2 flush (kernel_cold_s): 8 MiB lies a third of the way from 4 MiB (40.77 us)
  // to 16 MiB (96.72 us).
  GraphBuilder b4("t");
  int x4 = b4.input("x", DType::bf16, {1, 1024, 4096});
  Analysis four =
      analyze_built(b4, b4.op("AllReduce", "ar", {x4}, {{"ranks", int_attr(4)}}, "rooflens"));
  CHECK(four.nodes[0].roof.predicted == Approx(40.77e-6 + (96.72e-6 - 40.77e-6) / 3));
}

TEST_CASE("AllToAll moves each GPU's rows over the fabric at NCCL's all-to-all time",
          "[rules][transformer]") {
  GraphBuilder b("t");
  int x = b.input("x", DType::bf16, {512, 4096});
  Analysis a = analyze_built(b, b.op("AllToAll", "a2a", {x}, {{"ranks", int_attr(4)}}, "rooflens"));
  const NodeResult& n = a.nodes[0];
  CHECK(n.cost.collective == Collective::all_to_all);
  CHECK(n.cost.collective_bytes == 512 * 4096 * 2);  // 4 MiB: the send buffer, nccl-tests' size
  CHECK(n.roof.bound == Bound::communication);
  CHECK(n.cost.flops == 0);
  // data/collectives.json's 4 x H200 all-to-all curve at 4 MiB, after an L2 flush: 24.00 us.
  CHECK(n.roof.predicted == Approx(24.00e-6));
  // Rows that four GPUs cannot share evenly, and one GPU, are refused.
  GraphBuilder odd("t");
  int y = odd.input("x", DType::bf16, {6, 4096});
  CHECK_THROWS_WITH(
      analyze_built(odd, odd.op("AllToAll", "a2a", {y}, {{"ranks", int_attr(4)}}, "rooflens")),
      Catch::Contains("first dim they divide"));
  GraphBuilder one("t");
  int z = one.input("x", DType::bf16, {8, 4096});
  CHECK_THROWS_WITH(
      analyze_built(one, one.op("AllToAll", "a2a", {z}, {{"ranks", int_attr(1)}}, "rooflens")),
      Catch::Contains("ranks >= 2"));
}
