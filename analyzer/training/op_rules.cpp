// The training rules' registry, the contexts they are asked with, and the defaults.
#include "analyzer/training/op_rules.hpp"

#include <algorithm>
#include <stdexcept>

#include "analyzer/core/checked.hpp"
#include "analyzer/hw/roofline.hpp"

namespace rooflens::training {

int64_t DtypeQuery::promoted() const {
  int64_t out = 0;
  for (int t : node.inputs)
    if (t >= 0 && is_float(step.graph.tensors[t].dtype)) out = std::max(out, runtime.bytes[t]);
  return out;
}

bool SaveContext::last_dim_is_hidden(int t) const {
  return t >= 0 && graph.tensors[t].shape && !graph.tensors[t].shape->empty() &&
         graph.tensors[t].shape->back() == step.config.hidden;
}

SavedItem SaveContext::tensor(int t, const char* what) const {
  int b = runtime.base[t];
  return SavedItem{b, checked_mul(elements(b), runtime.bytes[b], "saved bytes"),
                   last_dim_is_hidden(b), false, what};
}

SavedItem SaveContext::extra(int like, int64_t bytes_per_element, const char* what) const {
  return SavedItem{-1, checked_mul(elements(like), bytes_per_element, "saved bytes"),
                   last_dim_is_hidden(like), false, what};
}

int64_t SaveContext::copy_bytes(int weight) {
  if (!step.autocast || weight < 0 || copied_[weight]) return 0;
  copied_[weight] = true;
  return checked_mul(elements(weight), step.gemm_bytes, "autocast copy");
}

bool EagerContext::first_cast(int weight) {
  if (cast_[weight]) return false;
  cast_[weight] = true;
  return true;
}

void Work::add(const NodeCost& c, Precision p, const Device& d) {
  add_seconds(place_on_roofline(c, p, d).predicted);
  flops = checked_add(flops, c.flops, "FLOPs");
  bytes = checked_add(bytes, c.bytes(), "bytes");
}

void Work::add_seconds(double t) {
  seconds += t;
  launches.push_back(Launch{t, false});
}

void Work::add_small(int count, const Device& d) {
  for (int i = 0; i < count; ++i) add_seconds(d.launch_floor_s);
}

void Work::mark_syncs(int syncs) {
  if (syncs <= 0 || launches.empty()) return;
  size_t step = std::max<size_t>(1, launches.size() / static_cast<size_t>(syncs + 1));
  for (int k = 1; k <= syncs; ++k)
    launches[std::min(launches.size() - 1, step * static_cast<size_t>(k))].sync = true;
}

NodeCost pass_cost(const Pass& p) {
  NodeCost c;
  c.read_act = checked_mul(p.elements, p.read, "kernel bytes");
  c.written = checked_mul(p.elements, p.write, "kernel bytes");
  c.flops = p.elements;
  c.parallel_tiles = elementwise_tiles(p.elements);
  c.kernel.memory = MemoryKernel::elementwise;
  return c;
}

NodeCost scaled_memory_cost(const NodeCost& f, int64_t flops_factor) {
  NodeCost b;
  b.flops = checked_mul(f.flops, flops_factor, "backward FLOPs");
  // the output's gradient and the saved inputs; the inputs' (and weights') gradients
  b.read_act = checked_add(f.read_act, f.written, "backward bytes");
  b.read_weight = f.read_weight;
  b.written = checked_add(f.read_act, f.read_weight > 0 ? f.read_weight : 0, "backward bytes");
  b.kernel.memory = f.kernel.memory;
  b.parallel_tiles = f.parallel_tiles;
  return b;
}

NodeCost batched_gemm_cost(const GemmDims& g, int64_t element_bytes, bool tensor_cores) {
  NodeCost c = gemm_cost(g, tensor_cores);
  c.read_act =
      checked_mul(checked_mul(g.batch, checked_add(checked_mul(g.m, g.k), checked_mul(g.k, g.n))),
                  element_bytes, "attention bytes");
  c.written = checked_mul(checked_mul(g.batch, checked_mul(g.m, g.n)), element_bytes);
  return c;
}

// Most autograd formulas keep their float activation inputs; the report names the ops this rule
// priced.
void default_saves(SaveContext& c, std::vector<SavedItem>& items) {
  const Node& n = c.node();
  bool any = false;
  for (int t : n.inputs)
    if (is_activation(c.graph, t) && is_float(c.graph.tensors[t].dtype) &&
        c.graph.tensors[t].shape) {
      items.push_back(c.tensor(t, "inputs (generic rule)"));
      any = true;
    }
  if (any) ++c.generic_ops[n.display_op()];
}

void saves_nothing(SaveContext&, std::vector<SavedItem>&) {}

void default_forward(NodeKernels& k) {
  if (!k.eager.replaces) k.forward.add(k.cost, k.precision, k.device);
}

void forward_kernels(NodeKernels& k, const TrainingRule* rule) {
  if (rule && rule->forward)
    rule->forward(k);
  else
    default_forward(k);
  for (const Pass& p : k.eager.forward) k.forward.add(pass_cost(p), Precision::fp32, k.device);
}

// A collective's backward is the input gradient's collective; a memory-bound op's reads the
// output's gradient and what it saved and writes the inputs' gradients.
void default_backward(NodeKernels& k) {
  if (k.result.family == OpFamily::communication)
    k.back.add(k.cost, k.result.precision, k.device);
  else if (k.cost.bytes() > 0)
    k.back.add(scaled_memory_cost(k.cost, kBackwardMemoryFactor), k.result.precision, k.device);
}

namespace {

std::map<std::string, TrainingRule> build_registry() {
  TrainingRules all;
  register_linear_training_rules(all);
  register_norm_training_rules(all);
  register_elementwise_training_rules(all);
  register_data_training_rules(all);
  register_attention_training_rules(all);
  register_moe_training_rules(all);
  std::map<std::string, TrainingRule> by_op;
  for (const TrainingRule& r : all)
    for (const std::string& op : r.ops)
      if (!by_op.emplace(op, r).second) throw std::logic_error("two training rules for " + op);
  return by_op;
}

}  // namespace

const TrainingRule* training_rule(const std::string& op_type) {
  static const std::map<std::string, TrainingRule> registry = build_registry();
  auto it = registry.find(op_type);
  return it == registry.end() ? nullptr : &it->second;
}

}  // namespace rooflens::training
