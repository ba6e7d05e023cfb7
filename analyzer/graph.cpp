#include "analyzer/graph.hpp"

#include <fmt/format.h>

#include "analyzer/checked.hpp"

namespace rooflens {

int64_t Tensor::elements() const { return checked_product(*shape, "tensor '" + name + "' size"); }

const Attribute* Node::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::Kind::i ? a->i : fallback;
}

double Node::attr_float(const std::string& key, double fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::Kind::f ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == Attribute::Kind::s ? a->s : fallback;
}

std::optional<std::vector<int64_t>> Node::attr_ints(const std::string& key) const {
  const Attribute* a = attr(key);
  if (!a || a->kind != Attribute::Kind::ints) return std::nullopt;
  return a->ints;
}

std::string Node::display_op() const {
  return domain.empty() || domain == "ai.onnx" ? op_type : domain + "." + op_type;
}

int Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int Graph::add_tensor(Tensor t) {
  int idx = static_cast<int>(tensors.size());
  by_name_.emplace(t.name, idx);
  tensors.push_back(std::move(t));
  return idx;
}

int64_t Graph::default_opset() const {
  auto it = opsets.find("");
  if (it != opsets.end()) return it->second;
  it = opsets.find("ai.onnx");
  return it == opsets.end() ? 0 : it->second;
}

std::string shape_string(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

}  // namespace rooflens
