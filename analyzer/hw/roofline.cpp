#include "analyzer/hw/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/hw/link_model.hpp"
#include "analyzer/hw/perf_model.hpp"

namespace rooflens {

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::compute:
      return "compute";
    case Bound::memory:
      return "memory";
    case Bound::latency:
      return "latency";
    case Bound::communication:
      return "comm";
    case Bound::none:
      return "-";
  }
  return "-";
}

std::string_view source_name(PredictionSource s) {
  switch (s) {
    case PredictionSource::measured_table:
      return "measured table";
    case PredictionSource::fitted:
      return "fitted";
    case PredictionSource::roofline:
      return "roofline";
  }
  return "roofline";
}

double link_bandwidth(const Device& d) {
  if (d.nvlink_bandwidth) return *d.nvlink_bandwidth / 2;  // NVIDIA quotes both directions together
  if (d.pcie_bandwidth) return *d.pcie_bandwidth;
  throw InputError(fmt::format("device {} lists no GPU-to-GPU link bandwidth", d.id));
}

namespace {

// Every kernel's fixed cost: a tiled kernel also holds its first tile loads and its epilogue (the
// GEMM floor, where the device measured one).
double kernel_floor(const Device& d, bool tiled) {
  return tiled && d.gemm_floor_s > 0 ? d.gemm_floor_s : d.launch_floor_s;
}

// Alignment is a kernel class, not a size: operands in whole 16-byte vectors run the vectorized
// kernels whatever their larger alignment, the others scalar ones several times slower. A query
// of aligned operands takes the smallest aligned class the table measured when it falls below it,
// never an interpolation toward the unaligned kernels (a quick grid measures 1 and 128 only: a
// 96-wide GEMM read 40% of its time from the unaligned ones, ConvNeXt-T's GEMMs 2x slow).
void snap_alignment(const PerfTable& t, Precision p, std::vector<double>& x) {
  auto vector_elements =
      static_cast<double>(16 / std::max<int64_t>(storage_bytes(storage_dtype(p), 1), 1));
  for (size_t a = 0; a < t.axes.size(); ++a) {
    if (t.axes[a] != "align" || x[a] < vector_elements) continue;
    for (double g : t.grid[a])
      if (g >= vector_elements) {
        x[a] = std::max(x[a], g);
        break;
      }
  }
}

// The time of the kernel at `q` from its table: measured (interpolated) inside the grid, fitted
// beyond it; nullopt where the profile has no such table.
std::optional<double> time_from_table(std::optional<PerfQuery> q, bool tiled, Precision p,
                                      const Device& d, std::string& table,
                                      PredictionSource& source) {
  if (!d.perf || !q) return std::nullopt;
  auto it = d.perf->tables.find(q->table);
  if (it == d.perf->tables.end()) return std::nullopt;
  snap_alignment(it->second, p, q->x);
  if (auto t = it->second.lookup(q->x)) {
    table = q->table;
    source = PredictionSource::measured_table;
    return t;
  }
  // Beyond the grid, or inside it where a neighbour was not measured (calibrate's deadline or its
  // time cap): the time at the grid's edge, or at the nearest measured point, scaled as the
  // roofline scales. Not below the lowest measured alignment class: unaligned kernels are other,
  // slower kernels (GPT-2's odd-vocabulary lm_head at 8k tokens is 6x its roofline).
  const PerfTable& t = it->second;
  for (size_t a = 0; a < t.axes.size(); ++a)
    if (t.axes[a] == "align" && q->x[a] < t.grid[a].front()) return std::nullopt;
  double floor = kernel_floor(d, tiled);
  auto fitted = t.extrapolate(
      q->x, [&](const std::vector<double>& x) { return ideal_seconds(grid_work(q->table, x), d); },
      floor);
  if (!fitted) return std::nullopt;
  table = q->table;
  source = PredictionSource::fitted;
  return fitted;
}

std::optional<double> predict_from_tables(const NodeCost& c, Precision p, const Device& d,
                                          std::string& table, PredictionSource& source) {
  if (!d.perf) return std::nullopt;
  if (auto t = time_from_table(perf_query(c, p), c.tiled, p, d, table, source)) return t;
  if (!c.kernel.attention_fp8_cache) return std::nullopt;
  // A profile without the fp8-cache decode table: the 16-bit cache's (narrower_cache below).
  NodeCost wide = c;
  wide.kernel.attention_fp8_cache = false;
  return time_from_table(perf_query(wide, p), c.tiled, p, d, table, source);
}

// Decode attention over a cache narrower than the table's (an int8 cache, or an fp8 one where the
// profile has no kv_fp8 table): the table's kernel streamed the keys and values in 16 bits. The
// time it spent on the bytes this node does not read comes off at the measured bandwidth, never
// below the node's own bytes at that bandwidth plus a launch.
double narrower_cache(const NodeCost& c, Precision p, const Device& d, const std::string& table,
                      double table_seconds) {
  auto q = perf_query(c, p);
  if (!q || table.rfind("attn_decode.", 0) != 0 || table.find(".kv_fp8") != std::string::npos)
    return table_seconds;
  double table_bytes = grid_work(table, q->x).bytes, own = static_cast<double>(c.read_act);
  if (own <= 0 || own > 0.75 * table_bytes) return table_seconds;  // the table's own dtype
  return std::max(table_seconds - (table_bytes - own) / d.hbm_bandwidth,
                  own / d.hbm_bandwidth + d.launch_floor_s);
}

// A MoE node as the replay runs it (kernels/gemm_runner.cpp, moe_runner): under uniform routing
// min(E, assignments) experts get ceil(assignments / E) rows each, and each projection is one
// batched GEMM over them (as engines run it, `engine_routing`: the experts a random top-k
// touches, the gate and up projections as one), from the expert table (moe.*) where the profile has
// one; the routing, dispatch, activation and combine are memory kernels at the measured bandwidth
// above a launch floor each. nullopt without an expert or GEMM table for the precision.
std::optional<double> predict_moe_from_tables(const NodeCost& c, Precision p, const Device& d,
                                              std::string& table, PredictionSource& source) {
  const MoeDims& m = *c.kernel.moe;
  int64_t assignments = m.tokens * m.k;
  int64_t active = std::min(m.experts, assignments);
  double distinct = expected_distinct_experts(m.experts, m.k, m.tokens);
  if (d.engine_routing && active > 0)
    active = std::clamp<int64_t>(std::llround(distinct), 1, active);
  if (active <= 0 || m.hidden <= 0 || m.inter <= 0) return std::nullopt;
  int64_t rows = ceil_div(assignments, active);
  // The replay pads every expert to the same rows; engines permute the assignments contiguously.
  int64_t slots = d.engine_routing ? assignments : ceil_div(assignments, m.experts) * m.experts;
  int64_t eb = storage_bytes(storage_dtype(p), 1);  // an activation element
  // One expert's projection in its stored precision (the node reads the experts it touches).
  int projections = m.gated ? 3 : 2;
  double per_projection = static_cast<double>(c.read_weight) / (distinct * projections);
  std::string t;
  PredictionSource s = PredictionSource::measured_table;
  // The expert table of the experts' stored precision: fp8 experts (fp8 checkpoints) run fp8
  // GEMMs whatever the activations' dtype (engines quantize the routed rows). Weights stored
  // narrower than that (int4/int8 weight-only) are other kernels.
  Precision experts = m.fp8_weights ? Precision::fp8 : p;
  int64_t wb = storage_bytes(storage_dtype(experts), 1);
  // `weights`: the bytes of one expert's projection as the node stores it.
  auto projection = [&](int64_t n, int64_t k, double weights) -> std::optional<double> {
    PredictionSource one = PredictionSource::roofline;
    bool dense_weights = weights >= 0.75 * static_cast<double>(n * k * wb);
    // MXFP4 experts: the engines' upcasting kernel where the profile measured one (serve's
    // moe_fused.mxfp4), else the weights' stream below.
    auto expert_table = dense_weights     ? expert_gemm_query(experts, active, rows, n, k)
                        : m.mxfp4_weights ? mxfp4_expert_query(active, rows, n, k)
                                          : std::nullopt;
    if (auto seconds = time_from_table(expert_table, true, experts, d, t, one)) {
      if (one == PredictionSource::fitted) s = one;
      return seconds;
    }
    // No expert table: a batched GEMM over `active` experts has the tiles and waves of one GEMM
    // of all their rows, and streams every active expert's weights: the larger of that GEMM's
    // table time and the weights at the measured bandwidth.
    NodeCost g = gemm_cost(GemmDims{1, active * rows, n, k}, true);
    g.read_act = active * rows * k * eb;
    g.read_weight = static_cast<int64_t>(weights);
    g.written = active * rows * n * eb;
    auto seconds = predict_from_tables(g, p, d, t, one);
    if (!seconds) return std::nullopt;
    if (one == PredictionSource::fitted) s = one;
    double floor = d.gemm_floor_s > 0 ? d.gemm_floor_s : d.launch_floor_s;
    return std::max(*seconds, static_cast<double>(active) * weights / d.hbm_bandwidth + floor);
  };
  // Engines run a gated layer's gate and up projections as one of twice the width (vLLM's and
  // SGLang's w13, TensorRT-LLM's fc1); the replay runs them as two.
  bool fused_gate_up = m.gated && d.engine_routing;
  auto up = fused_gate_up ? projection(2 * m.inter, m.hidden, 2 * per_projection)
                          : projection(m.inter, m.hidden, per_projection);
  auto down = projection(m.hidden, m.inter, per_projection);
  if (!up || !down) return std::nullopt;
  double gemms = *up * (m.gated && !fused_gate_up ? 2 : 1) + *down;
  // Top-k over the router's rows; each token copied to its k rows; the activation (and the gate's
  // product) over the intermediates; the k outputs summed back per token.
  double moved = static_cast<double>(m.tokens * m.experts * eb + 2 * assignments * m.hidden * eb +
                                     (m.gated ? 3 : 2) * slots * m.inter * eb +
                                     slots * m.hidden * eb + m.tokens * m.hidden * eb);
  table = t;
  source = s;
  return gemms + moved / d.hbm_bandwidth + 4 * d.launch_floor_s;
}

// The precision a node's math runs in: a prefill over an fp8 cache runs fp8 attention where the
// GPU has fp8 tensor cores (perf_query's attn_prefill.fp8 table), anything else in `p`.
Precision math_precision(const NodeCost& c, Precision p, const Device& d) {
  return c.kernel.fp8_attention() && d.tensor_flops.count("fp8") ? Precision::fp8 : p;
}

}  // namespace

double issue_rate(const Device& d) {
  // Four schedulers of 32 lanes per SM and clock: half the FP32 FLOP rate (two FLOPs per FMA lane).
  return compute_unit(d, Precision::fp32, false).flops / 2;
}

BoundClass classify(const NodeCost& c, Precision p, double seconds, const Device& d) {
  BoundClass out;
  if (!(seconds > 0)) return out;
  const Device& peak = d.spec ? *d.spec : d;  // what Nsight Compute reports against
  seconds += kNsightDurationOverhead;         // the window its throughputs are averaged over
  auto reads = static_cast<double>(c.read_act + c.read_weight),
       written = static_cast<double>(c.written);
  if (peak.l2_bytes)
    written = std::max(0.0, written - kL2WriteBackShare * static_cast<double>(*peak.l2_bytes));
  out.memory_fraction = (reads + written) / (seconds * peak.hbm_bandwidth);
  auto flops = static_cast<double>(c.flops);
  ComputeUnit unit = compute_unit(peak, math_precision(c, p, peak), c.tensor_cores);
  if (unit.name.rfind("tensor", 0) == 0) {
    out.compute_fraction = flops / (seconds * unit.flops) * kTensorIssueOverhead;
  } else {
    double by_flops = flops * kInstructionsPerCudaCoreFlop;
    double instructions = c.instructions > 0 ? c.instructions : by_flops;
    out.compute_fraction = instructions / (seconds * issue_rate(peak));
    // A measured time too short to issue the kernel's count was another kernel's: the replay's
    // fastest depthwise convolutions (cuDNN's NHWC kernels) issue 33-144 instructions an output
    // where the count is of PyTorch's NCHW kernels (148 + 12.4 per window element).
    if (out.compute_fraction > 1 && c.instructions > 0)
      out.compute_fraction = by_flops / (seconds * issue_rate(peak));
  }
  double hi = std::max(out.compute_fraction, out.memory_fraction),
         lo = std::min(out.compute_fraction, out.memory_fraction);
  out.roof_fraction = hi;
  if (hi < kLatencyThreshold)
    out.bound = Bound::latency;
  else
    out.bound = out.compute_fraction >= out.memory_fraction ? Bound::compute : Bound::memory;
  out.uncertain = std::abs(hi - kLatencyThreshold) < kClassMargin ||
                  (lo >= kLatencyThreshold && hi - lo < kClassMargin);
  return out;
}

RooflinePoint place_on_roofline(const NodeCost& c, Precision p, const Device& d) {
  RooflinePoint r;
  if (c.collective_ranks > 1) {
    r.unit = d.nvlink_bandwidth ? "nvlink" : "pcie";
    r.predicted = collective_seconds(c.collective, c.collective_bytes, c.collective_ranks, d,
                                     d.engine_collectives);
    r.roof_fraction = 1;
    r.bound = Bound::communication;
    return r;
  }
  int64_t bytes = c.bytes();
  r.intensity = bytes > 0 ? static_cast<double>(c.flops) / static_cast<double>(bytes) : 0;
  if (c.flops == 0 && bytes == 0) return r;  // nothing runs on the GPU
  ComputeUnit unit = compute_unit(d, math_precision(c, p, d), c.tensor_cores);
  r.compute_roof = unit.flops;
  r.unit = unit.name;
  r.t_compute = static_cast<double>(c.flops) / unit.flops;
  // Issue-heavy kernels on the CUDA cores (pooling windows, depthwise convolutions, tanh GELU,
  // strided splits) are bound by the instructions the SMs issue; a calibrated FP32 rate carries
  // the issue efficiency the GPU reached (ResNet-50 b32's max pool: 92.8 us predicted, 93-95 us
  // measured; MobileNetV3 and EfficientNet-B0's depthwise convolutions: docs/profile.md).
  double t_issue =
      c.instructions > 0 && unit.name.rfind("tensor", 0) != 0 ? c.instructions / issue_rate(d) : 0;
  r.t_compute = std::max(r.t_compute, t_issue);
  r.t_memory = static_cast<double>(bytes) / d.hbm_bandwidth;
  int64_t tiles = c.parallel_tiles > 0 ? c.parallel_tiles
                                       : elementwise_tiles(std::max<int64_t>(c.written / 2, 1));
  r.wave_fraction = std::min(1.0, static_cast<double>(tiles) / static_cast<double>(d.sm_count));
  // The floor adds to the roofline time rather than bounding it: every kernel pays its launch,
  // first-byte latency and drain once, whatever it streams (the latency + bytes/bandwidth model
  // of a transfer). Too few blocks to fill the SMs shrink the compute roof; memory-bound kernels
  // (GEMV, split-KV decode, element-wise) size their grids to fill the chip, so their memory
  // time is not scaled. Both choices fitted the H100 timeline better (docs/profile.md).
  // A tiled kernel's floor also holds its first tile loads before any MMA and its epilogue.
  double floor = kernel_floor(d, c.tiled);
  r.predicted = std::max(roofline_seconds(static_cast<double>(c.flops), static_cast<double>(bytes),
                                          unit.flops, d.hbm_bandwidth, r.wave_fraction),
                         t_issue / r.wave_fraction) +
                floor;
  auto measured = c.kernel.moe ? predict_moe_from_tables(c, p, d, r.table, r.source)
                               : predict_from_tables(c, p, d, r.table, r.source);
  if (measured && c.kernel.attention) measured = narrower_cache(c, p, d, r.table, *measured);
  // The memory tables time plain streaming kernels. An issue-heavy kernel priced from one (a tanh
  // GELU, a strided split) is not faster than its instructions: on the H100 the table's time
  // covered them, on the H200's wider bus it does not (GPT-2's tanh GELUs: 10.5 us from the
  // scaled table, 17.0 us measured, 15.9 us to issue).
  if (measured && c.instructions > 0 && r.table.rfind("mem.", 0) == 0)
    measured = std::max(*measured, t_issue / r.wave_fraction);
  if (measured) r.predicted = *measured;
  BoundClass cls = classify(c, p, r.predicted, d);
  r.roof_fraction = cls.roof_fraction;
  r.bound = cls.bound;
  r.uncertain = cls.uncertain;
  return r;
}

}  // namespace rooflens
