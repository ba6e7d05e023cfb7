// A training step's backward, node by node: the kernels each forward node's gradient launches
// (GEMMs' data and weight gradients, cuDNN's convolution gradients, attention's backward at the
// ratios PyTorch shows, batch norm from measured tables, the math path of SDPA kernel by kernel,
// MoE experts), their FLOPs, bytes and time, and what a recomputed forward adds.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/hw/roofline.hpp"
#include "analyzer/training/step.hpp"

namespace rooflens::training {
namespace {

NodeCost scaled_memory_cost(const NodeCost& f, int64_t flops_factor) {
  NodeCost b;
  b.flops = checked_mul(f.flops, flops_factor, "backward FLOPs");
  b.read_act = checked_add(f.read_act, f.written,
                           "backward bytes");  // the output's gradient and the saved inputs
  b.read_weight = f.read_weight;
  b.written = checked_add(f.read_act, f.read_weight > 0 ? f.read_weight : 0,
                          "backward bytes");  // input (and weight) gradients
  b.kernel.memory = f.kernel.memory;
  b.parallel_tiles = f.parallel_tiles;
  return b;
}

// dX = dY W^T and dW = X^T dY as the two GEMMs the backward launches. A weight's gradient is
// written in the weights' dtype; everything else in the GEMM's output dtype.
std::vector<NodeCost> gemm_backward(const NodeCost& f, int64_t out_bytes, int64_t grad_bytes) {
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


// A node's kernels in one direction: their time, FLOPs and bytes, and each launch in order.
struct Work {
  double seconds = 0;
  int64_t flops = 0, bytes = 0;
  std::vector<Launch> launches;
  void add(const NodeCost& c, Precision p, const Device& d) {
    add_seconds(place_on_roofline(c, p, d).predicted);
    flops = checked_add(flops, c.flops, "FLOPs");
    bytes = checked_add(bytes, c.bytes(), "bytes");
  }
  void add_seconds(double t) {
    seconds += t;
    launches.push_back(Launch{t, false});
  }
  // Kernels too small to matter on the GPU that the host still issues one by one.
  void add_small(int count, const Device& d) {
    for (int i = 0; i < count; ++i) add_seconds(d.launch_floor_s);
  }
  // `syncs` device-to-host copies spread evenly among the launches so far.
  void mark_syncs(int syncs) {
    if (syncs <= 0 || launches.empty()) return;
    size_t step = std::max<size_t>(1, launches.size() / static_cast<size_t>(syncs + 1));
    for (int k = 1; k <= syncs; ++k)
      launches[std::min(launches.size() - 1, step * static_cast<size_t>(k))].sync = true;
  }
};

// One eager element-wise kernel on the roofline (memory-bound: CUDA cores, elementwise tables).
NodeCost pass_cost(const Pass& p) {
  NodeCost c;
  c.read_act = checked_mul(p.elements, p.read, "kernel bytes");
  c.written = checked_mul(p.elements, p.write, "kernel bytes");
  c.flops = p.elements;
  c.parallel_tiles = elementwise_tiles(p.elements);
  c.kernel.memory = MemoryKernel::elementwise;
  return c;
}

// Besides the per-node kernels the lowering's one fused node stands for, PyTorch launches a few
// more that matter only to the host (counted in the H100 traces of
// scripts/training_kernel_breakdown.py): LayerNorm's backward reduces gamma and beta in two more
// kernels; cuDNN's attention forward 2 kernels, its backward 6; the memory-efficient kernel's
// backward 5; the embedding's backward (a sort and scatter) about 30.
constexpr int kLayerNormBackwardExtra = 2;
constexpr int kCudnnAttentionForwardExtra = 1, kCudnnAttentionBackwardExtra = 5;
constexpr int kEfficientAttentionBackwardExtra = 4;
constexpr int kEmbeddingBackwardExtra = 30;

NodeCost batched_gemm_cost(const GemmDims& g, int64_t element_bytes, bool tensor_cores) {
  NodeCost c = gemm_cost(g, tensor_cores);
  c.read_act = checked_mul(
      checked_mul(g.batch, checked_add(checked_mul(g.m, g.k), checked_mul(g.k, g.n))),
      element_bytes, "attention bytes");
  c.written = checked_mul(checked_mul(g.batch, checked_mul(g.m, g.n)), element_bytes);
  return c;
}

// SDPA's math path as PyTorch 2.11 runs it (fp32 with grouped-query attention, or
// --attention naive), kernel by kernel as the H100 traces show it: K and V repeated to every
// query head, q scaled, the scores as a batched GEMM, the causal mask added, a safe softmax
// (softmax; rows of -inf found, reduced and zeroed: isneginf, all, where), dropout, the product
// with V; and autograd's backward of each (the GQA repeat's backward sums the copies).
void math_attention(const AttentionDims& d, bool dropout, int64_t eb, Precision p,
                    const Device& device, Work& f, Work& b) {
  int64_t bh = checked_mul(d.batch, d.q_heads, "attention size");
  int64_t scores = checked_mul(bh, checked_mul(d.q_len, d.kv_len), "attention size");
  int64_t q = checked_mul(bh, checked_mul(d.q_len, d.head_dim_qk));
  int64_t k = checked_mul(bh, checked_mul(d.kv_len, d.head_dim_qk)),
          v = checked_mul(bh, checked_mul(d.kv_len, d.head_dim_v));
  bool tensor_cores = p != Precision::fp32;
  bool gqa = d.kv_heads < d.q_heads;
  int64_t group = gqa ? d.q_heads / std::max<int64_t>(1, d.kv_heads) : 1;
  auto pass = [&](Work& w, int64_t e, int64_t r, int64_t wr) {
    w.add(pass_cost(Pass{e, r, wr}), Precision::fp32, device);
  };
  f.add_small(6, device);  // the causal mask built: fills, triu, a cast
  if (gqa) {
    pass(f, k, eb, eb);
    pass(f, v, eb, eb);
  }
  pass(f, q, eb, eb);
  f.add(batched_gemm_cost({bh, d.q_len, d.kv_len, d.head_dim_qk}, eb, tensor_cores), p, device);
  pass(f, scores, eb, eb);      // + mask
  pass(f, scores, eb, eb);      // softmax
  pass(f, scores, eb, 1);       // isneginf
  pass(f, scores, 1, 0);        // all() over each row
  pass(f, scores, eb + 1, eb);  // where
  if (dropout) pass(f, scores, eb, eb + 1);
  f.add(batched_gemm_cost({bh, d.q_len, d.head_dim_v, d.kv_len}, eb, tensor_cores), p, device);
  b.add(batched_gemm_cost({bh, d.q_len, d.kv_len, d.head_dim_v}, eb, tensor_cores), p, device);
  b.add(batched_gemm_cost({bh, d.kv_len, d.head_dim_v, d.q_len}, eb, tensor_cores), p, device);
  if (dropout) pass(b, scores, eb + 1, eb);
  pass(b, scores, eb + 1, eb);  // where's backward
  pass(b, scores, 2 * eb, eb);  // softmax's
  b.add(batched_gemm_cost({bh, d.q_len, d.head_dim_qk, d.kv_len}, eb, tensor_cores), p, device);
  b.add(batched_gemm_cost({bh, d.kv_len, d.head_dim_qk, d.q_len}, eb, tensor_cores), p, device);
  pass(b, q, eb, eb);  // the scale's
  if (gqa) {
    pass(b, k, eb, eb / group);
    pass(b, v, eb, eb / group);
  }
}

// The routed experts' GEMMs as Hugging Face's grouped_mm experts run them: per layer two calls
// (gate and up fused, then down) over the rows sorted by expert, uniform routing giving each
// expert T*k/E rows; the backward's input and weight gradients per call. torch._grouped_mm has
// no fp32 kernel: its fallback loops over the experts, a GEMM (and a launch) each.
void moe_experts(const MoeDims& d, Precision p, const Device& device, Work& f, Work& b) {
  int64_t rows = ceil_div(checked_mul(d.tokens, d.k, "MoE size"), std::max<int64_t>(1, d.experts));
  bool fallback = p == Precision::fp32;
  int64_t eb = p == Precision::fp32 ? 4 : 2;
  struct Call {
    int64_t n, k;
  };
  const Call calls[2] = {{d.gated ? 2 * d.inter : d.inter, d.hidden}, {d.hidden, d.inter}};
  for (const Call& call : calls) {
    GemmDims fwd{1, rows, call.n, call.k}, dx{1, rows, call.k, call.n}, dw{1, call.k, call.n, rows};
    double tf = 0, tb = 0;
    for (int64_t e = 0; e < d.experts; ++e) {
      double one_f = place_on_roofline(batched_gemm_cost(fwd, eb, !fallback), p, device).predicted;
      double one_b = place_on_roofline(batched_gemm_cost(dx, eb, !fallback), p, device).predicted +
                     place_on_roofline(batched_gemm_cost(dw, eb, !fallback), p, device).predicted;
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

// Training-mode batch norm from the profile's measured tables (scripts/batch_norm_training.py:
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

}  // namespace

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
    Work forward, back;
    // grouped_mm is not on autocast's list: under autocast the experts run in fp32. fp32
    // convolutions run on TF32 as the analysis's --math put them (PyTorch's default).
    Precision precision = n.op == "com.microsoft.MoE" && s.autocast ? Precision::fp32 : n.precision;
    bool experts = n.op == "com.microsoft.MoE" && c.kernel.moe && c.macs;
    std::optional<std::pair<double, double>> batch_norm;
    if (n.op == "BatchNormalization") {
      int x = s.graph.nodes[i].input(0);
      if (x >= 0 && s.graph.tensors[x].shape)
        batch_norm = batch_norm_training_time(*s.graph.tensors[x].shape, precision, device);
    }
    if (experts) {
      moe_experts(*c.kernel.moe, precision, device, forward, back);
    } else if (batch_norm) {
      // PyTorch's own kernels for a bf16 input (statistics, transform) or cuDNN's; and the
      // num_batches_tracked increment.
      forward.add_seconds(batch_norm->first);
      forward.add_small(precision == Precision::fp32 ? 1 : 2, device);
      back.add_seconds(batch_norm->second);
      forward.flops = c.flops;
      forward.bytes = c.bytes();
    } else if (!k.replaces) {
      forward.add(c, precision, device);
    }
    for (const Pass& p : k.forward) forward.add(pass_cost(p), Precision::fp32, device);
    for (const Pass& p : k.backward) back.add(pass_cost(p), Precision::fp32, device);
    r.forward_s = forward.seconds;
    r.forward_flops = c.flops;
    r.forward_bytes = forward.bytes;
    bool attention = n.op == "Attention";
    if (k.replaces) {
      // the eager kernels above are the node's whole backward
    } else if (batch_norm) {
      back.flops = checked_mul(c.flops, kBackwardMemoryFactor, "backward FLOPs");
      back.bytes = scaled_memory_cost(c, kBackwardMemoryFactor).bytes();
    } else if (n.op == "Conv" && c.macs) {
      // cuDNN's data and weight gradients, each as heavy as the forward; the data gradient is not
      // computed for the graph's own input (FlopCounterMode counts the same).
      int x = s.graph.nodes[i].input(0);
      bool input_grad = x >= 0 && s.graph.tensors[x].role != TensorRole::input;
      if (input_grad) back.add(c, precision, device);
      back.add(c, precision, device);
      int64_t gradients = input_grad ? kBackwardGemmFactor : kBackwardGemmFactor - 1;
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * (1 + gradients), "matrix FLOPs");
    } else if (c.kernel.gemm &&
               (n.op == "MatMul" || n.op == "com.microsoft.FusedMatMul" || n.op == "Gemm")) {
      for (const NodeCost& b : gemm_backward(c, s.output_bytes, s.param_bytes))
        back.add(b, n.precision, device);
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * (1 + kBackwardGemmFactor), "matrix FLOPs");
    } else if (attention && c.kernel.attention) {
      // The backward at the forward's achieved rate (the forward's time may come from a measured
      // table; no table times the backward), scaled by the matrix products it runs.
      double factor = s.attention_backend == AttentionBackend::math ? kMathAttentionBackwardFactor
                                                    : kFusedAttentionBackwardFactor;
      double forward_s = place_on_roofline(c, n.precision, device).predicted;
      if (s.attention_backend == AttentionBackend::math) {
        Work math;
        for (const Pass& p : k.forward) math.add(pass_cost(p), Precision::fp32, device);
        math_attention(*c.kernel.attention, s.config.attn_dropout > 0,
                       n.precision == Precision::fp32 ? 4 : 2, n.precision, device, math, back);
        forward = std::move(math);
        r.forward_s = forward.seconds;
        r.forward_bytes = forward.bytes;
      } else {
        // The forward's time (a table measures it without dropout) and the backward's, by the
        // ratios measured in PyTorch.
        const AttentionTrainingTime& t = s.attention_backend == AttentionBackend::flash ? kFusedAttention16Time
                                                                        : kEfficientAttention32Time;
        bool dropout = s.config.attn_dropout > 0;
        back.add_seconds(forward_s * t.backward_over_forward * (dropout ? t.dropout_backward : 1));
        if (dropout) {
          forward.seconds += forward_s * (t.dropout_forward - 1);
          forward.launches.front().gpu_s += forward_s * (t.dropout_forward - 1);
        }
        bool flash = s.attention_backend == AttentionBackend::flash;
        if (flash) forward.add_small(kCudnnAttentionForwardExtra, device);
        back.add_small(flash ? kCudnnAttentionBackwardExtra : kEfficientAttentionBackwardExtra,
                       device);
        r.forward_s = forward.seconds;
      }
      back.flops =
          checked_add(back.flops, static_cast<int64_t>(static_cast<double>(c.flops) * factor));
      back.bytes = checked_add(
          back.bytes, checked_add(c.read_act, checked_add(checked_mul(c.written, 2), c.read_act)));
      int64_t dense = attention_matmul_flops(*c.kernel.attention, true);
      r.gemm_dense_flops = checked_add(
          dense, static_cast<int64_t>(static_cast<double>(dense) * factor), "matrix FLOPs");
    } else if (experts) {
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * (1 + kBackwardGemmFactor), "matrix FLOPs");
    } else if (n.family == OpFamily::communication) {
      back.add(c, n.precision, device);  // the input gradient's all-reduce
    } else if (n.op == "Gather" && s.graph.nodes[i].input(0) >= 0 &&
               s.graph.tensors[s.graph.nodes[i].input(0)].role == TensorRole::weight) {
      NodeCost b;  // embedding backward: the whole table's gradient is written
      b.read_act = c.written;
      b.written = checked_mul(s.graph.tensors[s.graph.nodes[i].input(0)].elements(), s.param_bytes);
      b.kernel.memory = MemoryKernel::elementwise;
      back.add(b, n.precision, device);
      back.add_small(kEmbeddingBackwardExtra, device);
    } else if (c.bytes() > 0) {
      back.add(scaled_memory_cost(c, kBackwardMemoryFactor), n.precision, device);
    }
    if (n.op == "LayerNormalization") back.add_small(kLayerNormBackwardExtra, device);
    forward.mark_syncs(k.forward_syncs);
    back.mark_syncs(k.backward_syncs);
    launches.push_back(NodeLaunches{forward.launches, back.launches});
    r.backward_s = back.seconds;
    r.backward_flops = back.flops;
    r.backward_bytes = back.bytes;
    if (k.replaces) r.backward_flops = checked_mul(c.flops, kBackwardMemoryFactor, "backward FLOPs");
    bool recompute = r.layer >= 0 && ((full && saved.recomputed[i]) ||
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
