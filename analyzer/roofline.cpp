#include "analyzer/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/errors.hpp"
#include "analyzer/formulas.hpp"
#include "analyzer/link_model.hpp"
#include "analyzer/perf_model.hpp"

namespace rooflens {

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::latency: return "latency";
    case Bound::communication: return "comm";
    case Bound::none: return "-";
  }
  return "-";
}

std::string_view source_name(PredictionSource s) {
  switch (s) {
    case PredictionSource::measured_table: return "measured table";
    case PredictionSource::fitted: return "fitted";
    case PredictionSource::roofline: return "roofline";
  }
  return "roofline";
}

ComputeUnit compute_unit(const Device& d, Precision p, bool tensor_cores) {
  std::string key(precision_name(p));
  if (tensor_cores && p != Precision::fp32) {
    auto it = d.tensor_flops.find(key);
    if (it == d.tensor_flops.end())
      throw InputError(fmt::format("device {} has no {} tensor-core rate; choose another --dtype or device", d.id, key));
    return {"tensor " + key, it->second};
  }
  // CUDA cores: half types at their own rate where published; fp8/int8 element-wise work runs
  // after conversion, at the fp16 rate; anything unpublished falls back to the fp32 rate.
  std::string k = key == "tf32" ? "fp32" : (key == "fp8" || key == "int8") ? "fp16" : key;
  auto it = d.cuda_core_flops.find(k);
  if (it == d.cuda_core_flops.end()) it = d.cuda_core_flops.find("fp32");
  if (it != d.cuda_core_flops.end()) return {"cuda " + it->first, it->second};
  throw InputError(fmt::format("device {} lists no CUDA-core rate", d.id));
}

double link_bandwidth(const Device& d) {
  if (d.nvlink_bandwidth) return *d.nvlink_bandwidth / 2;  // NVIDIA quotes both directions together
  if (d.pcie_bandwidth) return *d.pcie_bandwidth;
  throw InputError(fmt::format("device {} lists no GPU-to-GPU link bandwidth", d.id));
}

namespace {

// The time of the roofline ideal of a table point on this device.
double ideal_seconds(const std::string& table, const std::vector<double>& x, const Device& d) {
  GridWork w = grid_work(table, x);
  double t = w.bytes / d.hbm_bandwidth;
  if (w.flops > 0) t = std::max(t, w.flops / compute_unit(d, w.precision, w.tensor_cores).flops);
  return t;
}

std::optional<double> predict_from_tables(const NodeCost& c, Precision p, const Device& d, std::string& table, PredictionSource& source) {
  if (!d.perf) return std::nullopt;
  auto q = perf_query(c, p);
  if (!q) return std::nullopt;
  auto it = d.perf->tables.find(q->table);
  if (it == d.perf->tables.end()) return std::nullopt;
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
  std::vector<double> edge = t.clamp(q->x);
  auto at_edge = t.lookup(edge);
  if (!at_edge) {
    auto nearest = t.nearest_measured(edge);
    if (!nearest) return std::nullopt;
    edge = *nearest;
    at_edge = t.lookup(edge);
  }
  double ideal_edge = ideal_seconds(q->table, edge, d);
  if (!at_edge || !(ideal_edge > 0)) return std::nullopt;
  table = q->table;
  source = PredictionSource::fitted;
  return *at_edge * ideal_seconds(q->table, q->x, d) / ideal_edge;
}

}  // namespace

RooflinePoint place_on_roofline(const NodeCost& c, Precision p, const Device& d) {
  RooflinePoint r;
  if (c.collective_ranks > 1) {
    r.unit = d.nvlink_bandwidth ? "nvlink" : "pcie";
    r.predicted = collective_seconds(Collective::all_reduce, c.collective_bytes, c.collective_ranks, d, d.engine_collectives);
    r.roof_fraction = 1;
    r.bound = Bound::communication;
    return r;
  }
  int64_t bytes = c.bytes();
  r.intensity = bytes > 0 ? static_cast<double>(c.flops) / static_cast<double>(bytes) : 0;
  if (c.flops == 0 && bytes == 0) return r;  // nothing runs on the GPU
  ComputeUnit unit = compute_unit(d, p, c.tensor_cores);
  r.compute_roof = unit.flops;
  r.unit = unit.name;
  r.t_compute = static_cast<double>(c.flops) / unit.flops;
  r.t_memory = static_cast<double>(bytes) / d.hbm_bandwidth;
  int64_t tiles = c.parallel_tiles > 0 ? c.parallel_tiles : elementwise_tiles(std::max<int64_t>(c.written / 2, 1));
  r.wave_fraction = std::min(1.0, static_cast<double>(tiles) / static_cast<double>(d.sm_count));
  // The floor adds to the roofline time rather than bounding it: every kernel pays its launch,
  // first-byte latency and drain once, whatever it streams (the latency + bytes/bandwidth model
  // of a transfer). Too few blocks to fill the SMs shrink the compute roof; memory-bound kernels
  // (GEMV, split-KV decode, element-wise) size their grids to fill the chip, so their memory
  // time is not scaled. Both choices fitted the H100 timeline better (docs/profile.md).
  // A tiled kernel's floor also holds its first tile loads before any MMA and its epilogue.
  double floor = c.tiled && d.gemm_floor_s > 0 ? d.gemm_floor_s : d.launch_floor_s;
  r.predicted = std::max(r.t_compute / r.wave_fraction, r.t_memory) + floor;
  if (auto measured = predict_from_tables(c, p, d, r.table, r.source)) r.predicted = *measured;
  // Nsight Compute's rule on the fractions of the hardware's peaks (the spec roofs, which ncu
  // reports against; a calibrated device's achievable roofs are lower) the prediction implies.
  const Device& peak = d.spec ? *d.spec : d;
  double peak_compute = static_cast<double>(c.flops) / compute_unit(peak, p, c.tensor_cores).flops;
  double peak_memory = static_cast<double>(bytes) / peak.hbm_bandwidth;
  r.roof_fraction = std::max(peak_compute, peak_memory) / r.predicted;
  if (r.roof_fraction < kLatencyThreshold) r.bound = Bound::latency;
  else r.bound = peak_compute >= peak_memory ? Bound::compute : Bound::memory;
  return r;
}

}  // namespace rooflens
