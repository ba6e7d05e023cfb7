#pragma once
// Cost rules, one per op, registered explicitly per family (rules/*.cpp). A rule computes the
// node's output shapes (and values, for shape arithmetic) and its cost.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/core/cost.hpp"
#include "analyzer/ir/graph.hpp"

namespace rooflens {

// Thrown inside a rule when an input's shape or a needed value is unknown: the node's outputs
// stay unknown and the node is reported "not costed" with this reason.
struct NotInferable {
  std::string reason;
};

class InferContext {
 public:
  InferContext(Graph& g, Node& n) : g_(g), n_(n) {}
  const Node& node() const { return n_; }
  size_t num_inputs() const { return n_.inputs.size(); }
  size_t num_outputs() const { return n_.outputs.size(); }
  bool has_input(size_t i) const { return n_.input(i) >= 0; }
  bool has_output(size_t i) const { return n_.output(i) >= 0; }
  const Tensor& input(size_t i) const;  // throws NotInferable when absent
  const Shape& shape(size_t i) const;   // throws NotInferable when unknown
  DType dtype(size_t i) const;
  const Value* value(size_t i) const;                             // nullptr when unknown or absent
  const Value& required_value(size_t i, const char* what) const;  // NotInferable when unknown
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  void set_output(size_t i, DType dtype, Shape shape, std::optional<Value> value = std::nullopt);
  // An input that contradicts the op (bad rank, mismatched dims): an InputError naming the node.
  [[noreturn]] void fail(const std::string& message) const;
  // Axis normalized against `rank`; out of range is an input error.
  int64_t axis(int64_t axis, int64_t rank) const;

 private:
  Graph& g_;
  Node& n_;
};

class CostContext {
 public:
  CostContext(const Graph& g, const Node& n, std::optional<DType> float_override)
      : g_(g), n_(n), override_(float_override) {}
  const Node& node() const { return n_; }
  const Graph& graph() const { return g_; }
  bool has_input(size_t i) const { return n_.input(i) >= 0; }
  const Tensor& input(size_t i) const { return g_.tensors[n_.inputs.at(i)]; }
  const Tensor& output(size_t i) const { return g_.tensors[n_.outputs.at(i)]; }
  const Shape& in_shape(size_t i) const { return *input(i).shape; }
  const Shape& out_shape(size_t i) const { return *output(i).shape; }
  int64_t in_elements(size_t i) const { return input(i).elements(); }
  int64_t out_elements(size_t i) const { return output(i).elements(); }
  // The dtype a tensor has when the model runs (--dtype changes float tensors).
  DType run_dtype(const Tensor& t) const;
  int64_t bytes_of(const Tensor& t) const;
  int64_t bytes_of(const Tensor& t, int64_t elements) const;
  // Adds input i read whole, to activation or weight bytes by its kind; absent inputs add 0.
  void read_input(NodeCost& c, size_t i) const;
  void read_input_part(NodeCost& c, size_t i, int64_t elements) const;
  void read_all_inputs(NodeCost& c) const;
  void write_all_outputs(NodeCost& c) const;

 private:
  const Graph& g_;
  const Node& n_;
  std::optional<DType> override_;
};

struct OpRule {
  std::string domain;  // "" for the default ONNX domain
  std::string op_type;
  OpFamily family;
  std::function<void(InferContext&)> infer;  // may be empty: ONNX library shapes
  std::function<NodeCost(const CostContext&)> cost;
};

class RuleRegistry {
 public:
  void add(OpRule rule);  // throws std::logic_error on a duplicate (domain, op_type)
  const OpRule* find(const std::string& domain, const std::string& op_type) const;
  size_t size() const { return rules_.size(); }
  std::vector<const OpRule*> all() const;

 private:
  std::map<std::string, OpRule> rules_;
};

// Every built-in rule, registered once.
const RuleRegistry& builtin_rules();

// Family registration functions, one per file in rules/.
void register_matmul_rules(RuleRegistry& r);
void register_conv_rules(RuleRegistry& r);
void register_elementwise_rules(RuleRegistry& r);
void register_norm_rules(RuleRegistry& r);
void register_attention_rules(RuleRegistry& r);
void register_reduce_rules(RuleRegistry& r);
void register_pooling_rules(RuleRegistry& r);
void register_data_movement_rules(RuleRegistry& r);
void register_transformer_rules(RuleRegistry& r);  // rotary embedding, MoE, all-reduce
void register_ssm_rules(RuleRegistry& r);          // selective scan, causal conv, linear attention

}  // namespace rooflens
