// Shapes of a node no rooflens rule covers, from the ONNX library's own shape inference of that
// one node (its schema checked first): what follows it can still be costed.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/onnx/loader.hpp"

namespace rooflens {

bool foreign_node_shapes(Graph& g, Node& n) {
  if (n.foreign_proto.empty()) return false;
  onnx::NodeProto np;
  if (!np.ParseFromString(n.foreign_proto)) return false;
  std::string domain = n.domain;
  if (!onnx::OpSchemaRegistry::Schema(np.op_type(), static_cast<int>(n.opset), domain))
    return false;
  // The library's inference trusts its input; its checker validates the node against the schema
  // first (attribute types, input counts), so hostile nodes are turned away before inference.
  onnx::checker::CheckerContext checker;
  checker.set_ir_version(8);
  checker.set_opset_imports({{domain, static_cast<int>(n.opset)}});
  onnx::checker::LexicalScopeContext scope;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain(domain);
  op->set_version(n.opset);
  auto* graph = m.mutable_graph();
  graph->set_name("node");
  for (int i = 0; i < np.input_size(); ++i) {
    if (np.input(i).empty()) continue;
    int t = n.input(static_cast<size_t>(i));
    if (t < 0 || !g.tensors[t].shape) return false;
    const Tensor& x = g.tensors[t];
    scope.add(x.name);
    auto* in = graph->add_input();
    in->set_name(x.name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(x.dtype));
    for (int64_t d : *x.shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    const Value* known = g.value(t);
    if (known && !known->is_float && x.dtype == DType::i64) {  // known shape arguments
      auto* init = graph->add_initializer();
      init->set_name(x.name);
      init->set_data_type(onnx::TensorProto::INT64);
      for (int64_t d : *x.shape) init->add_dims(d);
      for (int64_t v : known->ints) init->add_int64_data(v);
    }
  }
  *graph->add_node() = np;
  for (const auto& o : np.output())
    if (!o.empty()) graph->add_output()->set_name(o);
  try {
    onnx::checker::check_node(np, checker, scope);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 1, false));
  } catch (const std::exception&) {
    return false;
  }
  bool any = false;
  auto take = [&](const onnx::ValueInfoProto& vi) {
    int t = g.find(vi.name());
    if (t < 0 || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& tt = vi.type().tensor_type();
    Shape s;
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0 || d.dim_value() > limits::kMaxDim) return;
      s.push_back(d.dim_value());
    }
    auto dt = dtype_from_onnx(tt.elem_type());
    if (!dt || *dt == DType::undefined || s.size() > static_cast<size_t>(limits::kMaxRank)) return;
    checked_product(s, "inferred shape");
    g.tensors[t].dtype = *dt;
    g.tensors[t].shape = s;
    any = true;
  };
  for (const auto& vi : m.graph().output()) take(vi);
  for (const auto& vi : m.graph().value_info()) take(vi);
  return any;
}

}  // namespace rooflens
