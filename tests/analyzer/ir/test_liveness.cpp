// Peak activation memory on small hand-drawn graphs (x is 1x1024 float32 = 4 KiB).
#include <catch2/catch.hpp>

#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("chain with a skip connection keeps both branches alive", "[liveness]") {
  // step 0 Relu a: x + a = 8K (x dies); step 1 Relu b: a + b = 8K; step 2 Add c: a + b + c = 12K.
  ModelBuilder g;
  g.input("x", DType::f32, {1, 1024})
      .node("Relu", {"x"}, {"a"})
      .node("Relu", {"a"}, {"b"})
      .node("Add", {"a", "b"}, {"c"})
      .output("c");
  Analysis a = analyze_model(g);
  CHECK(a.memory.peak_bytes == 12288);
  CHECK(a.peak_node_name == "c");
  CHECK(a.memory.live_bytes == std::vector<int64_t>{8192, 8192, 12288});
  CHECK(a.memory.live_at_peak.size() == 3);
}

TEST_CASE("views alias their input", "[liveness]") {
  // Reshape is a view of x: step 0 holds x only; step 1 x + y.
  ModelBuilder g;
  g.input("x", DType::f32, {1, 1024})
      .ints("flat", {1024})
      .node("Reshape", {"x", "flat"}, {"v"})
      .node("Relu", {"v"}, {"y"})
      .output("y");
  Analysis a = analyze_model(g);
  CHECK(a.memory.live_bytes == std::vector<int64_t>{4096, 8192});
  CHECK(a.memory.peak_bytes == 8192);
}

TEST_CASE("fan-out keeps the input alive until its last consumer", "[liveness]") {
  // step 0: x + a; step 1: x + a + b (x dies); step 2: a + b + c.
  ModelBuilder g;
  g.input("x", DType::f32, {1, 1024})
      .node("Relu", {"x"}, {"a"})
      .node("Sigmoid", {"x"}, {"b"})
      .node("Add", {"a", "b"}, {"c"})
      .output("c");
  Analysis a = analyze_model(g);
  CHECK(a.memory.live_bytes == std::vector<int64_t>{8192, 12288, 12288});
  CHECK(a.peak_node_name == "b");  // the first step that reaches the peak
}

TEST_CASE("the dtype override changes activation and weight bytes", "[liveness]") {
  ModelBuilder g;
  g.input("x", DType::f32, {1, 1024})
      .weight("w", DType::f32, {1024, 1024})
      .node("MatMul", {"x", "w"}, {"y"})
      .output("y");
  Analysis a = analyze_model(g, {}, Precision::fp16);
  CHECK(a.memory.peak_bytes == 4096);  // x and y at 2 bytes
  CHECK(a.totals.weight_bytes == 1024 * 1024 * 2);
  CHECK(node_named(a, "y").roof.unit == "tensor fp16");
}
