#include "analyzer/ops/rule_registry.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"

namespace rooflens {

// rules/quantized.cpp: Q/DQ, dynamic quantization, QLinearMatMul, MatMulNBits.
void register_quantized_rules(RuleRegistry& r);

const Tensor& InferContext::input(size_t i) const {
  int t = n_.input(i);
  if (t < 0) throw NotInferable{fmt::format("input {} is absent", i)};
  return g_.tensors[t];
}

const Shape& InferContext::shape(size_t i) const {
  const Tensor& t = input(i);
  if (!t.shape) throw NotInferable{fmt::format("shape of '{}' is unknown", t.name)};
  return *t.shape;
}

DType InferContext::dtype(size_t i) const {
  return input(i).dtype;
}

const Value* InferContext::value(size_t i) const {
  return g_.value(n_.input(i));
}

const Value& InferContext::required_value(size_t i, const char* what) const {
  const Value* v = value(i);
  if (!v) throw NotInferable{fmt::format("{} ('{}') is computed at run time", what, input(i).name)};
  return *v;
}

void InferContext::set_output(size_t i, DType dtype, Shape shape, std::optional<Value> value) {
  int t = n_.output(i);
  if (t < 0) return;
  for (int64_t d : shape)
    if (d < 0) fail(fmt::format("output {} would have a negative dim", i));
  Tensor& x = g_.tensors[t];
  if (static_cast<int64_t>(shape.size()) > limits::kMaxRank)
    fail(fmt::format("output {} would have rank {}, beyond the limit {}", i, shape.size(),
                     limits::kMaxRank));
  int64_t count =
      checked_product(shape, fmt::format("node '{}' output '{}' size", n_.name, x.name));
  x.dtype = dtype;
  x.shape = std::move(shape);
  if (value && static_cast<int64_t>(value->size()) == count)
    x.value = std::move(value);
  else
    x.value.reset();
}

void InferContext::fail(const std::string& message) const {
  throw InputError(
      fmt::format("{}: node '{}' ({}): {}", g_.source, n_.name, n_.display_op(), message));
}

int64_t InferContext::axis(int64_t a, int64_t r) const {
  if (r == 0 || a < -r || a >= r) fail(fmt::format("axis {} is out of range for rank {}", a, r));
  return a < 0 ? a + r : a;
}

DType CostContext::run_dtype(const Tensor& t) const {
  return override_ && is_float(t.dtype) ? *override_ : t.dtype;
}

int64_t CostContext::bytes_of(const Tensor& t) const {
  return storage_bytes(run_dtype(t), t.elements());
}

int64_t CostContext::bytes_of(const Tensor& t, int64_t elements) const {
  return storage_bytes(run_dtype(t), elements);
}

void CostContext::read_input_part(NodeCost& c, size_t i, int64_t elements) const {
  if (!has_input(i)) return;
  const Tensor& t = input(i);
  int64_t b = bytes_of(t, elements);
  (t.is_static ? c.read_weight : c.read_act) += b;
}

void CostContext::read_input(NodeCost& c, size_t i) const {
  if (has_input(i)) read_input_part(c, i, input(i).elements());
}

void CostContext::read_all_inputs(NodeCost& c) const {
  for (size_t i = 0; i < n_.inputs.size(); ++i) read_input(c, i);
}

void CostContext::write_all_outputs(NodeCost& c) const {
  for (int t : n_.outputs)
    if (t >= 0) c.written += bytes_of(g_.tensors[t]);
}

void RuleRegistry::add(OpRule rule) {
  std::string key = rule.domain + "::" + rule.op_type;
  if (rules_.count(key)) throw std::logic_error("duplicate cost rule for " + key);
  rules_.emplace(std::move(key), std::move(rule));
}

const OpRule* RuleRegistry::find(const std::string& domain, const std::string& op) const {
  auto it = rules_.find(domain + "::" + op);
  return it == rules_.end() ? nullptr : &it->second;
}

std::vector<const OpRule*> RuleRegistry::all() const {
  std::vector<const OpRule*> v;
  for (const auto& [k, r] : rules_) v.push_back(&r);
  return v;
}

const RuleRegistry& builtin_rules() {
  static const RuleRegistry registry = [] {
    RuleRegistry r;
    register_matmul_rules(r);
    register_conv_rules(r);
    register_elementwise_rules(r);
    register_norm_rules(r);
    register_attention_rules(r);
    register_reduce_rules(r);
    register_pooling_rules(r);
    register_data_movement_rules(r);
    register_transformer_rules(r);
    register_ssm_rules(r);
    register_quantized_rules(r);
    return r;
  }();
  return registry;
}

}  // namespace rooflens
