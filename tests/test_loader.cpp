// Loader behaviour beyond shapes: external weights, opset range, the ONNX library's inference
// as a fallback, control flow, model-local functions.
#include <catch2/catch.hpp>
#include <unistd.h>

#include "analyzer/errors.hpp"
#include "bench/decoder_model.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

TEST_CASE("a Llama-2-7B-shaped decoder with missing external weights analyzes", "[loader]") {
  std::string path = "/tmp/rooflens_test_decoder_" + std::to_string(::getpid()) + ".onnx";
  bench::DecoderShape shape;  // 32 layers, 4096 hidden, 11008 intermediate, 32000 vocab
  bench::write_decoder(path, shape);
  LoadOptions load;
  load.dims = {{"batch", 1}, {"seq", 16}};
  Analysis a = analyze_onnx(path, load, AnalysisOptions{});
  ::unlink(path.c_str());
  CHECK(a.totals.params == 6738415616);  // Llama-2-7B's published parameter count
  CHECK(a.coverage.not_costed == 0);
  // Prefill GEMM work: 2 * (params - embedding) * tokens, plus the attention MatMuls.
  int64_t gemm_params = 6738415616 - 32000LL * 4096 - 65 * 4096;  // minus embedding and norm weights
  int64_t attention = 32 * 2 * (2LL * 32 * 16 * 16 * 128);        // QK^T and PV, dense, per layer
  CHECK(a.totals.macs * 2 == 2 * gemm_params * 16 + attention);
}

TEST_CASE("opset 7 models: Pad and Slice with attributes - Upsample-era Reshape", "[loader]") {
  ModelBuilder b(7);
  b.input("x", DType::f32, {1, 2, 4, 4});
  b.node("Pad", {"x"}, {"p"}, {{"pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}});
  b.node("Slice", {"p"}, {"s"}, {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{5}}, {"axes", std::vector<int64_t>{2}}});
  b.ints("shape", {1, -1}).node("Reshape", {"s", "shape"}, {"r"}).output("r");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "p").output_shapes[0] == "[1,2,6,6]");
  CHECK(node_named(a, "s").output_shapes[0] == "[1,2,4,6]");
  CHECK(node_named(a, "r").output_shapes[0] == "[1,48]");
}

TEST_CASE("opsets outside 7-23 are refused", "[loader][errors]") {
  ModelBuilder b(6);
  b.input("x", DType::f32, {4}).node("Relu", {"x"}, {"y"}).output("y");
  CHECK_THROWS_WITH(analyze_model(b), Catch::Contains("outside the supported range 7-23"));
}

TEST_CASE("an op without a rule still passes on its shape through the ONNX library", "[loader]") {
  ModelBuilder b(13);
  b.input("x", DType::f32, {2, 3, 4, 4}).node("MeanVarianceNormalization", {"x"}, {"m"}).node("Relu", {"m"}, {"y"}).output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "m").status == NodeStatus::not_costed);
  CHECK(node_named(a, "m").reason == "no rooflens rule for this op");
  CHECK(node_named(a, "y").status == NodeStatus::costed);  // its input shape came from ONNX inference
  CHECK(node_named(a, "y").cost.flops == 96);
}

TEST_CASE("control flow with subgraphs is listed - not costed", "[loader]") {
  ModelBuilder b;
  b.input("c", DType::boolean, {}).input("x", DType::f32, {4});
  b.node("If", {"c"}, {"y"});
  auto* node = b.proto().mutable_graph()->mutable_node(0);
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(branch);
    auto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input("x");
    n->add_output(std::string(branch) + "_out");
    g->add_output()->set_name(std::string(branch) + "_out");
  }
  b.output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").status == NodeStatus::not_costed);
  CHECK(node_named(a, "y").reason.find("control flow") != std::string::npos);
  CHECK(a.coverage.line() == "0/1 nodes costed; not costed: If x1");
}

TEST_CASE("model-local functions are inlined", "[loader]") {
  ModelBuilder b(18);
  b.import("local", 1);
  b.input("x", DType::f32, {8}).node("Swish", {"x"}, {"y"}, {}, "local").output("y");
  auto* f = b.proto().add_functions();
  f->set_name("Swish");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  auto* op = f->add_opset_import();
  op->set_version(18);
  auto* s = f->add_node();
  s->set_op_type("Sigmoid");
  s->add_input("a");
  s->add_output("sig");
  auto* m = f->add_node();
  m->set_op_type("Mul");
  m->add_input("a");
  m->add_input("sig");
  m->add_output("b");
  Analysis a = analyze_model(b);
  CHECK(a.coverage.total == 2);
  CHECK(a.totals.flops == 8 * 4 + 8);  // sigmoid + multiply
}
