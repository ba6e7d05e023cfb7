// GEMM and convolution rules against hand-computed FLOPs, MACs and bytes.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("MatMul: batched activations times a weight", "[rules][gemm]") {
  ModelBuilder b;
  b.input("a", DType::f32, {2, 3, 4, 5})
      .weight("w", DType::f32, {5, 6})
      .node("MatMul", {"a", "w"}, {"y"})
      .output("y");
  Analysis a = analyze_model(b);
  const NodeResult& n = node_named(a, "y");
  CHECK(n.output_shapes[0] == "[2,3,4,6]");
  CHECK(*n.cost.macs == 2 * 3 * 4 * 6 * 5);  // 720
  CHECK(n.cost.flops == 1440);
  CHECK(n.cost.read_act == 120 * 4);
  CHECK(n.cost.read_weight == 30 * 4);
  CHECK(n.cost.written == 144 * 4);
  CHECK(n.params == 30);
  CHECK(n.roof.intensity == Approx(1440.0 / (480 + 120 + 576)));
  CHECK(n.cost.tiled);  // 24 rows through shared weights: more than a GEMV's 8
}

TEST_CASE("MatMul: broadcast batch dims and 1-D operands", "[rules][gemm]") {
  ModelBuilder b;
  b.input("a", DType::f32, {2, 1, 4, 5})
      .input("b", DType::f32, {3, 5, 6})
      .input("v", DType::f32, {5});
  b.node("MatMul", {"a", "b"}, {"y"}).node("MatMul", {"v", "b"}, {"z"}).output("y").output("z");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").output_shapes[0] == "[2,3,4,6]");
  CHECK(*node_named(a, "y").cost.macs == 2 * 3 * 4 * 6 * 5);
  CHECK(node_named(a, "z").output_shapes[0] == "[3,6]");
  CHECK(*node_named(a, "z").cost.macs == 3 * 6 * 5);
  // Per-batch weights: 4 rows and 1 row per product, GEMV territory, no tile floor.
  CHECK_FALSE(node_named(a, "y").cost.tiled);
  CHECK_FALSE(node_named(a, "z").cost.tiled);
}

TEST_CASE("MatMul with mismatched inner dims is an input error", "[rules][gemm]") {
  ModelBuilder b;
  b.input("a", DType::f32, {4, 5})
      .input("b", DType::f32, {6, 7})
      .node("MatMul", {"a", "b"}, {"y"})
      .output("y");
  CHECK_THROWS_WITH(analyze_model(b), Catch::Contains("inner dims differ"));
}

TEST_CASE("Gemm: transB - bias add and alpha scaling", "[rules][gemm]") {
  ModelBuilder b;
  b.input("a", DType::f32, {4, 8}).weight("w", DType::f32, {16, 8}).weight("c", DType::f32, {16});
  b.node("Gemm", {"a", "w", "c"}, {"y"}, {{"transB", int64_t{1}}});
  b.node("Gemm", {"a", "w", "c"}, {"z"}, {{"transB", int64_t{1}}, {"alpha", 2.0}});
  b.output("y").output("z");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[4,16]");
  CHECK(*y.cost.macs == 512);
  CHECK(y.cost.flops == 2 * 512 + 64);                        // + C
  CHECK(node_named(a, "z").cost.flops == 2 * 512 + 64 + 64);  // + alpha * AB
  CHECK(y.params == 16 * 8 + 16);
}

TEST_CASE("Einsum batched contraction", "[rules][gemm]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 4}).input("y", DType::f32, {2, 4, 5});
  b.node("Einsum", {"x", "y"}, {"z"}, {{"equation", std::string("bij,bjk->bik")}}).output("z");
  Analysis a = analyze_model(b);
  const NodeResult& z = node_named(a, "z");
  CHECK(z.output_shapes[0] == "[2,3,5]");
  CHECK(*z.cost.macs == 2 * 3 * 4 * 5);
  CHECK(z.cost.flops == 240);
}

TEST_CASE("Conv: ResNet stem with bias - strides and pads", "[rules][conv]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 3, 224, 224})
      .weight("w", DType::f32, {64, 3, 7, 7})
      .weight("b", DType::f32, {64});
  b.node("Conv", {"x", "w", "b"}, {"y"},
         {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}});
  b.output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[1,64,112,112]");
  CHECK(*y.cost.macs == 118013952);                       // 64*112*112*3*7*7
  CHECK(y.cost.flops == 2 * 118013952 + 64 * 112 * 112);  // + bias
  CHECK(y.cost.read_act == 3 * 224 * 224 * 4);
  CHECK(y.cost.read_weight == (64 * 3 * 49 + 64) * 4);
  CHECK(y.cost.written == 64 * 112 * 112 * 4);
  CHECK(y.cost.tensor_cores);
}

TEST_CASE("Conv: depthwise - dilated and SAME padding", "[rules][conv]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 32, 56, 56}).weight("dw", DType::f32, {32, 1, 3, 3});
  b.node("Conv", {"x", "dw"}, {"d"},
         {{"group", int64_t{32}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.input("s", DType::f32, {1, 1, 10, 10}).weight("k", DType::f32, {1, 1, 3, 3});
  b.node("Conv", {"s", "k"}, {"dil"}, {{"dilations", std::vector<int64_t>{2, 2}}});
  b.input("t", DType::f32, {1, 1, 7, 7});
  b.node("Conv", {"t", "k"}, {"same"},
         {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}});
  b.output("d").output("dil").output("same");
  Analysis a = analyze_model(b);
  const NodeResult& d = node_named(a, "d");
  CHECK(d.output_shapes[0] == "[1,32,56,56]");
  CHECK(*d.cost.macs == 32 * 56 * 56 * 9);  // one input channel per group
  CHECK_FALSE(d.cost.tensor_cores);
  CHECK(node_named(a, "dil").output_shapes[0] == "[1,1,6,6]");  // effective kernel 5
  CHECK(*node_named(a, "dil").cost.macs == 36 * 9);
  CHECK(node_named(a, "same").output_shapes[0] == "[1,1,4,4]");  // ceil(7/2)
}

TEST_CASE("ConvTranspose upsamples by its stride", "[rules][conv]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 16, 8, 8}).weight("w", DType::f32, {16, 8, 4, 4});
  b.node("ConvTranspose", {"x", "w"}, {"y"},
         {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[1,8,16,16]");  // 2*(8-1) + 4 - 2
  CHECK(*y.cost.macs == 16 * 64 * 8 * 16);     // each input element scatters into 8 channels x 4x4
}

TEST_CASE("Conv with channels that do not match the weight is an input error", "[rules][conv]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 4, 8, 8})
      .weight("w", DType::f32, {8, 3, 3, 3})
      .node("Conv", {"x", "w"}, {"y"})
      .output("y");
  CHECK_THROWS_AS(analyze_model(b), InputError);
}
