// Views, gathers and max pooling in training: views share their input's storage and save nothing,
// a gather keeps its indices, an embedding's backward writes the whole table's gradient.
#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

// The embedding's backward (a sort and a scatter) launches about 30 small kernels (the H100
// traces of scripts/gpu/training_kernel_breakdown.py).
constexpr int kEmbeddingBackwardExtra = 30;

// torch's split returns views (no kernel); the backward concatenates the parts' gradients.
void split_eager(EagerContext& c, EagerKernels& k) {
  int x = c.x();
  k.replaces = true;
  k.backward = {{c.elements(x), c.bytes(x), c.bytes(x)}};
}

void gather_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int indices = c.node().input(1);
  if (indices < 0) return default_saves(c, items);
  items.push_back(c.tensor(indices, "indices"));
}

// An embedding's backward writes the whole table's gradient.
void gather_backward(NodeKernels& k) {
  const Graph& g = k.step.graph;
  int table = k.node().input(0);
  if (!is_weight(g, table)) return default_backward(k);
  NodeCost b;
  b.read_act = k.cost.written;
  b.written = checked_mul(g.tensors[table].elements(), k.step.param_bytes);
  b.kernel.memory = MemoryKernel::elementwise;
  k.back.add(b, k.result.precision, k.device);
  k.back.add_small(kEmbeddingBackwardExtra, k.device);
}

// max_pool2d_with_indices keeps its input and the argmax of each output (int64).
void max_pool_saves(SaveContext& c, std::vector<SavedItem>& items) {
  const Node& n = c.node();
  items.push_back(c.tensor(n.input(0), "input"));
  if (n.output(0) >= 0) items.push_back(c.extra(n.output(0), 8, "indices"));
}

}  // namespace

void register_data_training_rules(TrainingRules& r) {
  TrainingRule view;
  view.ops = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
  view.view = true;
  view.saves = saves_nothing;
  r.push_back(view);

  TrainingRule split = view;
  split.ops = {"Split"};
  split.eager = split_eager;
  r.push_back(split);

  TrainingRule gather;
  gather.ops = {"Gather"};
  // an embedding's rows in the weights' dtype
  gather.output_bytes = [](const DtypeQuery& q) {
    return is_weight(q.step.graph, q.node.input(0)) ? q.step.param_bytes : q.in(0);
  };
  gather.saves = gather_saves;
  gather.backward = gather_backward;
  r.push_back(gather);

  TrainingRule max_pool;
  max_pool.ops = {"MaxPool"};
  max_pool.saves = max_pool_saves;
  r.push_back(max_pool);
}

}  // namespace rooflens::training
