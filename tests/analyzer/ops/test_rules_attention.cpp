// Fused attention ops. Per executed score: 2*Dqk (QK^T) + 1 (scale) + 5 (softmax) + 2*Dv (PV).
#include <catch2/catch.hpp>

#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("com.microsoft Attention: packed QKV projection plus causal core", "[rules][attention]") {
  ModelBuilder b;
  b.import("com.microsoft", 1);
  b.input("x", DType::f32, {1, 4, 16})
      .weight("w", DType::f32, {16, 48})
      .weight("bias", DType::f32, {48});
  b.node("Attention", {"x", "w", "bias"}, {"y"},
         {{"num_heads", int64_t{2}}, {"unidirectional", int64_t{1}}}, "com.microsoft");
  b.output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[1,4,16]");
  // Projection: 4 tokens x 48 x 16 MACs, + 4*48 bias adds = 6336 FLOPs.
  // Core: head dim 8, per score 38; 2 heads x 10 causal pairs executed, 2 x 16 dense.
  CHECK(*y.cost.macs == 3072);
  CHECK(y.cost.flops == 6336 + 20 * 38);
  CHECK(*y.cost.dense_flops == 6336 + 32 * 38);
  CHECK(y.cost.note.find("causal") != std::string::npos);
}

TEST_CASE("GroupQueryAttention decode step reads the whole KV cache", "[rules][attention]") {
  ModelBuilder b;
  b.import("com.microsoft", 1);
  b.input("q", DType::f16, {2, 1, 32})
      .input("k", DType::f16, {2, 1, 8})
      .input("v", DType::f16, {2, 1, 8});
  b.input("pk", DType::f16, {2, 2, 9, 4})
      .input("pv", DType::f16, {2, 2, 9, 4})
      .input("seqlens", DType::i32, {2});
  b.int_scalar("total", 10);
  b.node("GroupQueryAttention", {"q", "k", "v", "pk", "pv", "seqlens", "total"},
         {"o", "present_k", "present_v"}, {{"num_heads", int64_t{8}}, {"kv_num_heads", int64_t{2}}},
         "com.microsoft");
  b.output("o").output("present_k").output("present_v");
  Analysis a = analyze_model(b);
  const NodeResult& o = node_named(a, "o");
  CHECK(o.output_shapes[0] == "[2,1,32]");
  CHECK(o.output_shapes[1] == "[2,2,10,4]");
  // 2 batch x 8 heads x 10 keys, per score 2*4 + 1 + 5 + 2*4 = 22.
  CHECK(o.cost.flops == 160 * 22);
  // Reads: q 64, k 16, v 16, past K and V 2*144 halves, seqlens 2 int32, total 1 int64.
  CHECK(o.cost.read_act == (64 + 16 + 16 + 288) * 2 + 8);
  CHECK(o.cost.read_weight == 8);
  CHECK(o.cost.written == (64 + 160 + 160) * 2);
}

TEST_CASE("ONNX Attention (opset 23) - 4-D - causal - GQA", "[rules][attention]") {
  ModelBuilder b(23);
  b.input("Q", DType::bf16, {1, 4, 6, 8})
      .input("K", DType::bf16, {1, 2, 6, 8})
      .input("V", DType::bf16, {1, 2, 6, 8});
  b.node("Attention", {"Q", "K", "V"}, {"Y"}, {{"is_causal", int64_t{1}}}).output("Y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "Y");
  CHECK(y.output_shapes[0] == "[1,4,6,8]");
  CHECK(y.cost.flops == 4 * 21 * 38);  // 21 = 6*7/2 causal pairs per head
  CHECK(*y.cost.dense_flops == 4 * 36 * 38);
  CHECK(y.precision == Precision::bf16);
  CHECK(y.roof.unit == "tensor bf16");
}
