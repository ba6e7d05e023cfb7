// Mixture-of-experts layers in training as Hugging Face's grouped_mm experts run them: the
// routing's small kernels, the expert GEMMs (a loop over experts in fp32), what they save.
#include "analyzer/core/checked.hpp"
#include "analyzer/hw/roofline.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

// transformers 5.17's experts (grouped_mm): the routed rows of x, the gate-up output, the SiLU
// output, the product and the down output, T*k*(2h + 4i) elements; grouped_mm is not autocast,
// so under autocast they stay in the residual stream's fp32. Plus the routing indices.
void experts_saves(SaveContext& c, std::vector<SavedItem>& items) {
  const auto& moe = c.cost().kernel.moe;
  if (!moe) return;
  int64_t routed = checked_mul(moe->tokens, moe->k, "routed tokens");
  int64_t per = 2 * moe->hidden + (moe->gated ? 4 : 2) * moe->inter;
  int64_t eb = c.step.autocast ? c.step.stream_bytes : c.step.output_bytes;
  items.push_back(SavedItem{-1, checked_mul(checked_mul(routed, per), eb, "saved bytes"), false,
                            false, "expert rows"});
  items.push_back(
      SavedItem{-1, checked_mul(routed, 3 * 8 + 4), false, false, "routing indices and weights"});
}

// Around the expert GEMMs (the node's own cost): the top-k weights renormalised, the assignments
// sorted and counted (histc, cumsum), the rows gathered in expert order, SiLU and the gate
// product, the routing weights applied, the rows put back and summed over the k choices. Small
// kernels on T*k routing entries; the rest move T*k rows. The backward's index ops sort again
// (index_put with accumulation). torch._grouped_mm has no fp32 kernel: its fallback reads the
// group offsets on the host, once per call (2 forward, 4 backward), counted in the H100 traces
// of scripts/gpu/training_kernel_breakdown.py.
void experts_eager(EagerContext& c, EagerKernels& k) {
  const Graph& g = c.graph;
  int x = c.x(), gate = c.node().input(2);
  if (gate < 0 || !g.tensors[gate].shape || g.tensors[gate].shape->size() != 3) return;
  int64_t hidden = g.tensors[x].shape->back(), inter = (*g.tensors[gate].shape)[2];
  int64_t topk = std::max<int64_t>(1, c.step.config.experts_per_token);
  int64_t rows = c.elements(x) / std::max<int64_t>(1, hidden) * topk;
  int64_t xb = c.bytes(x), ab = c.step.autocast ? 4 : xb;  // grouped_mm: fp32 under autocast
  Pass route{rows, 8, 8}, row{rows * hidden, ab, ab}, act{rows * inter, ab, ab};
  auto repeat = [](std::vector<Pass>& v, const Pass& p, int count) {
    v.insert(v.end(), static_cast<size_t>(count), p);
  };
  repeat(k.forward, route, 16);  // div, histc, sort, cumsum, arange, floor_divide, ge, clamp, fill
  k.forward.push_back(row);      // gather the rows
  repeat(k.forward, route, 4);   // the gathers' index math, the grouped GEMMs' offsets
  k.forward.push_back({act.elements, ab, ab});      // SiLU
  k.forward.push_back({act.elements, 2 * ab, ab});  // times up
  k.forward.push_back({row.elements, ab + 4, ab});  // routing weights
  repeat(k.forward, row, 3);                        // masked fills, index_put
  repeat(k.forward, route, 2);
  k.forward.push_back({row.elements, ab, ab / topk});  // sum over k
  repeat(k.backward, route, 40);                       // the index backwards' sorts and scatters
  k.backward.push_back({row.elements, 2 * ab, ab});
  k.backward.push_back({row.elements, 2 * ab, ab});  // routing weights: d rows, d weights
  k.backward.push_back({row.elements, 2 * ab, 4});
  k.backward.push_back({act.elements, 3 * ab, ab});  // the gate product, SiLU
  k.backward.push_back({act.elements, 3 * ab, ab});
  k.backward.push_back({act.elements, 2 * ab, ab});
  repeat(k.backward, row, 3);  // masked fills, the sum's expand
  repeat(k.backward, route, 16);
  bool fp32 = ab == 4;
  k.forward_syncs = fp32 ? 2 : 0;
  k.backward_syncs = fp32 ? 4 : 0;
}

// The routed experts' GEMMs: per layer two calls (gate and up fused, then down) over the rows
// sorted by expert, uniform routing giving each expert T*k/E rows; the backward's input and
// weight gradients per call. torch._grouped_mm has no fp32 kernel: its fallback loops over the
// experts, a GEMM (and a launch) each.
void expert_gemms(const MoeDims& d, Precision p, const Device& device, Work& f, Work& b) {
  int64_t rows = ceil_div(checked_mul(d.tokens, d.k, "MoE size"), std::max<int64_t>(1, d.experts));
  bool fallback = p == Precision::fp32;
  int64_t eb = p == Precision::fp32 ? 4 : 2;
  struct Call {
    int64_t n, k;
  };
  const Call calls[2] = {{d.gated ? 2 * d.inter : d.inter, d.hidden}, {d.hidden, d.inter}};
  for (const Call& call : calls) {
    GemmDims fwd{1, rows, call.n, call.k}, dx{1, rows, call.k, call.n}, dw{1, call.k, call.n, rows};
    auto time = [&](const GemmDims& g) {
      return place_on_roofline(batched_gemm_cost(g, eb, !fallback), p, device).predicted;
    };
    double tf = 0, tb = 0;
    for (int64_t e = 0; e < d.experts; ++e) {
      double one_f = time(fwd), one_b = time(dx) + time(dw);
      if (fallback) {
        f.add_seconds(one_f);
        b.add_seconds(one_b);
      }
      tf += one_f;
      tb += one_b;
    }
    if (!fallback) {
      f.add_seconds(tf);
      b.add_seconds(tb);
    }
    f.flops = checked_add(f.flops, checked_mul(gemm_flops(fwd), d.experts));
    b.flops = checked_add(b.flops, checked_mul(kBackwardGemmFactor * gemm_flops(fwd), d.experts));
  }
}

// grouped_mm is not on autocast's list: under autocast the experts run in fp32.
void experts_forward(NodeKernels& k) {
  if (k.step.autocast) k.precision = Precision::fp32;
  if (!k.cost.kernel.moe || !k.cost.macs) return default_forward(k);
  expert_gemms(*k.cost.kernel.moe, k.precision, k.device, k.forward, k.back);
  k.backward_timed = true;
}

void experts_backward(NodeKernels& k) {
  if (!k.backward_timed) return default_backward(k);
  k.row.gemm_dense_flops = checked_mul(*k.cost.macs, 2 * (1 + kBackwardGemmFactor), "matrix FLOPs");
}

void top_k_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int indices = c.node().output(1);
  if (indices < 0) return default_saves(c, items);
  items.push_back(c.tensor(indices, "indices"));
}

}  // namespace

void register_moe_training_rules(TrainingRules& r) {
  TrainingRule moe;
  moe.ops = {"MoE"};
  moe.output_bytes = [](const DtypeQuery& q) { return q.step.output_bytes; };
  moe.saves = experts_saves;
  moe.eager = experts_eager;
  moe.forward = experts_forward;
  moe.backward = experts_backward;
  r.push_back(moe);

  TrainingRule top_k;
  top_k.ops = {"TopK"};
  top_k.saves = top_k_saves;
  r.push_back(top_k);
}

}  // namespace rooflens::training
