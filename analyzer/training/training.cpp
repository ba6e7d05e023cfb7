// A training step from the forward's analysis: backward and recomputed work per node, the loss
// and optimizer rows, the step's time (backward.cpp: each node's backward), and (memory.cpp) its
// memory.
#include "analyzer/training/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/hw/link_model.hpp"
#include "analyzer/hw/roofline.hpp"
#include "analyzer/training/step.hpp"

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

std::string_view attention_backend_name(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::none:
      return "";
    case AttentionBackend::flash:
      return "flash";
    case AttentionBackend::efficient:
      return "efficient";
    case AttentionBackend::math:
      return "math";
  }
  return "";
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
  if (c.encdec)
    throw InputError(
        fmt::format("{}: --phase train is not modelled for an encoder-decoder ({}); --phase "
                    "prefill and decode are",
                    c.path, c.model_type));
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
AttentionBackend attention_backend(const TransformerConfig& c, const TrainingOptions& t,
                                   const LoweringOptions& l) {
  if (l.attention == AttentionImpl::naive) return AttentionBackend::math;
  if (t.precision != TrainPrecision::fp32 && c.qk_head_dim() <= 256) return AttentionBackend::flash;
  return c.kv_heads < c.heads ? AttentionBackend::math : AttentionBackend::efficient;
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
  int64_t per_op =
      std::max<int64_t>({1, ceil_div(ceil_div(tensors, ranks), kForeachTensorsPerLaunch),
                         ceil_div(ceil_div(chunks, ranks), kForeachChunksPerLaunch)});
  int64_t kernels = checked_mul(per_op, launches);
  double seconds = place_on_roofline(c, Precision::fp32, device).predicted +
                   static_cast<double>(kernels - 1) * device.launch_floor_s;
  double host = 0;
  if (device.eager_host) {
    const EagerHostCosts& e = *device.eager_host;
    bool sgd = s.train.optimizer == OptimizerKind::sgd;  // Adafactor: taken at AdamW's cost
    host = (sgd ? e.sgd_fixed_s : e.adamw_fixed_s) + static_cast<double>(ceil_div(tensors, ranks)) *
                                                         (sgd ? e.sgd_tensor_s : e.adamw_tensor_s);
  }
  out.steps.push_back(StepRow{
      fmt::format("optimizer.{}", optimizer_name(s.train.optimizer)), "optimizer", c.flops,
      c.bytes(), seconds,
      fmt::format("foreach over {} tensors: {} list ops, {} launches", tensors, launches, kernels),
      kernels, host});
  if (s.train.dp > 1) {
    // Priced by the link model (analyzer/hw/link_model.hpp). ZeRO-3 gathers every layer's weights
    // (in the compute dtype) in the forward and again in the backward of every micro-batch, and
    // reduce-scatters each micro-batch's gradients; ZeRO-2 reduce-scatters the accumulated
    // gradients and gathers the updated weights once a step; below that, one all-reduce a step.
    int64_t grads = checked_mul(out.params, s.param_bytes);
    int64_t dp = s.train.dp, micro = s.train.grad_accum;
    double seconds;
    std::string how;
    if (s.train.zero >= 3) {
      int64_t gathered = checked_mul(
          out.params, std::max<int64_t>(s.gemm_bytes, 2));  // fp8 GEMMs cast after the gather
      seconds = static_cast<double>(micro) *
                (2 * collective_seconds(Collective::all_gather, gathered, dp, device) +
                 collective_seconds(Collective::reduce_scatter, grads, dp, device));
      bool units = device.eager_host && device.eager_host->fsdp_measured();
      how = fmt::format(
          "per micro-batch ({}): weights all-gathered twice, gradients reduce-scattered; {}", micro,
          units ? "each unit's share beside its compute (FSDP2's streams)" : "not overlapped");
    } else if (s.train.zero == 2) {
      seconds = collective_seconds(Collective::reduce_scatter, grads, dp, device) +
                collective_seconds(Collective::all_gather, grads, dp, device);
      how = "reduce-scatter + all-gather, not overlapped";
    } else {
      seconds = collective_seconds(Collective::all_reduce, grads, dp, device);
      how = "all-reduce, not overlapped";
    }
    out.steps.push_back(StepRow{"gradients.all_reduce", "communication", 0, grads, seconds, how});
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
  fo.training_forward = true;
  fo.lowering = l;
  Lowered out;
  out.analysis = analyze_transformer(c, fo, &out.graph);
  return out;
}

StepContext context_for(const TransformerConfig& c, const TrainingOptions& t,
                        const LoweringOptions& l, const Lowered& fwd) {
  return step_context(c, t, l, fwd.graph, fwd.analysis);
}

}  // namespace

StepContext step_context(const TransformerConfig& c, const TrainingOptions& t,
                         const LoweringOptions& l, const Graph& graph, const Analysis& forward) {
  StepContext s{c, t, l, graph, forward, layers_of(graph, c),   4,
                4, 4, 4, 4,     false,   AttentionBackend::none};
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
  s.trainable = trainable_weights(graph);
  return s;
}

namespace {

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
  out.max_batch = device > base
                      ? static_cast<int64_t>(static_cast<double>(device - base) /
                                             static_cast<double>(per) * static_cast<double>(b))
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
  out->tokens_per_step =
      checked_mul(checked_mul(s.lowering.batch, s.lowering.seq), t.grad_accum * t.dp, "tokens");
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
      out.max_seq > 0
          ? fmt::format(" at this sequence, largest sequence {} at this batch", out.max_seq)
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
  if (s.attention_backend == AttentionBackend::math)
    out->notes.push_back(
        "attention: SDPA's math path (fp32 with GQA, or --attention naive) keeps the scores");
  note_fit(*out);
  return with_training(std::move(fwd.analysis), out);
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
    s.attention_backend = AttentionBackend::none;  // attention, if any, is in the graph's own ops
    return step_of(s, fwd.analysis.device);
  };
  Lowered fwd = forward_at(std::nullopt);
  std::vector<bool> trainable = trainable_weights(fwd.graph);
  if (std::find(trainable.begin(), trainable.end(), true) == trainable.end())
    throw InputError(fmt::format("{}: no float parameters to train", path));
  std::shared_ptr<TrainingSummary> out = summary_at(fwd);
  out->seq = 0;  // samples: tokens_per_step (batch x 1) counts them already
  if (batch_norm_folded(fwd.graph))
    out->notes.push_back(
        "no BatchNormalization, and every convolution has a bias: if the network trains with "
        "BatchNorm, this is an "
        "inference export with BatchNorm folded into the convolutions, and the step lacks "
        "BatchNorm's work and saved "
        "activations; export for training with BatchNorm kept "
        "(torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, "
        "do_constant_folding=False))");
  try {
    largest_batch(summary_at(forward_at(2 * out->batch))->peak_memory_bytes, *out);
  } catch (const InputError&) {
    out->notes.push_back("largest batch: not found (the graph fixes its batch inside)");
  }
  note_fit(*out);
  return with_training(std::move(fwd.analysis), out);
}

}  // namespace rooflens
