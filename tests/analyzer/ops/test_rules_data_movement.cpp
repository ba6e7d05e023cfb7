// Data movement: traffic follows what a kernel really touches; views cost nothing.
#include <catch2/catch.hpp>

#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("Gather as an embedding lookup reads only the gathered rows", "[rules][data]") {
  ModelBuilder b;
  b.input("ids", DType::i64, {2, 8})
      .weight("table", DType::f32, {1000, 64})
      .node("Gather", {"table", "ids"}, {"e"})
      .output("e");
  Analysis a = analyze_model(b);
  const NodeResult& e = node_named(a, "e");
  CHECK(e.output_shapes[0] == "[2,8,64]");
  CHECK(e.cost.read_weight == 16 * 64 * 4);  // not the whole 256,000-byte table
  CHECK(e.cost.read_act == 16 * 8);
  CHECK(e.cost.written == 16 * 64 * 4);
  CHECK(e.params == 64000);
}

TEST_CASE("Slice reads the slice - Transpose and Concat copy", "[rules][data]") {
  ModelBuilder b;
  b.input("x", DType::f32, {10, 20}).ints("s", {2}).ints("e", {5}).ints("ax", {0});
  b.node("Slice", {"x", "s", "e", "ax"}, {"sl"});
  b.node("Transpose", {"x"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.input("c1", DType::f32, {2, 3}).input("c2", DType::f32, {2, 5});
  b.node("Concat", {"c1", "c2"}, {"c"}, {{"axis", int64_t{1}}});
  b.output("sl").output("t").output("c");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "sl").output_shapes[0] == "[3,20]");
  CHECK(node_named(a, "sl").cost.read_act == 60 * 4);
  CHECK(node_named(a, "t").output_shapes[0] == "[20,10]");
  CHECK(node_named(a, "t").cost.bytes() == 2 * 800);
  CHECK(node_named(a, "c").output_shapes[0] == "[2,8]");
  CHECK(node_named(a, "c").cost.bytes() == 2 * 64);
}

TEST_CASE("Reshape with 0 and -1 is a zero-byte view", "[rules][data]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 4})
      .ints("shape", {0, -1})
      .node("Reshape", {"x", "shape"}, {"y"})
      .output("y");
  Analysis a = analyze_model(b);
  const NodeResult& y = node_named(a, "y");
  CHECK(y.output_shapes[0] == "[2,12]");
  CHECK(y.cost.bytes() == 0);
  CHECK(*y.family == OpFamily::view);
  CHECK(y.roof.predicted == 0);
}

TEST_CASE("Pad - Expand - Resize and Split shapes", "[rules][data]") {
  ModelBuilder b(13);
  b.input("x", DType::f32, {1, 3, 4, 4})
      .ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})
      .node("Pad", {"x", "pads"}, {"p"});
  b.input("r", DType::f32, {1, 4}).ints("to", {3, 4}).node("Expand", {"r", "to"}, {"ex"});
  b.input("img", DType::f32, {1, 1, 4, 4});
  b.floats("scales", {1, 1, 2, 2});
  b.node("Resize", {"img", "", "scales"}, {"up"}, {{"mode", std::string("linear")}});
  b.input("sp", DType::f32, {5, 6})
      .ints("parts", {2, 3})
      .node("Split", {"sp", "parts"}, {"s0", "s1"});
  for (const char* o : {"p", "ex", "up", "s0", "s1"}) b.output(o);
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "p").output_shapes[0] == "[1,3,6,6]");
  CHECK(node_named(a, "ex").output_shapes[0] == "[3,4]");
  CHECK(node_named(a, "up").output_shapes[0] == "[1,1,8,8]");
  CHECK(node_named(a, "up").cost.flops == 64 * 7);  // bilinear: 4 taps, 4 multiplies + 3 adds
  CHECK(node_named(a, "s0").output_shapes[0] == "[2,6]");
  CHECK(node_named(a, "s0").output_shapes[1] == "[3,6]");
}

TEST_CASE("Split into num_outputs (opset 18) gives the last part the rest", "[rules][data]") {
  ModelBuilder b(18);
  b.input("x", DType::f32, {7})
      .node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", int64_t{3}}});
  b.output("a").output("b").output("c");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "a").output_shapes == std::vector<std::string>{"[3]", "[3]", "[1]"});
}

TEST_CASE("a data-dependent shape is not costed and neither is what follows - never zero",
          "[rules][coverage]") {
  ModelBuilder b;
  b.input("x", DType::f32, {4, 4})
      .node("NonZero", {"x"}, {"nz"})
      .node("Transpose", {"nz"}, {"t"})
      .output("t");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "nz").status == NodeStatus::not_costed);
  CHECK(node_named(a, "nz").reason.find("depends on the data") != std::string::npos);
  CHECK(node_named(a, "t").status == NodeStatus::not_costed);
  CHECK(a.coverage.not_costed == 2);
  CHECK(a.coverage.line() == "0/2 nodes costed; not costed: NonZero x1, Transpose x1");
}

TEST_CASE("an op without a rule is listed as not costed", "[rules][coverage]") {
  ModelBuilder b;
  b.import("com.microsoft", 1);
  b.input("x", DType::f32, {4, 4})
      .node("Relu", {"x"}, {"r"})
      .node("WordConvEmbedding", {"r"}, {"y"}, {}, "com.microsoft")
      .output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").status == NodeStatus::not_costed);
  CHECK(a.coverage.line() == "1/2 nodes costed; not costed: com.microsoft.WordConvEmbedding x1");
}
