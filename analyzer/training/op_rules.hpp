#pragma once
// How each op trains, registered per op as the cost rules are (analyzer/ops/rule_registry.hpp):
// the dtype its outputs take as the step runs, what autograd saves for its backward, the kernels
// eager PyTorch launches where the graph's one fused node stands for several, and the node's own
// forward and backward kernels. A rule leaves empty what it has no say on and the defaults fill
// in. The step is a loop over the nodes asking each node's rule: runtime_dtypes and
// saved_activations (memory.cpp), eager_kernels (kernels.cpp), cost_rows (backward.cpp).
// docs/training.md lists each op's rule and where it was checked.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/training/step.hpp"

namespace rooflens::training {

inline bool is_weight(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].role == TensorRole::weight;
}
// Elements of tensor t (0 when absent or of unknown shape), and its rows: the elements over the
// last dimension.
inline int64_t elements_of(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].shape ? g.tensors[t].elements() : 0;
}
inline int64_t rows_of(const Graph& g, int t) {
  const auto& sh = *g.tensors[t].shape;
  return sh.empty() ? 1 : elements_of(g, t) / std::max<int64_t>(1, sh.back());
}
// An activation: present, neither a weight nor a constant.
inline bool is_activation(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].role != TensorRole::weight &&
         g.tensors[t].role != TensorRole::constant;
}

// --- what the rules are asked with -------------------------------------------------------------

// The dtype of a node's outputs: its inputs' bytes per element as the step runs them so far.
struct DtypeQuery {
  const StepContext& step;
  const Node& node;
  const RuntimeDtypes& runtime;
  int64_t in(size_t i) const { return node.input(i) >= 0 ? runtime.bytes[node.input(i)] : 0; }
  int64_t promoted() const;  // type promotion: the widest float input (0 without one)
};

// One tensor autograd keeps: a graph tensor's storage (counted once however many ops save it),
// or a tensor outside the graph (an autocast copy, an intermediate of a decomposed op, a mask).
struct SavedItem {
  int storage = -1;
  int64_t bytes = 0;
  bool replicated = false;      // a [.., hidden] tensor every tensor-parallel rank holds whole
  bool attention_core = false;  // dropped by selective recomputation
  const char* what = "";
};

// The saved tensors of one node at a time, with what the step has saved before it.
class SaveContext {
 public:
  SaveContext(const StepContext& s, const RuntimeDtypes& r) : step(s), graph(s.graph), runtime(r) {}
  const StepContext& step;
  const Graph& graph;
  const RuntimeDtypes& runtime;
  size_t index = 0;  // the node asked about
  const Node& node() const { return graph.nodes[index]; }
  const NodeCost& cost() const { return step.forward.nodes[index].cost; }

  int64_t elements(int t) const { return elements_of(graph, t); }
  int64_t rows(int t) const { return rows_of(graph, t); }
  int64_t bytes(int t) const { return runtime.storage_bytes(t); }                // per element
  SavedItem tensor(int t, const char* what) const;                               // t's storage
  SavedItem extra(int like, int64_t bytes_per_element, const char* what) const;  // a new tensor
  // Whether `what` is asked for the first time this step (tensors computed once and shared).
  bool first_time(const std::string& what) { return once_.insert(what).second; }
  // Bytes of the copy autocast caches of `weight` for the step, the first time it is asked.
  int64_t copy_bytes(int weight);
  // Ops whose saved tensors came from the generic rule, by op.
  std::map<std::string, int> generic_ops;

 private:
  bool last_dim_is_hidden(int t) const;
  std::set<std::string> once_;
  std::vector<bool> copied_ = std::vector<bool>(graph.tensors.size(), false);
};

// The eager kernels of one node at a time. Asked only for nodes whose input 0 and output 0 have
// shapes.
class EagerContext {
 public:
  EagerContext(const StepContext& s, RuntimeDtypes r)
      : step(s), graph(s.graph), runtime(std::move(r)) {}
  const StepContext& step;
  const Graph& graph;
  const RuntimeDtypes runtime;
  size_t index = 0;
  const Node& node() const { return graph.nodes[index]; }
  int x() const { return node().input(0); }
  int y() const { return node().output(0); }

  int64_t elements(int t) const { return elements_of(graph, t); }
  int64_t bytes(int t) const { return runtime.storage_bytes(t); }
  int64_t rows(int t) const { return rows_of(graph, t); }
  // Autocast casts each weight once a step: true the first time `weight` is asked.
  bool first_cast(int weight);

 private:
  std::vector<bool> cast_ = std::vector<bool>(graph.tensors.size(), false);
};

// A node's kernels in one direction: their time, FLOPs and bytes, and each launch in order.
struct Work {
  double seconds = 0;
  int64_t flops = 0, bytes = 0;
  std::vector<Launch> launches;
  void add(const NodeCost& c, Precision p, const Device& d);
  void add_seconds(double t);
  // Kernels too small to matter on the GPU that the host still issues one by one.
  void add_small(int count, const Device& d);
  // `syncs` device-to-host copies spread evenly among the launches so far.
  void mark_syncs(int syncs);
};

// One node's forward and backward kernels as its rule fills them.
struct NodeKernels {
  const StepContext& step;
  const Device& device;
  size_t index;
  const NodeResult& result;
  const NodeCost& cost;
  const EagerKernels& eager;
  TrainingRow& row;
  Precision precision;  // what the forward runs in (a rule may change it)
  Work forward, back;
  bool backward_timed = false;  // the forward's rule timed the backward too
  const Node& node() const { return step.graph.nodes[index]; }
};

// --- the rule --------------------------------------------------------------------------------

struct TrainingRule {
  std::vector<std::string> ops;  // op types it covers, any domain
  // Bytes per element of the node's float outputs (0: each keeps its own). Empty: type
  // promotion, the widest float input.
  std::function<int64_t(const DtypeQuery&)> output_bytes;
  bool view = false;                  // its outputs view input 0's storage (no copy)
  std::vector<size_t> buffer_inputs;  // weights it reads that are buffers, not learned
  // What autograd keeps for the node's backward. Empty: its float activation inputs (the generic
  // rule, which the report names).
  std::function<void(SaveContext&, std::vector<SavedItem>&)> saves;
  // A GEMM against a weight: autocast caches one copy of the weight for the step, and it saves
  // only its input, so a checkpointed layer's recomputation need not end on it.
  bool weight_gemm = false;
  // The element-wise kernels eager PyTorch launches beside the node's own or (`replaces`) instead.
  std::function<void(EagerContext&, EagerKernels&)> eager;
  // The node's own kernels. Empty: its analyzed cost forward; default_backward.
  std::function<void(NodeKernels&)> forward, backward;
  int host_only_backward_kernels = 0;  // more backward kernels that matter only to the host
  bool selective_recompute = false;    // selective recomputation runs it again (attention's core)
};

const TrainingRule* training_rule(const std::string& op_type);  // nullptr: every default

// The defaults, for rules that apply to some of their nodes only.
void default_saves(SaveContext& c, std::vector<SavedItem>& items);  // the generic rule
void saves_nothing(SaveContext& c, std::vector<SavedItem>& items);
void default_forward(NodeKernels& k);
void default_backward(NodeKernels& k);
// A node's forward kernels in issue order: its rule's (or the default), then the eager
// element-wise kernels HF's code adds (k.eager.forward). What training and inference both run.
void forward_kernels(NodeKernels& k, const TrainingRule* rule);

// Shared by the rules: one eager element-wise kernel on the roofline; a memory-bound op's
// backward (reads the output's gradient and the saved inputs, writes the inputs' gradients).
NodeCost pass_cost(const Pass& p);
NodeCost scaled_memory_cost(const NodeCost& forward, int64_t flops_factor);
// A batched GEMM whose operands and result are all activations of `element_bytes`.
NodeCost batched_gemm_cost(const GemmDims& g, int64_t element_bytes, bool tensor_cores);

// Per op family, in rules/*.cpp.
using TrainingRules = std::vector<TrainingRule>;
void register_linear_training_rules(TrainingRules& r);       // MatMul, Gemm, Conv
void register_norm_training_rules(TrainingRules& r);         // batch, layer and RMS norm
void register_elementwise_training_rules(TrainingRules& r);  // activations, products, sums
void register_data_training_rules(TrainingRules& r);         // views, gathers, max pooling
void register_attention_training_rules(TrainingRules& r);    // Attention, RotaryEmbedding
void register_moe_training_rules(TrainingRules& r);          // MoE, TopK

}  // namespace rooflens::training
