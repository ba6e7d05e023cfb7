// GEMMs against weights and convolutions: autocast's casts and weight copies, what they save, and
// their backward as the data- and weight-gradient kernels PyTorch launches.
#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

int64_t gemm_output_bytes(const DtypeQuery& q) {
  return q.step.output_bytes;
}

// y = x W: the backward needs x for dW (and W for dX). Autocast casts x for each GEMM that reads
// it (no cache for activations) and caches one copy of each weight for the step.
void gemm_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int x = c.node().input(0), w = c.node().input(1);
  if (!is_weight(c.graph, w)) {
    items.push_back(c.tensor(x, "input"));
    if (w >= 0) items.push_back(c.tensor(w, "input"));
    return;
  }
  if (c.step.train.precision == TrainPrecision::fp8_mixed)
    items.push_back(c.extra(x, 1, "fp8 input"));
  else if (c.bytes(x) == c.step.gemm_bytes)
    items.push_back(c.tensor(x, "input"));
  else
    items.push_back(c.extra(x, c.step.gemm_bytes, "autocast copy of the input"));
}

// Autocast casts a GEMM's input for each GEMM that reads it, and each weight once a step; the
// backward casts the gradients back.
void autocast_casts(EagerContext& c, EagerKernels& k) {
  int x = c.x(), w = c.node().input(1);
  const StepContext& s = c.step;
  if (!s.autocast || !is_weight(c.graph, w)) return;
  int64_t ex = c.elements(x), xb = c.bytes(x);
  if (xb != s.gemm_bytes) {
    k.forward.push_back({ex, xb, s.gemm_bytes});
    k.backward.push_back({ex, s.gemm_bytes, xb});
  }
  if (c.first_cast(w)) {
    k.forward.push_back({c.elements(w), s.param_bytes, s.gemm_bytes});
    k.backward.push_back({c.elements(w), s.gemm_bytes, s.param_bytes});
  }
}

// cuDNN's convolution kernels work in NHWC: for NCHW tensors it converts the input and the
// output in the forward, and the output's gradient, the input (for the weight gradient) and
// the input's gradient in the backward (the nchwToNhwc / nhwcToNchw kernels of the ResNet-50
// traces, about four per convolution).
void nchw_conversions(EagerContext& c, EagerKernels& k) {
  int x = c.x(), y = c.y();
  if (c.graph.tensors[x].shape->size() != 4) return;
  Pass in{c.elements(x), c.bytes(x), c.bytes(x)}, out{c.elements(y), c.bytes(y), c.bytes(y)};
  k.forward.push_back(in);
  k.forward.push_back(out);
  k.backward.push_back(out);
  k.backward.push_back(in);
  if (c.graph.tensors[x].role != TensorRole::input) k.backward.push_back(in);
}

// dX = dY W^T and dW = X^T dY as the two GEMMs the backward launches. A weight's gradient is
// written in the weights' dtype; everything else in the GEMM's output dtype.
std::vector<NodeCost> gemm_gradients(const NodeCost& f, int64_t out_bytes, int64_t grad_bytes) {
  const GemmDims& d = *f.kernel.gemm;
  bool weight = f.kernel.gemm_b_shared;
  GemmDims dgrad{d.batch, d.m, d.k, d.n};
  GemmDims wgrad =
      weight ? GemmDims{1, d.k, d.n, checked_mul(d.batch, d.m)} : GemmDims{d.batch, d.k, d.n, d.m};
  std::vector<NodeCost> out;
  for (int which = 0; which < 2; ++which) {
    const GemmDims& g = which == 0 ? dgrad : wgrad;
    NodeCost c = gemm_cost(g, f.tensor_cores);
    int64_t a = checked_mul(g.batch, checked_mul(g.m, g.k)),
            b = checked_mul(weight && which == 0 ? 1 : g.batch, checked_mul(g.k, g.n));
    c.read_act = checked_mul(checked_add(a, b), out_bytes);
    c.written = checked_mul(checked_mul(g.batch, checked_mul(g.m, g.n)),
                            which == 1 && weight ? grad_bytes : out_bytes);
    c.kernel.gemm_b_shared = which == 0 && weight;
    out.push_back(c);
  }
  return out;
}

void gemm_backward(NodeKernels& k) {
  if (!k.cost.kernel.gemm) return default_backward(k);
  for (const NodeCost& b : gemm_gradients(k.cost, k.step.output_bytes, k.step.param_bytes))
    k.back.add(b, k.result.precision, k.device);
  k.row.gemm_dense_flops = checked_mul(*k.cost.macs, 2 * (1 + kBackwardGemmFactor), "matrix FLOPs");
}

// cuDNN's data and weight gradients, each as heavy as the forward; the data gradient is not
// computed for the graph's own input (FlopCounterMode counts the same).
void conv_backward(NodeKernels& k) {
  if (!k.cost.macs) return default_backward(k);
  int x = k.node().input(0);
  bool input_grad = x >= 0 && k.step.graph.tensors[x].role != TensorRole::input;
  if (input_grad) k.back.add(k.cost, k.precision, k.device);
  k.back.add(k.cost, k.precision, k.device);
  int64_t gradients = input_grad ? kBackwardGemmFactor : kBackwardGemmFactor - 1;
  k.row.gemm_dense_flops = checked_mul(*k.cost.macs, 2 * (1 + gradients), "matrix FLOPs");
}

}  // namespace

void register_linear_training_rules(TrainingRules& r) {
  TrainingRule gemm;
  gemm.output_bytes = gemm_output_bytes;
  gemm.saves = gemm_saves;
  gemm.weight_gemm = true;
  gemm.backward = gemm_backward;

  TrainingRule matmul = gemm;
  matmul.ops = {"MatMul", "FusedMatMul"};
  matmul.eager = autocast_casts;
  r.push_back(matmul);

  gemm.ops = {"Gemm"};
  r.push_back(gemm);

  TrainingRule conv;
  conv.ops = {"Conv"};
  conv.output_bytes = gemm_output_bytes;
  conv.saves = gemm_saves;
  conv.weight_gemm = true;
  conv.eager = nchw_conversions;
  conv.backward = conv_backward;
  r.push_back(conv);
}

}  // namespace rooflens::training
