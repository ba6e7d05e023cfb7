// The forward as eager PyTorch runs it for inference: each node's kernels from its training rule's
// forward (op_rules.hpp), with the element-wise kernels Hugging Face's code writes fused nodes as
// (RMSNorm's eight, GPT-2's written-out GELU, RoPE's rotate_half), the model in one dtype and no
// autocast. What `--runtime eager|graphs` queues behind the host (analyzer/runtime).
#include "analyzer/training/eager_forward.hpp"

#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

// K then V: torch.cat reads the cached tokens and the new one and writes them all; index_copy_
// writes the new token.
std::vector<Pass> cache_append(const AttentionDims& d, KvAppend kv, int64_t bytes) {
  std::vector<Pass> out;
  for (int64_t head_dim : {d.head_dim_qk, d.head_dim_v}) {
    int64_t row = d.batch * d.kv_heads * head_dim;
    if (kv == KvAppend::dynamic)
      out.push_back({row * d.kv_len, bytes, bytes});
    else
      out.push_back({row, bytes, bytes});
  }
  return out;
}

}  // namespace

std::vector<std::vector<double>> eager_forward_kernels(const TransformerConfig& c,
                                                       const LoweringOptions& l, const Graph& g,
                                                       const Analysis& a, const Device& device,
                                                       KvAppend kv) {
  // The dtype the model runs in: its GEMMs' (fp32 and TF32 keep fp32 activations).
  Precision p = Precision::bf16;
  for (const NodeResult& n : a.nodes)
    if (n.status == NodeStatus::costed && n.family == OpFamily::gemm) {
      p = n.precision;
      break;
    }
  // Inference runs in eval mode: no dropout kernels.
  TransformerConfig eval = c;
  eval.embed_dropout = eval.attn_dropout = eval.resid_dropout = 0;
  TrainingOptions t;
  t.precision =
      p == Precision::fp32 || p == Precision::tf32 ? TrainPrecision::fp32 : TrainPrecision::bf16;
  StepContext s = step_context(eval, t, l, g, a);
  std::vector<EagerKernels> eager = eager_kernels(s);
  std::vector<std::vector<double>> out(a.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeResult& n = a.nodes[i];
    // The cache append is the attention's below, as eager PyTorch or a graph runs it.
    if (n.status != NodeStatus::costed || g.nodes[i].role == NodeRole::kv_write) continue;
    TrainingRow row;
    if (kv != KvAppend::none && n.cost.kernel.attention && n.cost.kernel.attention->q_len == 1)
      for (const Pass& p : cache_append(*n.cost.kernel.attention, kv, s.stream_bytes))
        out[i].push_back(place_on_roofline(pass_cost(p), Precision::fp32, device).predicted);
    const TrainingRule* rule = training_rule(g.nodes[i].op_type);
    NodeKernels node{s, device, i, n, n.cost, eager[i], row, n.precision, {}, {}};
    forward_kernels(node, rule);
    for (const Launch& k : node.forward.launches) out[i].push_back(k.gpu_s);
  }
  return out;
}

}  // namespace rooflens::training
