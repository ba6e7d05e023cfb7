// The element-wise kernels Hugging Face's eager PyTorch code launches for the nodes the lowering
// fuses into one, asked of each node's training rule (rules/*.cpp): GPT-2's written-out GELU,
// Llama's RMSNorm, autocast's casts, dropout, the gradient accumulation where the residual stream
// branches. Bytes in the dtypes the step runs in (runtime_dtypes). docs/training.md lists them.
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {

std::vector<EagerKernels> eager_kernels(const StepContext& s) {
  EagerContext context(s, runtime_dtypes(s));
  const Graph& g = s.graph;
  std::vector<EagerKernels> out(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int x = n.input(0), y = n.output(0);
    if (x < 0 || y < 0 || !g.tensors[y].shape || !g.tensors[x].shape) continue;
    const TrainingRule* rule = training_rule(n.op_type);
    if (!rule || !rule->eager) continue;
    context.index = i;
    rule->eager(context, out[i]);
  }
  return out;
}

}  // namespace rooflens::training
