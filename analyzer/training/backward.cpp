// A training step's backward, node by node: each forward node's kernels forward and backward as
// its training rule (op_rules.hpp, rules/*.cpp) says, the eager element-wise kernels beside them,
// their FLOPs, bytes and time, and what a recomputed forward adds.
#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {

void cost_rows(const StepContext& s, const Device& device, const SavedActivations& saved,
               TrainingSummary& out, std::vector<NodeLaunches>& launches) {
  const Analysis& f = s.forward;
  std::vector<EagerKernels> eager = eager_kernels(s);
  bool full = s.train.recompute == Recompute::full,
       selective = s.train.recompute == Recompute::selective;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const NodeResult& n = f.nodes[i];
    TrainingRow r;
    r.node = static_cast<int>(i);
    r.layer = s.layer_of[i];
    r.saved_bytes = saved.node_bytes[i];
    r.saved = saved.node_what[i];
    if (n.status != NodeStatus::costed) {
      out.rows.push_back(r);
      launches.emplace_back();
      continue;
    }
    const NodeCost& c = n.cost;
    const EagerKernels& k = eager[i];
    const TrainingRule* rule = training_rule(s.graph.nodes[i].op_type);
    NodeKernels node{s, device, i, n, c, k, r, n.precision, {}, {}};
    forward_kernels(node, rule);
    for (const Pass& p : k.backward) node.back.add(pass_cost(p), Precision::fp32, device);
    r.forward_s = node.forward.seconds;
    r.forward_flops = c.flops;
    r.forward_bytes = node.forward.bytes;
    if (k.replaces) {
      // the eager kernels are the node's whole backward
    } else if (rule && rule->backward) {
      rule->backward(node);
    } else {
      default_backward(node);
    }
    if (rule) node.back.add_small(rule->host_only_backward_kernels, device);
    node.forward.mark_syncs(k.forward_syncs);
    node.back.mark_syncs(k.backward_syncs);
    launches.push_back(NodeLaunches{node.forward.launches, node.back.launches});
    r.backward_s = node.back.seconds;
    r.backward_flops = node.back.flops;
    r.backward_bytes = node.back.bytes;
    if (k.replaces)
      r.backward_flops = checked_mul(c.flops, kBackwardMemoryFactor, "backward FLOPs");
    bool attention = rule && rule->selective_recompute;
    bool recompute =
        r.layer >= 0 && ((full && saved.recomputed[i]) ||
                         (selective && attention && s.attention_backend == AttentionBackend::math));
    if (recompute) {
      r.recompute_s = r.forward_s;
      r.recompute_flops = r.forward_flops;
      if (r.gemm_dense_flops > 0)
        r.gemm_dense_flops +=
            attention ? attention_matmul_flops(*c.kernel.attention, true) : checked_mul(*c.macs, 2);
    }
    out.rows.push_back(r);
  }
}

}  // namespace rooflens::training
