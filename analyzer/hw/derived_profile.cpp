#include "analyzer/hw/derived_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/perf_model.hpp"

namespace rooflens {

namespace {

// target's spec figure times the fraction of its own spec that the measured GPU reached.
void carry_rates(const std::map<std::string, double>& measured,
                 const std::map<std::string, double>& measured_spec,
                 const std::map<std::string, double>& target_spec,
                 std::map<std::string, double>& out) {
  for (const auto& [key, value] : measured) {
    auto spec = measured_spec.find(key), target = target_spec.find(key);
    if (spec == measured_spec.end() || target == target_spec.end() || !(spec->second > 0)) continue;
    out[key] = target->second * value / spec->second;
  }
}

// The roofline time of one table point's work on `d`; nullopt where `d` has no rate for it.
std::optional<double> roofline_time(const GridWork& w, const Device& d) {
  try {
    double t = ideal_seconds(w, d);
    return t > 0 && std::isfinite(t) ? std::optional<double>(t) : std::nullopt;
  } catch (const InputError&) {
    return std::nullopt;  // a precision the device has no tensor-core rate for (fp8 on an A100)
  }
}

// The measured time above the floor, carried to the target. A compute-bound point scales by
// the ratio of the roofline times: its distance from the roof (tiles, waves) scales with the
// compute. A memory-bound point scales only the share of it that streamed at the bandwidth the
// measured GPU reached (`streamed_s`: its bytes at the calibrated rate): the rest is DRAM latency
// and ramp-up, which a wider bus does not shorten (GPT-2's decode GEMVs on an H200,
// docs/profile.md).
double carried_seconds(double above_floor, double r_from, double r_to, bool memory_bound,
                       double streamed_s) {
  if (!memory_bound) return above_floor * r_to / r_from;
  double streamed = std::clamp(streamed_s / above_floor, 0.0, 1.0);
  return above_floor * (streamed * r_to / r_from + (1 - streamed));
}

PerfTable carry_table(const std::string& key, const PerfTable& t, const Device& from,
                      const Device& to, double floor_s, double measured_bandwidth, bool& usable) {
  PerfTable out = t;
  usable = false;
  std::vector<size_t> index(t.axes.size(), 0);
  for (size_t flat = 0; flat < t.seconds.size(); ++flat) {
    // index -> coordinates, row-major (the last axis fastest), as PerfTable::flat_index lays them
    // out.
    size_t rest = flat;
    std::vector<double> x(t.axes.size());
    for (size_t a = t.axes.size(); a-- > 0;) {
      x[a] = t.grid[a][rest % t.grid[a].size()];
      rest /= t.grid[a].size();
    }
    double s = t.seconds[flat];
    if (std::isnan(s)) continue;
    GridWork w = grid_work(key, x);
    auto r_from = roofline_time(w, from), r_to = roofline_time(w, to);
    if (!r_from || !r_to) {
      out.seconds[flat] = std::nan("");
      continue;
    }
    bool memory_bound = w.bytes / from.hbm_bandwidth >= *r_from * 0.999;
    out.seconds[flat] = s <= floor_s
                            ? s
                            : floor_s + carried_seconds(s - floor_s, *r_from, *r_to, memory_bound,
                                                        w.bytes / measured_bandwidth);
    usable = true;
  }
  return out;
}

}  // namespace

DeviceProfile derive_profile(const DeviceProfile& measured, const Device& target) {
  const Device& spec = find_device(measured.base_device);
  DeviceProfile p;
  p.base_device = target.id;
  p.gpu = target.name;
  p.derived_from = measured.base_device;
  // The error stated is the derived profiles' median against 30 published GEMM and copy rates of
  // seven GPUs (scripts/gpu/derived_vs_published.py; docs/profile.md has the table).
  p.source =
      fmt::format("derived from {}'s profile, ~7% off published rates", measured.base_device);
  p.sm_clock_mhz = target.boost_clock_hz ? *target.boost_clock_hz / 1e6 : 0;
  p.hbm_bandwidth = target.hbm_bandwidth * measured.hbm_bandwidth / spec.hbm_bandwidth;
  // L2 bandwidth per SM per clock is an architecture's figure; without both clocks it is left out.
  if (measured.l2_bandwidth > 0 && measured.sm_clock_mhz > 0 && target.boost_clock_hz)
    p.l2_bandwidth = measured.l2_bandwidth / (spec.sm_count * measured.sm_clock_mhz * 1e6) *
                     target.sm_count * *target.boost_clock_hz;
  carry_rates(measured.tensor_flops, spec.tensor_flops, target.tensor_flops, p.tensor_flops);
  carry_rates(measured.cuda_core_flops, spec.cuda_core_flops, target.cuda_core_flops,
              p.cuda_core_flops);
  p.launch_floor_s = measured.launch_floor_s;
  p.gemm_floor_s = measured.gemm_floor_s;
  p.launch_interval_s = measured.launch_interval_s;
  p.eager_host = measured.eager_host;
  for (const auto& [key, how] : measured.method)
    p.method[key] = fmt::format("derived from {}'s measurement ({})", measured.base_device, how);
  // Roofline times on spec roofs on both sides: the measured time already holds how far the
  // measured GPU stayed from its spec.
  for (const auto& [key, table] : measured.tables.tables) {
    bool usable = false;
    PerfTable t = carry_table(key, table, spec, target, measured.launch_floor_s,
                              measured.hbm_bandwidth, usable);
    if (usable) p.tables.tables[key] = std::move(t);
  }
  return p;
}

std::optional<DeviceProfile> default_profile(const std::string& device_id) {
  const Device& d = find_device(device_id);
  if (auto own = shipped_profile(d.id)) return own;
  std::optional<DeviceProfile> base = shipped_profile("H100-SXM");
  if (!base) return std::nullopt;
  return derive_profile(*base, d);
}

}  // namespace rooflens
