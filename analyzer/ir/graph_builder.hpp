#pragma once
// Builds a Graph directly (no ONNX file): the transformer-config lowering uses it. Nodes are
// added in execution order; shapes come later from the same rules the ONNX path uses.
#include <map>
#include <string>
#include <vector>

#include "analyzer/ir/graph.hpp"

namespace rooflens {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string source);

  int input(const std::string& name, DType dtype, Shape shape);
  // A stored tensor read by the model. `is_param` false for non-learnable state (rope tables,
  // quantization scales): its bytes count as weights, its elements not as parameters.
  int weight(const std::string& name, DType dtype, Shape shape, bool is_param = true);
  int int_constant(const std::string& name, std::vector<int64_t> values, bool scalar = false);
  int float_constant(const std::string& name, DType dtype, double value);

  // Adds a node named `name`; returns its output tensors ("<name>" for one output, else
  // "<name>:<i>"). An input of -1 is an omitted optional input.
  std::vector<int> node(const std::string& op, const std::string& name, std::vector<int> inputs,
                        size_t outputs = 1, std::map<std::string, Attribute> attrs = {},
                        const std::string& domain = "");
  int op(const std::string& op, const std::string& name, std::vector<int> inputs,
         std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
    return node(op, name, std::move(inputs), 1, std::move(attrs), domain)[0];
  }

  // Tags the node added last with what it is for.
  void mark_last(NodeRole role) { g_.nodes.back().role = role; }

  void output(int tensor);
  size_t node_count() const { return g_.nodes.size(); }
  Tensor& tensor(int t) { return g_.tensors[t]; }
  Graph finish();  // consumers filled in; the builder is spent

 private:
  Graph g_;
};

Attribute int_attr(int64_t v);
Attribute ints_attr(std::vector<int64_t> v);
Attribute string_attr(std::string v);
Attribute float_attr(double v);

}  // namespace rooflens
