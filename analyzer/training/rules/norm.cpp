// Batch, layer and RMS normalization in training: batch norm's measured NCHW kernels, autocast's
// fp32 layer norm, Hugging Face's RMSNorm written out as eager kernels.
#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

// LayerNorm's backward reduces gamma and beta in two more kernels (the H100 traces of
// scripts/gpu/training_kernel_breakdown.py).
constexpr int kLayerNormBackwardExtra = 2;

// Training-mode batch norm from the profile's measured tables (scripts/gpu/batch_norm_training.py:
// PyTorch's NCHW kernels reach a fraction of HBM bandwidth), forward and backward seconds; beyond
// the grid, the nearest edge scaled by the elements. nullopt without the tables.
std::optional<std::pair<double, double>> batch_norm_training_time(const Shape& x, Precision p,
                                                                  const Device& device) {
  if (!device.perf || x.size() < 2) return std::nullopt;
  std::string dtype = p == Precision::fp32 ? "fp32" : "bf16";
  auto fwd = device.perf->tables.find("train.batch_norm." + dtype);
  auto bwd = device.perf->tables.find("train.batch_norm_backward." + dtype);
  if (fwd == device.perf->tables.end() || bwd == device.perf->tables.end()) return std::nullopt;
  double hw = 1;
  for (size_t i = 2; i < x.size(); ++i) hw *= static_cast<double>(x[i]);
  std::vector<double> at{static_cast<double>(x[0]), static_cast<double>(x[1]), hw};
  auto one = [&](const PerfTable& t) -> std::optional<double> {
    if (auto v = t.lookup(at)) return v;
    return t.extrapolate(at, [](const std::vector<double>& x) { return x[0] * x[1] * x[2]; });
  };
  auto f = one(fwd->second), b = one(bwd->second);
  if (!f || !b) return std::nullopt;
  return std::pair{*f, *b};
}

// Training-mode batch norm keeps its input and each channel's mean and inverse deviation.
void batch_norm_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int x = c.node().input(0);
  items.push_back(c.tensor(x, "input"));
  const auto& sh = *c.graph.tensors[x].shape;
  items.push_back(SavedItem{-1, checked_mul(sh.size() > 1 ? sh[1] : 1, 8), false, false,
                            "mean and inverse deviation"});
}

// PyTorch's own kernels for a bf16 input (statistics, transform) or cuDNN's, and the
// num_batches_tracked increment; both directions timed from the measured tables.
void batch_norm_forward(NodeKernels& k) {
  int x = k.node().input(0);
  std::optional<std::pair<double, double>> t;
  if (x >= 0 && k.step.graph.tensors[x].shape)
    t = batch_norm_training_time(*k.step.graph.tensors[x].shape, k.precision, k.device);
  if (!t) return default_forward(k);
  k.forward.add_seconds(t->first);
  k.forward.add_small(k.precision == Precision::fp32 ? 1 : 2, k.device);
  k.back.add_seconds(t->second);
  k.forward.flops = k.cost.flops;
  k.forward.bytes = k.cost.bytes();
  k.backward_timed = true;
}

void batch_norm_backward(NodeKernels& k) {
  if (!k.backward_timed) return default_backward(k);
  k.back.flops = checked_mul(k.cost.flops, kBackwardMemoryFactor, "backward FLOPs");
  k.back.bytes = scaled_memory_cost(k.cost, kBackwardMemoryFactor).bytes();
}

void layer_norm_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int x = c.node().input(0);
  if (c.step.autocast && c.bytes(x) != 4)
    items.push_back(c.extra(x, 4, "fp32 copy of the input"));
  else
    items.push_back(c.tensor(x, "input"));
  items.push_back(SavedItem{-1, checked_mul(c.rows(x), 8), false, false, "mean and rstd"});
}

void layer_norm_eager(EagerContext& c, EagerKernels& k) {
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), yb = c.bytes(c.y());
  k.replaces = true;
  k.forward = {{e, xb, yb}};
  k.backward = {{e, xb + 2 * yb, xb}};  // x, the gradient (and the output's statistics); dx
}

// Hugging Face's RMSNorm: x.to(fp32), x * rsqrt(mean(x^2) + eps), weight * that.to(input dtype).
void rms_norm_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int x = c.node().input(0);
  int64_t xb = c.bytes(x);
  if (xb == 4)
    items.push_back(c.tensor(x, "input"));
  else
    items.push_back(c.extra(x, 4, "fp32 copy of the input"));
  items.push_back(SavedItem{-1, checked_mul(c.rows(x), 4), false, false, "rsqrt"});
  if (is_weight(c.graph, c.node().input(1))) items.push_back(c.extra(x, xb, "normalized input"));
}

// The same as eager kernels: to(fp32), pow, mean, add, rsqrt, mul, to(dtype), mul by the weight;
// the backward about twice as many passes over x.
void rms_norm_eager(EagerContext& c, EagerKernels& k) {
  int64_t e = c.elements(c.y()), r = c.rows(c.x()), xb = c.bytes(c.x()), yb = c.bytes(c.y());
  k.replaces = true;
  if (xb != 4) k.forward.push_back({e, xb, 4});
  k.forward.insert(k.forward.end(), {{e, 4, 4}, {e, 4, 0}, {r, 4, 4}, {r, 4, 4}, {e, 4, 4}});
  if (xb != 4) k.forward.push_back({e, 4, xb});
  k.forward.push_back({e, xb, yb});
  // w * h: dh (a mul), dw (a mul and a row sum); the cast's backward; h * r: dh, dr (a mul and a
  // row sum); rsqrt's backward (three kernels on the rows); mean's (an expand); pow's (four:
  // pow, two muls, and the sum with the other path); the cast back.
  k.backward = {{e, 2 * yb, yb}, {e, 2 * yb, 4}, {e, 4, 0}};
  if (xb != 4) k.backward.push_back({e, yb, 4});
  k.backward.insert(k.backward.end(), {{e, 8, 4},
                                       {e, 8, 4},
                                       {e, 4, 0},
                                       {r, 8, 4},
                                       {r, 8, 4},
                                       {r, 8, 4},
                                       {e, 4, 4},
                                       {e, 4, 4},
                                       {e, 8, 4},
                                       {e, 8, 4},
                                       {e, 8, 4}});
  if (xb != 4) k.backward.push_back({e, 4, xb});
}

}  // namespace

void register_norm_training_rules(TrainingRules& r) {
  TrainingRule batch_norm;
  batch_norm.ops = {"BatchNormalization"};
  batch_norm.output_bytes = [](const DtypeQuery& q) { return q.in(0); };  // cuDNN: x's dtype
  batch_norm.buffer_inputs = {3, 4};  // the running mean and variance
  batch_norm.saves = batch_norm_saves;
  batch_norm.forward = batch_norm_forward;
  batch_norm.backward = batch_norm_backward;
  r.push_back(batch_norm);

  TrainingRule layer_norm;
  layer_norm.ops = {"LayerNormalization"};
  // autocast runs layer_norm in fp32
  layer_norm.output_bytes = [](const DtypeQuery& q) { return q.step.autocast ? 4 : q.in(0); };
  layer_norm.saves = layer_norm_saves;
  layer_norm.eager = layer_norm_eager;
  layer_norm.host_only_backward_kernels = kLayerNormBackwardExtra;
  r.push_back(layer_norm);

  TrainingRule rms_norm;
  rms_norm.ops = {"SimplifiedLayerNormalization"};
  rms_norm.saves = rms_norm_saves;
  rms_norm.eager = rms_norm_eager;
  r.push_back(rms_norm);
}

}  // namespace rooflens::training
