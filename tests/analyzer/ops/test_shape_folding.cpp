// Shape arithmetic the exporters emit must fold to concrete shapes, and symbolic dims must be
// bound explicitly.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

// x[batch, seq, 64] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x),
// 1)), [4, 16]))
ModelBuilder torchscript_chain(int64_t opset) {
  ModelBuilder b(opset);
  b.input("x", DType::f32, {std::string("batch"), std::string("seq"), int64_t{64}});
  b.int_scalar("i0", 0).int_scalar("i1", 1).ints("heads", {4, 16});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "i0"}, {"b"}, {{"axis", int64_t{0}}})
      .node("Gather", {"s", "i1"}, {"t"}, {{"axis", int64_t{0}}});
  if (opset >= 13) {
    b.ints("ax0", {0});
    b.node("Unsqueeze", {"b", "ax0"}, {"bu"}).node("Unsqueeze", {"t", "ax0"}, {"tu"});
  } else {
    b.node("Unsqueeze", {"b"}, {"bu"}, {{"axes", std::vector<int64_t>{0}}});
    b.node("Unsqueeze", {"t"}, {"tu"}, {{"axes", std::vector<int64_t>{0}}});
  }
  b.node("Concat", {"bu", "tu", "heads"}, {"shape"}, {{"axis", int64_t{0}}});
  b.node("Reshape", {"x", "shape"}, {"y"}).node("Relu", {"y"}, {"z"}).output("z");
  return b;
}

}  // namespace

TEST_CASE("Shape/Gather/Unsqueeze/Concat chains fold to a concrete Reshape", "[folding]") {
  for (int64_t opset : {11, 17}) {
    Analysis a = analyze_model(torchscript_chain(opset), {{"batch", 2}, {"seq", 5}});
    CHECK(node_named(a, "y").output_shapes[0] == "[2,5,4,16]");
    for (const char* folded : {"s", "b", "t", "bu", "tu", "shape"})
      CHECK(node_named(a, folded).status == NodeStatus::folded);
    CHECK(node_named(a, "z").cost.flops == 2 * 5 * 64);
    CHECK(a.coverage.not_costed == 0);
  }
}

TEST_CASE("an unbound symbolic dim names the dim and the flag", "[folding][errors]") {
  CHECK_THROWS_WITH(analyze_model(torchscript_chain(17), {{"batch", 2}}),
                    Catch::Contains("dim 1 'seq' is symbolic; bind it with --dim seq=N"));
}

TEST_CASE("a dim binding that names no input dim is refused", "[folding][errors]") {
  CHECK_THROWS_WITH(
      analyze_model(torchscript_chain(17), {{"batch", 2}, {"seq", 5}, {"sequence", 3}}),
      Catch::Contains("--dim sequence names no symbolic input dim"));
}

TEST_CASE("Slice with attributes (opset 9) and with inputs - negative steps", "[folding]") {
  ModelBuilder old(9);
  old.input("x", DType::f32, {8, 6});
  old.node("Slice", {"x"}, {"y"},
           {{"starts", std::vector<int64_t>{1}},
            {"ends", std::vector<int64_t>{-1}},
            {"axes", std::vector<int64_t>{0}}});
  old.output("y");
  CHECK(node_named(analyze_model(old), "y").output_shapes[0] == "[6,6]");

  ModelBuilder rev(13);
  rev.input("x", DType::f32, {8, 6})
      .ints("s", {-1})
      .ints("e", {INT64_MIN})
      .ints("a", {1})
      .ints("st", {-2});
  rev.node("Slice", {"x", "s", "e", "a", "st"}, {"y"}).output("y");
  CHECK(node_named(analyze_model(rev), "y").output_shapes[0] == "[8,3]");  // indices 5, 3, 1
}

TEST_CASE("Range - ConstantOfShape and Where fold when their inputs are known", "[folding]") {
  ModelBuilder b;
  b.input("x", DType::f32, {std::string("n"), int64_t{3}});
  b.int_scalar("zero", 0).int_scalar("one", 1);
  b.node("Shape", {"x"}, {"s"}).node("Gather", {"s", "zero"}, {"n"}, {{"axis", int64_t{0}}});
  b.node("Range", {"zero", "n", "one"}, {"r"});
  b.node("Shape", {"r"}, {"rs"}).node("ConstantOfShape", {"rs"}, {"c"});
  b.node("Add", {"c", "c"}, {"cc"}).output("cc");
  Analysis a = analyze_model(b, {{"n", 7}});
  CHECK(node_named(a, "r").output_shapes[0] == "[7]");
  CHECK(node_named(a, "c").status == NodeStatus::folded);
  CHECK(node_named(a, "cc").status == NodeStatus::folded);  // all inputs known before the run
}
