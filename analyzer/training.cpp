// A training step from the forward's analysis: backward and recomputed work per node, the loss
// and optimizer rows, the step's time, and (training_memory.cpp) its memory.
#include "analyzer/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "analyzer/checked.hpp"
#include "analyzer/errors.hpp"
#include "analyzer/roofline.hpp"
#include "analyzer/training_step.hpp"

namespace rooflens {

std::string_view train_precision_name(TrainPrecision p) {
  switch (p) {
    case TrainPrecision::fp32:
      return "fp32";
    case TrainPrecision::bf16:
      return "bf16";
    case TrainPrecision::bf16_mixed:
      return "bf16-mixed";
    case TrainPrecision::fp8_mixed:
      return "fp8-mixed";
  }
  return "?";
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::sgd:
      return "sgd";
    case OptimizerKind::adafactor:
      return "adafactor";
  }
  return "?";
}

TrainPrecision parse_train_precision(const std::string& name) {
  for (auto p : {TrainPrecision::fp32, TrainPrecision::bf16, TrainPrecision::bf16_mixed,
                 TrainPrecision::fp8_mixed})
    if (name == train_precision_name(p)) return p;
  throw InputError(
      fmt::format("--precision {}: expected fp32, bf16, bf16-mixed or fp8-mixed", name));
}

Recompute parse_recompute(const std::string& name) {
  for (auto r : {Recompute::none, Recompute::selective, Recompute::full})
    if (name == recompute_name(r)) return r;
  throw InputError(fmt::format("--recompute {}: expected none, selective or full", name));
}

OptimizerKind parse_optimizer(const std::string& name) {
  for (auto k : {OptimizerKind::adamw, OptimizerKind::sgd, OptimizerKind::adafactor})
    if (name == optimizer_name(k)) return k;
  throw InputError(fmt::format("--optimizer {}: expected adamw, sgd or adafactor", name));
}

namespace training {
namespace {

// What a step takes from any model: micro-batches, ZeRO stage, data-parallel GPUs.
void validate_step(const TrainingOptions& t) {
  if (t.grad_accum <= 0)
    throw InputError(fmt::format("--grad-accum {}: must be positive", t.grad_accum));
  if (t.zero < 0 || t.zero > 3)
    throw InputError(fmt::format("--zero {}: expected 0, 1, 2 or 3", t.zero));
  if (t.dp <= 0) throw InputError(fmt::format("--dp {}: must be positive", t.dp));
}

void validate(const TransformerConfig& c, const TransformerOptions& o, const TrainingOptions& t) {
  const LoweringOptions& l = o.lowering;
  if (l.batch <= 0 || l.seq <= 0)
    throw InputError(fmt::format("{}: --batch and --seq must be positive", c.path));
  validate_step(t);
  if (t.sp && l.tp <= 1)
    throw InputError("--sp shards along the sequence beside tensor parallelism: it needs --tp > 1");
  if (t.sp && l.seq % l.tp != 0)
    throw InputError(fmt::format("--sp: --seq {} is not divisible by --tp {}", l.seq, l.tp));
  if (c.layers <= 0) throw InputError(fmt::format("{}: no layers to train", c.path));
}

LoweringOptions lowering_for(const TransformerOptions& o, const TrainingOptions& t) {
  LoweringOptions l = o.lowering;
  l.phase = Phase::prefill;
  l.quantization.reset();
  switch (t.precision) {
    case TrainPrecision::fp32:
      l.weights = l.activations = DType::f32;
      break;
    case TrainPrecision::bf16:
    case TrainPrecision::bf16_mixed:
      l.weights = l.activations = DType::bf16;
      break;
    case TrainPrecision::fp8_mixed:
      l.weights = DType::f8e4m3fn;
      l.activations = DType::f8e4m3fn;
      break;
  }
  l.kv = t.precision == TrainPrecision::fp32 ? DType::f32 : DType::bf16;
  l.weights_source = fmt::format("--precision {}", train_precision_name(t.precision));
  return l;
}

std::vector<int> layers_of(const Graph& g, const TransformerConfig& c) {
  std::vector<int> out(g.nodes.size(), -1);
  if (c.layers <= 0 || c.names.layers.empty()) return out;  // an ONNX graph: no decoder layers
  std::string prefix = c.names.layers + ".";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const std::string& n = g.nodes[i].name;
    if (n.compare(0, prefix.size(), prefix) != 0) continue;
    size_t end = n.find('.', prefix.size());
    try {
      out[i] = std::stoi(n.substr(prefix.size(), end - prefix.size()));
    } catch (const std::exception&) {
    }
  }
  return out;
}

// The kernel SDPA picks for training: flash for 16-bit inputs with head dim <= 256; in fp32 the
// memory-efficient kernel, which takes no grouped-query attention: then the math path.
std::string attention_backend(const TransformerConfig& c, const TrainingOptions& t,
                              const LoweringOptions& l) {
  if (l.attention == AttentionImpl::naive) return "math";
  if (t.precision != TrainPrecision::fp32 && c.qk_head_dim() <= 256) return "flash";
  return c.kv_heads < c.heads ? "math" : "efficient";
}

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
    NodeCost c;
    c.macs = gemm_macs(g);
    c.flops = gemm_flops(g);
    int64_t a = checked_mul(g.batch, checked_mul(g.m, g.k)),
            b = checked_mul(weight && which == 0 ? 1 : g.batch, checked_mul(g.k, g.n));
    c.read_act = checked_mul(checked_add(a, b), out_bytes);
    c.written = checked_mul(checked_mul(g.batch, checked_mul(g.m, g.n)),
                            which == 1 && weight ? grad_bytes : out_bytes);
    c.tensor_cores = f.tensor_cores;
    c.tiled = true;
    c.parallel_tiles = gemm_tiles(g);
    c.kernel.gemm = g;
    c.kernel.gemm_b_shared = which == 0 && weight;
    out.push_back(c);
  }
  return out;
}

NodeCost elementwise_cost(int64_t elements, int64_t flops_per_element, int64_t read_bytes,
                          int64_t write_bytes) {
  NodeCost c;
  c.flops = checked_mul(elements, flops_per_element, "loss FLOPs");
  c.read_act = checked_mul(elements, read_bytes, "loss bytes");
  c.written = checked_mul(elements, write_bytes, "loss bytes");
  c.parallel_tiles = elementwise_tiles(elements);
  c.kernel.memory = MemoryKernel::elementwise;
  return c;
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
  NodeCost c;
  c.macs = gemm_macs(g);
  c.flops = gemm_flops(g);
  c.read_act = checked_mul(
      checked_mul(g.batch, checked_add(checked_mul(g.m, g.k), checked_mul(g.k, g.n))),
      element_bytes, "attention bytes");
  c.written = checked_mul(checked_mul(g.batch, checked_mul(g.m, g.n)), element_bytes);
  c.tensor_cores = tensor_cores;
  c.tiled = true;
  c.parallel_tiles = gemm_tiles(g);
  c.kernel.gemm = g;
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
    b.flops = checked_add(b.flops, checked_mul(2 * gemm_flops(fwd), d.experts));
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
    std::vector<double> edge = t.clamp(at);
    auto v = t.lookup(edge);
    if (!v) return std::nullopt;
    return *v * (at[0] * at[1] * at[2]) / (edge[0] * edge[1] * edge[2]);
  };
  auto f = one(fwd->second), b = one(bwd->second);
  if (!f || !b) return std::nullopt;
  return std::pair{*f, *b};
}

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
    // grouped_mm is not on autocast's list: under autocast the experts run in fp32. PyTorch lets
    // cuDNN run fp32 convolutions on TF32 tensor cores by default (cudnn.allow_tf32).
    Precision precision = n.op == "com.microsoft.MoE" && s.autocast ? Precision::fp32
                          : n.op == "Conv" && n.precision == Precision::fp32 ? Precision::tf32
                                                                             : n.precision;
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
      back.flops = checked_mul(c.flops, 2, "backward FLOPs");
      back.bytes = scaled_memory_cost(c, 2).bytes();
    } else if (n.op == "Conv" && c.macs) {
      // cuDNN's data and weight gradients, each as heavy as the forward; the data gradient is not
      // computed for the graph's own input (FlopCounterMode counts the same).
      int x = s.graph.nodes[i].input(0);
      bool input_grad = x >= 0 && s.graph.tensors[x].role != TensorRole::input;
      if (input_grad) back.add(c, precision, device);
      back.add(c, precision, device);
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * (input_grad ? 3 : 2), "matrix FLOPs");
    } else if (c.kernel.gemm &&
               (n.op == "MatMul" || n.op == "com.microsoft.FusedMatMul" || n.op == "Gemm")) {
      for (const NodeCost& b : gemm_backward(c, s.output_bytes, s.param_bytes))
        back.add(b, n.precision, device);
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * 3, "matrix FLOPs");
    } else if (attention && c.kernel.attention) {
      // The backward at the forward's achieved rate (the forward's time may come from a measured
      // table; no table times the backward), scaled by the matrix products it runs.
      double factor = s.attention_backend == "math" ? kMathAttentionBackwardFactor
                                                    : kFusedAttentionBackwardFactor;
      double forward_s = place_on_roofline(c, n.precision, device).predicted;
      if (s.attention_backend == "math") {
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
        const AttentionTrainingTime& t = s.attention_backend == "flash" ? kFusedAttention16Time
                                                                        : kEfficientAttention32Time;
        bool dropout = s.config.attn_dropout > 0;
        back.add_seconds(forward_s * t.backward_over_forward * (dropout ? t.dropout_backward : 1));
        if (dropout) {
          forward.seconds += forward_s * (t.dropout_forward - 1);
          forward.launches.front().gpu_s += forward_s * (t.dropout_forward - 1);
        }
        bool flash = s.attention_backend == "flash";
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
      r.gemm_dense_flops = checked_mul(*c.macs, 2 * 3, "matrix FLOPs");
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
      back.add(scaled_memory_cost(c, 2), n.precision, device);
    }
    if (n.op == "LayerNormalization") back.add_small(kLayerNormBackwardExtra, device);
    forward.mark_syncs(k.forward_syncs);
    back.mark_syncs(k.backward_syncs);
    launches.push_back(NodeLaunches{forward.launches, back.launches});
    r.backward_s = back.seconds;
    r.backward_flops = back.flops;
    r.backward_bytes = back.bytes;
    if (k.replaces) r.backward_flops = checked_mul(c.flops, 2, "backward FLOPs");
    bool recompute = r.layer >= 0 && ((full && saved.recomputed[i]) ||
                                      (selective && attention && s.attention_backend == "math"));
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

void loss_rows(const StepContext& s, const Device& device, int64_t logits, TrainingSummary& out) {
  auto add = [&](const char* name, const char* phase, const NodeCost& c, const char* note) {
    out.steps.push_back(StepRow{name, phase, c.flops, c.bytes(),
                                place_on_roofline(c, Precision::fp32, device).predicted, note});
  };
  int64_t ob = s.output_bytes;
  if (ob != 4)
    add("loss.upcast", "forward", elementwise_cost(logits, 0, ob, 4),
        "logits.float() before the cross-entropy");
  // A vocabulary row is too long for one block's registers: PyTorch's log_softmax reads it three
  // times (max, sum of exponentials, output) and its backward too (sum(g), then g and out), as
  // the H100 traces' times show (GPT-2 and Llama logits: 3.5-4 passes of the row's bytes).
  add("loss.log_softmax", "forward", elementwise_cost(logits, kSoftmaxFlopsPerElement, 12, 4),
      "fp32, kept for the backward");
  add("loss.nll_backward", "backward", elementwise_cost(logits, 0, 0, 4),
      "a zero-filled gradient, one -1/N per row");
  add("loss.log_softmax_backward", "backward", elementwise_cost(logits, 3, 12, 4),
      "g - exp(out) * sum(g)");
  if (ob != 4)
    add("loss.downcast_grad", "backward", elementwise_cost(logits, 0, 4, ob),
        "the logits' gradient to the GEMM's dtype");
}

void optimizer_rows(const StepContext& s, const Device& device, TrainingSummary& out) {
  const Graph& g = s.graph;
  std::vector<bool> seen(g.tensors.size(), false);
  int64_t flops = 0, bytes = 0, tensors = 0, chunks = 0;
  int launches = 0;
  for (const Node& n : g.nodes)
    for (int w : n.inputs) {
      if (w < 0 || seen[w] || !s.trainable[w]) continue;
      seen[w] = true;
      const Shape& sh = *g.tensors[w].shape;
      int64_t cols = sh.empty() ? 1 : sh.back(),
              rows = sh.size() < 2 ? 1 : g.tensors[w].elements() / cols;
      OptimizerWork ow = optimizer_work(s.train.optimizer, g.tensors[w].elements(), rows, cols,
                                        s.param_bytes, s.state_bytes);
      flops = checked_add(flops, ow.flops);
      bytes = checked_add(bytes, ow.bytes);
      launches = ow.launches;
      ++tensors;
      chunks = checked_add(chunks, ceil_div(g.tensors[w].elements(), kForeachChunkElements));
    }
  int64_t ranks = s.train.zero >= 1 ? s.train.dp : 1;
  NodeCost c;
  c.flops = ceil_div(flops, ranks);
  c.read_act = ceil_div(bytes, ranks);
  c.parallel_tiles = elementwise_tiles(c.read_act / 4);
  c.kernel.memory = MemoryKernel::elementwise;
  // PyTorch's multi_tensor_apply cuts each list operation into launches of at most 110 tensors
  // and 320 blocks of 65536 elements; a large model's list ops are many launches each.
  int64_t per_op = std::max<int64_t>(
      {1, ceil_div(ceil_div(tensors, ranks), kForeachTensorsPerLaunch),
       ceil_div(ceil_div(chunks, ranks), kForeachChunksPerLaunch)});
  int64_t kernels = checked_mul(per_op, launches);
  double seconds = place_on_roofline(c, Precision::fp32, device).predicted +
                   static_cast<double>(kernels - 1) * device.launch_floor_s;
  double host = 0;
  if (device.eager_host) {
    const EagerHostCosts& e = *device.eager_host;
    bool sgd = s.train.optimizer == OptimizerKind::sgd;  // Adafactor: taken at AdamW's cost
    host = (sgd ? e.sgd_fixed_s : e.adamw_fixed_s) +
           static_cast<double>(ceil_div(tensors, ranks)) * (sgd ? e.sgd_tensor_s : e.adamw_tensor_s);
  }
  out.steps.push_back(StepRow{
      fmt::format("optimizer.{}", optimizer_name(s.train.optimizer)), "optimizer", c.flops,
      c.bytes(), seconds,
      fmt::format("foreach over {} tensors: {} list ops, {} launches", tensors, launches, kernels),
      kernels, host});
  if (s.train.dp > 1) {
    int64_t grads = checked_mul(out.params, s.param_bytes);
    double factor =
        s.train.zero >= 3 ? 1.5 : 1.0;  // ZeRO-3 gathers the weights again in the backward
    out.steps.push_back(
        StepRow{"gradients.all_reduce", "communication", 0, grads,
                factor * ring_allreduce_seconds(grads, s.train.dp, link_bandwidth(device)),
                s.train.zero >= 2 ? "reduce-scatter + all-gather, not overlapped"
                                  : "ring all-reduce, not overlapped"});
  }
}

struct Lowered {
  Analysis analysis;
  Graph graph;
};

Lowered forward_of(const TransformerConfig& c, const TransformerOptions& o,
                   const LoweringOptions& l) {
  TransformerOptions fo = o;
  fo.workload = Workload::prefill;
  fo.lowering = l;
  Lowered out;
  out.analysis = analyze_transformer(c, fo, &out.graph);
  return out;
}

StepContext context_for(const TransformerConfig& c, const TrainingOptions& t,
                        const LoweringOptions& l, const Lowered& fwd) {
  StepContext s{c, t, l,     fwd.graph, fwd.analysis, layers_of(fwd.graph, c), 4, 4, 4,
                4, 4, false, ""};
  bool bf16 = t.precision == TrainPrecision::bf16;
  s.param_bytes = s.state_bytes = bf16 ? 2 : 4;
  s.stream_bytes = bf16 ? 2 : 4;
  s.gemm_bytes = t.precision == TrainPrecision::fp32        ? 4
                 : t.precision == TrainPrecision::fp8_mixed ? 1
                                                            : 2;
  s.output_bytes = t.precision == TrainPrecision::fp32 ? 4 : 2;
  s.autocast =
      t.precision == TrainPrecision::bf16_mixed || t.precision == TrainPrecision::fp8_mixed;
  s.attention_backend = attention_backend(c, t, l);
  s.trainable = trainable_weights(fwd.graph);
  return s;
}

// The peak at another batch and sequence length (the same lowering, memory only).
int64_t peak_at(const TransformerConfig& c, const TransformerOptions& o, const TrainingOptions& t,
                int64_t batch, int64_t seq) {
  LoweringOptions l = lowering_for(o, t);
  l.batch = batch;
  l.seq = seq;
  Lowered fwd = forward_of(c, o, l);
  StepContext s = context_for(c, t, l, fwd);
  TrainingSummary m;
  memory_timeline(s, saved_activations(s), m);
  return m.peak_memory_bytes;
}

// Every activation term is linear in the batch: the peaks at the batch and at twice it give the
// line, and where it meets the device's memory.
void largest_batch(int64_t peak_at_double, TrainingSummary& out) {
  int64_t device = out.device_bytes, b = out.batch, p1 = out.peak_memory_bytes;
  int64_t per = peak_at_double - p1;
  if (per <= 0) return;
  int64_t base = p1 - per;  // the peak at batch 0
  out.max_batch = device > base ? static_cast<int64_t>(static_cast<double>(device - base) /
                                                       static_cast<double>(per) *
                                                       static_cast<double>(b))
                                : 0;
}

void largest_fit(const TransformerConfig& c, const TransformerOptions& o, const TrainingOptions& t,
                 TrainingSummary& out) {
  int64_t device = out.device_bytes, b = out.batch;
  largest_batch(peak_at(c, o, t, 2 * b, out.seq), out);
  // Sequence: search (attention's math path grows with its square).
  int64_t limit = c.context_limit() > 0 ? c.context_limit() : 1 << 20;
  int64_t step = t.sp ? o.lowering.tp : 1;
  int64_t lo = 0, hi = limit / step;
  if (peak_at(c, o, t, b, hi * step) <= device) lo = hi;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (peak_at(c, o, t, b, mid * step) <= device)
      lo = mid;
    else
      hi = mid;
  }
  out.max_seq = lo * step;
}

}  // namespace
}  // namespace training

namespace training {
namespace {

// The step from a forward graph and its analysis: rows, loss, optimizer, memory, time and their
// notes; the largest batch and sequence that fit are the caller's (they re-run the forward).
std::shared_ptr<TrainingSummary> step_of(const StepContext& s, const Device& device) {
  const TrainingOptions& t = s.train;
  auto out = std::make_shared<TrainingSummary>();
  out->options = t;
  out->batch = s.lowering.batch;
  out->seq = s.lowering.seq;
  out->tp = s.lowering.tp;
  out->attention_backend = s.attention_backend;
  out->device_bytes = device.memory_bytes;
  SavedActivations saved = saved_activations(s);
  out->params = saved.params;
  std::vector<NodeLaunches> launches;
  cost_rows(s, device, saved, *out, launches);
  loss_rows(s, device, saved.logits_elements, *out);
  optimizer_rows(s, device, *out);
  memory_timeline(s, saved, *out);
  out->fits = out->peak_memory_bytes <= out->device_bytes;
  double micro = static_cast<double>(t.grad_accum);
  int64_t flops = 0, gemm = 0;
  for (const TrainingRow& r : out->rows) {
    out->forward_s += r.forward_s;
    out->backward_s += r.backward_s;
    out->recompute_s += r.recompute_s;
    flops = checked_add(
        flops, checked_add(r.forward_flops, checked_add(r.backward_flops, r.recompute_flops)),
        "FLOPs");
    gemm = checked_add(gemm, r.gemm_dense_flops, "FLOPs");
  }
  for (const StepRow& r : out->steps) {
    if (r.phase == "optimizer")
      out->optimizer_s += r.seconds;
    else if (r.phase == "communication")
      out->communication_s += r.seconds;
    else
      out->loss_s += r.seconds;
    if (r.phase == "optimizer") continue;
    flops = checked_add(flops, r.flops, "FLOPs");
  }
  out->forward_s *= micro;
  out->backward_s *= micro;
  out->recompute_s *= micro;
  out->loss_s *= micro;
  out->flops = checked_mul(flops, t.grad_accum, "FLOPs");
  for (const StepRow& r : out->steps)
    if (r.phase == "optimizer") out->flops = checked_add(out->flops, r.flops);
  out->gemm_dense_flops = checked_mul(gemm, t.grad_accum, "FLOPs");
  step_timeline(s, saved, launches, device, *out);
  out->tokens_per_step = checked_mul(checked_mul(s.lowering.batch, s.lowering.seq),
                                     t.grad_accum * t.dp, "tokens");
  out->tokens_per_s =
      out->step_time_s > 0 ? static_cast<double>(out->tokens_per_step) / out->step_time_s : 0;
  if (!saved.generic_ops.empty()) {
    std::string ops;
    for (const auto& [op, count] : saved.generic_ops)
      ops += fmt::format("{}{} x{}", ops.empty() ? "" : ", ", op, count);
    out->notes.push_back("saved tensors without a rule of their own (taken as the op's inputs): " +
                         ops);
  }
  if (out->host_modelled && out->gpu_wait_s > 0.2 * out->step_time_s)
    out->notes.push_back(fmt::format(
        "host-bound: the GPU waits {:.1f} ms of the {:.1f} ms step on eager PyTorch issuing {} "
        "kernels ({:.1f} ms of host time); CUDA graphs or torch.compile remove most of it",
        out->gpu_wait_s * 1e3, out->step_time_s * 1e3, out->kernels, out->host_s * 1e3));
  if (!out->host_modelled)
    out->notes.push_back(
        "the host's time is not modelled (the device profile has no eager_host): the step is the "
        "kernels back to back, a floor for eager PyTorch");
  if (t.zero > 0 && t.dp == 1)
    out->notes.push_back("--zero with one data-parallel GPU partitions nothing (give --dp N)");
  return out;
}

void note_fit(TrainingSummary& out) {
  if (out.fits) return;
  out.notes.push_back(fmt::format(
      "does not fit: the step peaks at {:.2f} GiB ({}) on a {:.2f} GiB device; largest batch {}{}",
      static_cast<double>(out.peak_memory_bytes) / (1 << 30), out.peak_moment,
      static_cast<double>(out.device_bytes) / (1 << 30), out.max_batch,
      out.max_seq > 0 ? fmt::format(" at this sequence, largest sequence {} at this batch", out.max_seq)
                      : std::string()));
}

Analysis with_training(Analysis a, const std::shared_ptr<TrainingSummary>& out) {
  a.dtype_label = fmt::format("{} (--precision)", train_precision_name(out->options.precision));
  a.notes.insert(a.notes.end(), out->notes.begin(), out->notes.end());
  a.training = out;
  return a;
}

}  // namespace
}  // namespace training

Analysis analyze_training(const TransformerConfig& c, const TransformerOptions& o,
                          const TrainingOptions& t) {
  using namespace training;
  validate(c, o, t);
  LoweringOptions l = lowering_for(o, t);
  validate_lowering(c, l);
  Lowered fwd = forward_of(c, o, l);
  StepContext s = context_for(c, t, l, fwd);
  std::shared_ptr<TrainingSummary> out = step_of(s, fwd.analysis.device);
  out->korthikanti_layer_bytes = korthikanti_layer_bytes(l.seq, l.batch, c.hidden, c.heads, l.tp,
                                                         t.sp, t.recompute != Recompute::none);
  largest_fit(c, o, t, *out);
  if (s.attention_backend == "math")
    out->notes.push_back(
        "attention: SDPA's math path (fp32 with GQA, or --attention naive) keeps the scores");
  note_fit(*out);
  Analysis a = std::move(fwd.analysis);
  if (a.transformer) {
    auto summary = std::make_shared<TransformerSummary>(*a.transformer);
    summary->workload = "train";
    a.transformer = summary;
  }
  // The inference memory fit's remarks (KV cache, context) do not apply to a training step.
  std::erase_if(a.notes, [](const std::string& n) {
    return n.rfind("largest context", 0) == 0 || n.rfind("the cache stops growing", 0) == 0;
  });
  return with_training(std::move(a), out);
}

namespace {

// An inference export folds BatchNorm into the convolution before it (scale into the kernel,
// shift into a bias): what is left is biased convolutions and no BatchNorm at all.
bool batch_norm_folded(const Graph& g) {
  int convs = 0, biased = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type == "BatchNormalization") return false;
    if (n.op_type != "Conv") continue;
    ++convs;
    if (n.input(2) >= 0) ++biased;
  }
  return convs > 0 && biased == convs;
}

}  // namespace

Analysis analyze_training_onnx(const std::string& path, const LoadOptions& load,
                               const AnalysisOptions& options, const TrainingOptions& t) {
  using namespace training;
  if (t.precision != TrainPrecision::fp32 && t.precision != TrainPrecision::bf16_mixed)
    throw InputError(fmt::format(
        "--precision {}: an ONNX graph trains in its own dtypes (fp32) or under autocast "
        "(bf16-mixed); cast the model before exporting it for bf16",
        train_precision_name(t.precision)));
  if (t.recompute != Recompute::none)
    throw InputError(
        "--recompute needs a transformer's layers (a config); an ONNX graph trains without it");
  validate_step(t);
  if (t.sp) throw InputError("--sp applies to transformer configs with --tp");
  // Under autocast the convolutions and GEMMs run in bf16 and so, as cuDNN returns its input's
  // dtype, do the ops between them: the forward is analyzed at bf16.
  AnalysisOptions fo = options;
  if (t.precision == TrainPrecision::bf16_mixed) fo.precision = Precision::bf16;
  auto forward_at = [&](std::optional<int64_t> batch) {
    LoadOptions lo = load;
    if (batch) lo.batch = batch;
    Lowered fwd;
    fwd.analysis = analyze_onnx(path, lo, fo, &fwd.graph);
    return fwd;
  };
  TransformerConfig c;  // no layers, no dropout, no HF conventions: the graph as exported
  c.path = path;
  auto summary_at = [&](const Lowered& fwd) -> std::shared_ptr<TrainingSummary> {
    LoweringOptions l;
    l.batch = fwd.analysis.totals.batch;
    l.seq = 1;
    StepContext s = context_for(c, t, l, fwd);
    s.attention_backend = "";  // attention, if any, is in the graph's own ops
    return step_of(s, fwd.analysis.device);
  };
  Lowered fwd = forward_at(std::nullopt);
  std::vector<bool> trainable = trainable_weights(fwd.graph);
  if (std::find(trainable.begin(), trainable.end(), true) == trainable.end()) throw InputError(fmt::format("{}: no float parameters to train", path));
  std::shared_ptr<TrainingSummary> out = summary_at(fwd);
  out->seq = 0;  // samples: tokens_per_step (batch x 1) counts them already
  if (batch_norm_folded(fwd.graph))
    out->notes.push_back(
        "no BatchNormalization, and every convolution has a bias: if the network trains with BatchNorm, this is an "
        "inference export with BatchNorm folded into the convolutions, and the step lacks BatchNorm's work and saved "
        "activations; export for training with BatchNorm kept "
        "(torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False))");
  try {
    largest_batch(summary_at(forward_at(2 * out->batch))->peak_memory_bytes, *out);
  } catch (const InputError&) {
    out->notes.push_back("largest batch: not found (the graph fixes its batch inside)");
  }
  note_fit(*out);
  return with_training(std::move(fwd.analysis), out);
}

}  // namespace rooflens
