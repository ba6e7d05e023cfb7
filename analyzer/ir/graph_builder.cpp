#include "analyzer/ir/graph_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rooflens {

GraphBuilder::GraphBuilder(std::string source) {
  g_.source = std::move(source);
  g_.producer = "rooflens lowering";
  g_.matmul_b = MatmulBLayout::n_k;  // Linear weights as the checkpoint stores them
  g_.ir_version = 8;
  g_.opsets = {{"", 23}, {"com.microsoft", 1}, {"rooflens", 1}};
}

int GraphBuilder::input(const std::string& name, DType dtype, Shape shape) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.role = TensorRole::input;
  int idx = g_.add_tensor(std::move(t));
  g_.inputs.push_back(idx);
  return idx;
}

int GraphBuilder::weight(const std::string& name, DType dtype, Shape shape, bool is_param) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.role = TensorRole::weight;
  t.is_static = true;
  t.is_param = is_param;
  return g_.add_tensor(std::move(t));
}

int GraphBuilder::int_constant(const std::string& name, std::vector<int64_t> values, bool scalar) {
  Tensor t;
  t.name = name;
  t.dtype = DType::i64;
  t.shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  t.role = TensorRole::constant;
  t.is_static = true;
  t.value = Value::of_ints(std::move(values));
  return g_.add_tensor(std::move(t));
}

int GraphBuilder::float_constant(const std::string& name, DType dtype, double value) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = Shape{};
  t.role = TensorRole::constant;
  t.is_static = true;
  t.value = Value::of_reals({value});
  return g_.add_tensor(std::move(t));
}

std::vector<int> GraphBuilder::node(const std::string& op, const std::string& name,
                                    std::vector<int> inputs, size_t outputs,
                                    std::map<std::string, Attribute> attrs,
                                    const std::string& domain) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.domain = domain;
  n.opset = g_.opsets.at(domain);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  int index = static_cast<int>(g_.nodes.size());
  for (size_t i = 0; i < outputs; ++i) {
    Tensor t;
    t.name = outputs == 1 ? name : fmt::format("{}:{}", name, i);
    if (g_.find(t.name) >= 0)
      throw std::logic_error("lowering produced tensor '" + t.name + "' twice");
    t.producer = index;
    n.outputs.push_back(g_.add_tensor(std::move(t)));
  }
  g_.nodes.push_back(std::move(n));
  return g_.nodes.back().outputs;
}

void GraphBuilder::output(int tensor) {
  g_.tensors[tensor].is_graph_output = true;
  g_.outputs.push_back(tensor);
}

Graph GraphBuilder::finish() {
  for (size_t k = 0; k < g_.nodes.size(); ++k)
    for (int t : g_.nodes[k].inputs)
      if (t >= 0) g_.tensors[t].consumers.push_back(static_cast<int>(k));
  return std::move(g_);
}

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}

Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::ints;
  a.ints = std::move(v);
  return a;
}

Attribute string_attr(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::s;
  a.s = std::move(v);
  return a;
}

Attribute float_attr(double v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}

}  // namespace rooflens
