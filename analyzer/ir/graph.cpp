#include "analyzer/ir/graph.hpp"

#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"

namespace rooflens {

const Value* Graph::value(int t) {
  if (t < 0) return nullptr;
  Tensor& x = tensors[t];
  if (x.value_in_file && stored) x.value = stored->read(t);
  x.value_in_file = false;
  return x.value ? &*x.value : nullptr;
}

int64_t Tensor::elements() const {
  return checked_product(*shape, "tensor '" + name + "' size");
}

const Attribute* Node::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

namespace {

std::string_view kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::i:
      return "an int";
    case Attribute::Kind::f:
      return "a float";
    case Attribute::Kind::s:
      return "a string";
    case Attribute::Kind::ints:
      return "ints";
    case Attribute::Kind::floats:
      return "floats";
    case Attribute::Kind::strings:
      return "strings";
    case Attribute::Kind::tensor:
      return "a tensor";
    case Attribute::Kind::graph:
      return "a graph";
    case Attribute::Kind::other:
      return "an unsupported kind";
  }
  return "?";
}

}  // namespace

// An attribute that exists with another type than the op defines is bad input, never a
// silent default.
const Attribute* Node::typed_attr(const std::string& key, Attribute::Kind want) const {
  const Node& n = *this;
  const Attribute* a = n.attr(key);
  if (a && a->kind != want)
    throw InputError(fmt::format("node '{}' ({}): attribute '{}' must be {}, not {}", n.name,
                                 n.display_op(), key, kind_name(want), kind_name(a->kind)));
  return a;
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = typed_attr(key, Attribute::Kind::i);
  return a ? a->i : fallback;
}

double Node::attr_float(const std::string& key, double fallback) const {
  const Attribute* a = typed_attr(key, Attribute::Kind::f);
  return a ? a->f : fallback;
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = typed_attr(key, Attribute::Kind::s);
  return a ? a->s : fallback;
}

std::optional<std::vector<int64_t>> Node::attr_ints(const std::string& key) const {
  const Attribute* a = typed_attr(key, Attribute::Kind::ints);
  if (!a) return std::nullopt;
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

std::string shape_string(const Shape& s) {
  return fmt::format("[{}]", fmt::join(s, ","));
}

}  // namespace rooflens
