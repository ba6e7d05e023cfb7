// Loader behaviour beyond shapes: external weights, opset range, the ONNX library's inference
// as a fallback, control flow, model-local functions.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/ops/rule_registry.hpp"
#include "analyzer/ops/shape_inference.hpp"
#include "model_builder.hpp"
#include "tests/support/decoder_model.hpp"

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
  int64_t gemm_params =
      6738415616 - 32000LL * 4096 - 65 * 4096;              // minus embedding and norm weights
  int64_t attention = 32 * 2 * (2LL * 32 * 16 * 16 * 128);  // QK^T and PV, dense, per layer
  CHECK(a.totals.macs * 2 == 2 * gemm_params * 16 + attention);
}

TEST_CASE("opset 7 models: Pad and Slice with attributes - Upsample-era Reshape", "[loader]") {
  ModelBuilder b(7);
  b.input("x", DType::f32, {1, 2, 4, 4});
  b.node("Pad", {"x"}, {"p"}, {{"pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}});
  b.node("Slice", {"p"}, {"s"},
         {{"starts", std::vector<int64_t>{1}},
          {"ends", std::vector<int64_t>{5}},
          {"axes", std::vector<int64_t>{2}}});
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
  b.input("x", DType::f32, {2, 3, 4, 4})
      .node("MeanVarianceNormalization", {"x"}, {"m"})
      .node("Relu", {"m"}, {"y"})
      .output("y");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "m").status == NodeStatus::not_costed);
  CHECK(node_named(a, "m").reason == "no rooflens rule for this op");
  CHECK(node_named(a, "y").status ==
        NodeStatus::costed);  // its input shape came from ONNX inference
  CHECK(node_named(a, "y").cost.flops == 96);
}

TEST_CASE(
    "control flow with subgraphs: an If of equal branches takes then and an unresolved Scan is "
    "listed - not costed",
    "[loader]") {
  auto with_subgraphs = [](const char* op, std::vector<const char*> attrs) {
    ModelBuilder b;
    b.input("c", DType::boolean, {}).input("x", DType::f32, {4});
    b.node(op, {"c"}, {"y"});
    auto* node = b.proto().mutable_graph()->mutable_node(0);
    for (const char* name : attrs) {
      auto* a = node->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::GRAPH);
      auto* g = a->mutable_g();
      g->set_name(name);
      auto* n = g->add_node();
      n->set_op_type("Relu");
      n->set_name("relu");
      n->add_input("x");
      n->add_output(std::string(name) + "_out");
      g->add_output()->set_name(std::string(name) + "_out");
    }
    b.output("y");
    return analyze_model(b);
  };
  // Both branches cost the same: the tie goes to then.
  Analysis a = with_subgraphs("If", {"then_branch", "else_branch"});
  CHECK(a.coverage.line() == "1/1 nodes costed; every node costed");
  CHECK(a.nodes.at(0).name.find("/then/relu") != std::string::npos);
  // A Scan without num_scan_inputs is not spliced: one node, not costed, never a zero.
  Analysis s = with_subgraphs("Scan", {"body"});
  CHECK(node_named(s, "y").status == NodeStatus::not_costed);
  CHECK(node_named(s, "y").reason.find("control flow") != std::string::npos);
  CHECK(s.coverage.line() == "0/1 nodes costed; not costed: Scan x1");
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

namespace {

// An initializer with its data inline as raw_data (what exporters write).
onnx::TensorProto& raw_initializer(ModelBuilder& b, const std::string& name, int32_t type,
                                   std::vector<int64_t> dims, const std::string& raw) {
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  return *t;
}

std::string int64_bytes(std::vector<int64_t> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}

}  // namespace

TEST_CASE(
    "initializer payloads stay in the file: a constant is read when a rule asks for it, weights "
    "never",
    "[loader]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 4});
  // 5,000 float weights (more than are ever folded) as bytes of 0xff: NaNs, were they decoded.
  raw_initializer(b, "w", onnx::TensorProto::FLOAT, {4, 1250}, std::string(4 * 5000, '\xff'));
  raw_initializer(b, "shape", onnx::TensorProto::INT64, {2}, int64_bytes({6, -1}));
  raw_initializer(b, "bias", onnx::TensorProto::FLOAT, {1250}, std::string(4 * 1250, '\0'));
  b.node("MatMul", {"x", "w"}, {"y"})
      .node("Add", {"y", "bias"}, {"z"})
      .node("Reshape", {"z", "shape"}, {"r"})
      .output("r");
  std::string path = b.save();
  Graph g = load_onnx(path, {});
  int w = g.find("w"), shape = g.find("shape"), bias = g.find("bias");
  CHECK_FALSE(g.tensors[w].value_in_file);  // too large to fold: its bytes are never looked at
  CHECK_FALSE(g.tensors[w].value);
  CHECK(g.tensors[shape].value_in_file);  // left in the file until asked for
  CHECK_FALSE(g.tensors[shape].value);
  const Value* v = g.value(shape);
  REQUIRE(v);
  CHECK(v->ints == std::vector<int64_t>{6, -1});
  CHECK_FALSE(g.tensors[shape].value_in_file);
  // The analysis reads the shape (Reshape) and never the bias (the Add has a run-time input).
  Analysis a = analyze_graph(load_onnx(path, {}), {});
  CHECK(node_named(a, "r").output_shapes[0] == "[6,1250]");
  CHECK(a.totals.params == 5000 + 1250);
  g = load_onnx(path, {});
  infer_shapes(g, builtin_rules());
  CHECK(g.tensors[g.find("bias")].value_in_file);
  CHECK_FALSE(g.tensors[g.find("shape")].value_in_file);
  // The same from bytes in memory (the fuzz target's path).
  std::string bytes = b.proto().SerializeAsString();
  Graph m = load_onnx_bytes(bytes, "in memory", {});
  REQUIRE(m.value(m.find("shape")));
  CHECK(m.value(m.find("shape"))->ints == std::vector<int64_t>{6, -1});
  ::unlink(path.c_str());
  (void)bias;
}

TEST_CASE("an initializer whose raw_data does not match its dims is refused", "[loader][errors]") {
  ModelBuilder b;
  b.input("x", DType::f32, {2, 8});
  raw_initializer(b, "w", onnx::TensorProto::FLOAT, {8, 8192},
                  std::string(4 * 8192 * 8 - 4, '\0'));  // one float short
  b.node("MatMul", {"x", "w"}, {"y"}).output("y");
  CHECK_THROWS_WITH(
      analyze_model(b),
      Catch::Contains(
          "initializer 'w': raw_data holds 262140 bytes; 65536 elements of float32 take 262144"));
}

TEST_CASE("a large Constant node and a subgraph's initializers load without their payloads",
          "[loader]") {
  ModelBuilder b;
  b.input("x", DType::f32, {8, 1000}).input("c", DType::boolean, {});
  b.node("Constant", {}, {"k"});
  auto* value = b.proto().mutable_graph()->mutable_node(0)->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1000);
  value->mutable_t()->add_dims(10);
  value->mutable_t()->set_raw_data(std::string(4 * 10000, '\0'));
  b.node("MatMul", {"x", "k"}, {"y"});
  b.node("If", {"c"}, {"z"});
  auto* branch = b.proto().mutable_graph()->mutable_node(2)->add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  auto* init = branch->mutable_g()->add_initializer();
  init->set_name("inner");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(4);
  init->set_raw_data(std::string(16, '\0'));
  b.output("y").output("z");
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "y").output_shapes[0] == "[8,10]");
  CHECK(node_named(a, "y").cost.flops == 2 * 8 * 1000 * 10);
  CHECK(node_named(a, "z").status == NodeStatus::not_costed);
}
