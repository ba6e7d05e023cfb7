// Element-wise, normalization, softmax, reduction and pooling rules, by hand.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("binary ops broadcast and count one FLOP per output", "[rules][elementwise]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 4})
      .weight("w", DType::f32, {4})
      .node("Add", {"x", "w"}, {"y"})
      .output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[2,3,4]");
  CHECK(y.cost.flops == 24);
  CHECK(y.cost.read_act == 96);
  CHECK(y.cost.read_weight == 16);
  CHECK(y.cost.written == 96);
  CHECK(*y.family == OpFamily::elementwise);
}

TEST_CASE("activation FLOPs follow docs/ops.md", "[rules][elementwise]") {
  ModelBuilder b(20);
  b.input("x", DType::f32, {10});
  b.node("Gelu", {"x"}, {"erf"})
      .node("Gelu", {"x"}, {"tanh"}, {{"approximate", std::string("tanh")}});
  b.node("Sigmoid", {"x"}, {"sig"}).node("Relu", {"x"}, {"relu"});
  b.scalar("lo", 0.0f).scalar("hi", 6.0f).node("Clip", {"x", "lo", "hi"}, {"clip"});
  for (const char* o : {"erf", "tanh", "sig", "relu", "clip"}) b.output(o);
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "erf").cost.flops == 50);   // 5 each
  CHECK(node_named(a, "tanh").cost.flops == 90);  // 9 each
  CHECK(node_named(a, "sig").cost.flops == 40);   // neg, exp, add, divide
  CHECK(node_named(a, "relu").cost.flops == 10);
  CHECK(node_named(a, "clip").cost.flops == 20);  // max and min
  CHECK(a.totals.params == 0);                    // float scalars are constants, not parameters
  CHECK(a.totals.constants == 2);
}

TEST_CASE("variadic Sum and Mean - Cast and comparisons", "[rules][elementwise]") {
  ModelBuilder b;
  b.input("a", DType::f32, {5}).input("b", DType::f32, {5}).input("c", DType::f32, {5});
  b.node("Sum", {"a", "b", "c"}, {"s"}).node("Mean", {"a", "b", "c"}, {"m"});
  b.node("Cast", {"a"}, {"h"}, {{"to", int64_t{10}}}).node("Equal", {"a", "b"}, {"e"});
  for (const char* o : {"s", "m", "h", "e"}) b.output(o);
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "s").cost.flops == 10);  // two adds per element
  CHECK(node_named(a, "m").cost.flops == 15);  // two adds and a divide
  const NodeResult& h = node_named(a, "h");
  CHECK(h.cost.flops == 0);
  CHECK(h.cost.read_act == 20);
  CHECK(h.cost.written == 10);                  // float16 out
  CHECK(node_named(a, "e").cost.written == 5);  // bool out
}

TEST_CASE("shapes that cannot broadcast are an input error", "[rules][elementwise]") {
  ModelBuilder b;
  b.input("a", DType::f32, {3})
      .input("b", DType::f32, {4})
      .node("Mul", {"a", "b"}, {"y"})
      .output("y");
  CHECK_THROWS_WITH(analyze_model(b), Catch::Contains("cannot broadcast"));
}

TEST_CASE("LayerNormalization and RMS norm", "[rules][norm]") {
  ModelBuilder b;
  b.import("com.microsoft", 1);
  b.input("x", DType::f32, {2, 8, 16})
      .weight("g", DType::f32, {16})
      .weight("beta", DType::f32, {16});
  b.node("LayerNormalization", {"x", "g", "beta"}, {"ln"}, {{"axis", int64_t{-1}}});
  b.input("r", DType::f32, {4, 32}).weight("rg", DType::f32, {32});
  b.node("SimplifiedLayerNormalization", {"r", "rg"}, {"rms"}, {{"axis", int64_t{-1}}},
         "com.microsoft");
  b.output("ln").output("rms");
  Analysis a = analyze_model(b);
  // 16 rows of 16: 7 per element (with bias) + 4 per row.
  CHECK(node_named(a, "ln").cost.flops == 256 * 7 + 16 * 4);
  // 4 rows of 32: 4 per element + 3 per row.
  CHECK(node_named(a, "rms").cost.flops == 128 * 4 + 4 * 3);
  CHECK(*node_named(a, "ln").family == OpFamily::norm);
}

TEST_CASE("BatchNormalization folds to a scale and shift and its statistics are buffers",
          "[rules][norm]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 4, 2, 2});
  for (const char* w : {"s", "bb", "mean", "var"}) b.weight(w, DType::f32, {4});
  b.node("BatchNormalization", {"x", "s", "bb", "mean", "var"}, {"y"}).output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").cost.flops == 32);
  CHECK(a.totals.params == 8);
  CHECK(a.totals.buffers == 8);
}

TEST_CASE("Softmax counts max - subtract - exp - sum and divide", "[rules][softmax]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 8})
      .node("Softmax", {"x"}, {"y"}, {{"axis", int64_t{-1}}})
      .output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").cost.flops == 48 * 5);
  CHECK(*node_named(a, "y").family == OpFamily::softmax);
}

TEST_CASE("ReduceMean with axes as an input (opset 18)", "[rules][reduce]") {
  ModelBuilder b(18);
  b.input("x", DType::f32, {2, 3, 4})
      .ints("axes", {1})
      .node("ReduceMean", {"x", "axes"}, {"y"})
      .output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[2,1,4]");
  CHECK(y.cost.flops == 24 + 8);  // one add per input, one divide per output
}

TEST_CASE("ReduceSum with axes attribute (opset 11) and keepdims=0", "[rules][reduce]") {
  ModelBuilder b(11);
  b.input("x", DType::f32, {2, 3, 4});
  b.node("ReduceSum", {"x"}, {"y"},
         {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{0}}})
      .output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").output_shapes[0] == "[3]");
  CHECK(node_named(a, "y").cost.flops == 24);
}

TEST_CASE("TopK outputs k values and int64 indices", "[rules][reduce]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 16})
      .ints("k", {4})
      .node("TopK", {"x", "k"}, {"v", "i"})
      .output("v")
      .output("i");
  Analysis a = analyze_model(b);
  const NodeResult& n = node_named(a, "v");
  CHECK(n.output_shapes[0] == "[2,4]");
  CHECK(n.output_shapes[1] == "[2,4]");
  CHECK(n.cost.flops == 32 * 2);  // log2(4) comparisons per input element
  CHECK(n.cost.written == 8 * 4 + 8 * 8);
}

TEST_CASE("MaxPool floor and ceil modes - GlobalAveragePool", "[rules][pooling]") {
  ModelBuilder b;
  b.input("x", DType::f32, {1, 1, 4, 4})
      .input("odd", DType::f32, {1, 1, 5, 5})
      .input("g", DType::f32, {1, 2, 3, 3});
  std::vector<Attr> k2s2{{"kernel_shape", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}}};
  b.node("MaxPool", {"x"}, {"p"}, k2s2).node("MaxPool", {"odd"}, {"floor"}, k2s2);
  auto ceil = k2s2;
  ceil.push_back({"ceil_mode", int64_t{1}});
  b.node("MaxPool", {"odd"}, {"ceil"}, ceil).node("GlobalAveragePool", {"g"}, {"gap"});
  for (const char* o : {"p", "floor", "ceil", "gap"}) b.output(o);
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "p").output_shapes[0] == "[1,1,2,2]");
  CHECK(node_named(a, "p").cost.flops == 4 * 4);  // 4 outputs x 4 comparisons
  CHECK(node_named(a, "floor").output_shapes[0] == "[1,1,2,2]");
  CHECK(node_named(a, "ceil").output_shapes[0] == "[1,1,3,3]");
  CHECK(node_named(a, "gap").output_shapes[0] == "[1,2,1,1]");
  CHECK(node_named(a, "gap").cost.flops == 18 + 2);
}
