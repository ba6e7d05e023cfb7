#include "profiler/gpu/calibrate_tables.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "analyzer/analysis/measurement.hpp"
#include "analyzer/hw/perf_model.hpp"
#include "kernels/cuda_check.hpp"
#include "replay/grid_plans.hpp"

namespace rooflens::profiler {

namespace {

using Clock = std::chrono::steady_clock;

// Seconds of the nominal point, or NaN when it cannot run here (no kernel, out of memory).
double time_point(LayerTimer& timer, const std::string& table, const std::vector<double>& x,
                  int samples) {
  try {
    replay::GridPlan g = replay::plan_for_grid_point(table, x);
    return timer.time(g.plan, samples).cold_s * g.scale;
  } catch (const kernels::CudaError&) {
    cudaGetLastError();
    cudaDeviceSynchronize();
    return std::numeric_limits<double>::quiet_NaN();
  }
}

// Every index of a grid, in row-major order.
template <class F>
void for_each_point(const TableGrid& g, F&& f) {
  std::vector<size_t> idx(g.grid.size(), 0);
  std::vector<double> x(g.grid.size());
  while (true) {
    for (size_t a = 0; a < idx.size(); ++a) x[a] = g.grid[a][idx[a]];
    f(x);
    size_t a = idx.size();
    while (a-- > 0) {
      if (++idx[a] < g.grid[a].size()) break;
      idx[a] = 0;
    }
    if (a == static_cast<size_t>(-1)) return;
  }
}

// A random shape inside the grid's range, log-uniform per axis, rounded as layers' dims are:
// GEMM widths to multiples of 128 (the table's alignment class then shifts N off it), channels to
// 16, a grouped convolution's channels a group to 4 (and its channels to whole groups, below),
// rows to whole vectors, KV heads to sequences of 8; alignment classes, head dims and groups
// drawn from the grid's own values.
double round_as_layers_do(const std::string& axis, double v) {
  double step = axis == "n" || axis == "k"                            ? 128
                : axis == "out" || axis == "in" || axis == "channels" ? 16
                : axis == "cols"                                      ? 8
                : axis == "kv_heads" && v >= 8                        ? 8
                : axis == "width"                                     ? 4
                                                                      : 1;
  return std::max(step, std::round(v / step) * step);
}

std::vector<double> held_out_point(const TableGrid& g, std::mt19937& rng) {
  std::vector<double> x;
  for (size_t a = 0; a < g.grid.size(); ++a) {
    const auto& v = g.grid[a];
    if (g.axes[a] == "align" || g.axes[a] == "d" || g.axes[a] == "group") {
      x.push_back(v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]);
      continue;
    }
    double lo = std::log(v.front()), hi = std::log(v.back());
    double u = std::exp(std::uniform_real_distribution<double>(lo, hi)(rng));
    x.push_back(std::clamp(round_as_layers_do(g.axes[a], u), v.front(), v.back()));
  }
  // A grouped convolution's channels are whole groups of `width` (ResNeXt's 32 x 4, RegNet's
  // n x 8): 300 channels of 13 a group would time cuDNN's unaligned kernels, no layer's.
  if (g.axes.size() == 3 && g.axes[1] == "channels" && g.axes[2] == "width") {
    x[2] = std::min(x[2], x[1]);
    x[1] = std::max(x[2], std::round(x[1] / x[2]) * x[2]);
  }
  return x;
}

}  // namespace

PerfDatabase measure_tables(LayerTimer& timer, const Device& device, bool quick,
                            const std::vector<std::string>& only, std::ostream& progress) {
  PerfDatabase db;
  auto start = Clock::now();
  double budget = quick ? 0.5e-3 : 2e-3;  // seconds per kernel run, estimated from the roofline
  int64_t memory = int64_t{8} << 30;
  int samples = quick ? 5 : 10;
  // Held-out shapes cost as much as grid points: --quick checks each table on three, so that every
  // class (the depthwise ones take ~7 s a table on the H100) fits the deadline with room to spare.
  int held_out = quick ? 3 : 12;
  // Past this, the remaining points stay unmeasured (their shapes are predicted as beyond the
  // grid) and the run says so: calibrate keeps within its time. --quick's tables took 59-88 s on
  // the H100, but more than 101 s on a fresh machine, where cuDNN compiles its kernels first.
  double deadline = quick ? 150 : 900;
  bool cut = false;
  std::mt19937 rng(20261123);
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  for (const TableGrid& g : selected_grids(quick, only)) {
    PerfTable t{g.axes, g.grid, {}};
    size_t total = t.size(), done = 0, timed = 0;
    t.seconds.reserve(total);
    double last_report = elapsed();
    for_each_point(g, [&](const std::vector<double>& x) {
      double s = std::numeric_limits<double>::quiet_NaN();
      if (!cut && elapsed() > deadline) {
        cut = true;
        fmt::print(progress,
                   "calibrate: {:.0f} s deadline reached in {}: the remaining points are left "
                   "unmeasured\n",
                   deadline, g.key);
      }
      if (!cut && grid_point_wanted(g.key, x, device, budget, memory)) {
        s = time_point(timer, g.key, x, samples);
        ++timed;
      }
      t.seconds.push_back(s);
      if (++done == total || elapsed() - last_report > 5) {
        last_report = elapsed();
        fmt::print(progress, "calibrate: {:<26} {:>5}/{} points ({} timed), {:.0f} s\n", g.key,
                   done, total, timed, last_report);
        progress.flush();
      }
    });
    // Held-out shapes: measured like the grid, predicted from it.
    std::vector<double> errors;
    for (int i = 0, tries = 0; !cut && i < held_out && tries < 20 * held_out; ++tries) {
      std::vector<double> x = held_out_point(g, rng);
      auto predicted = t.lookup(x);
      if (!predicted || !grid_point_wanted(g.key, x, device, budget, memory)) continue;
      double measured = time_point(timer, g.key, x, samples);
      if (!(measured > 0)) continue;
      errors.push_back(std::abs(*predicted - measured) / measured);
      ++i;
    }
    if (!errors.empty())
      db.validation[g.key] = {static_cast<int>(errors.size()), quantile(errors, 0.5),
                              quantile(errors, 0.9)};
    fmt::print(progress,
               "calibrate: {:<26} held out {} shapes: median error {:.1f}%, p90 {:.1f}%\n", g.key,
               errors.size(), errors.empty() ? 0.0 : 100 * quantile(errors, 0.5),
               errors.empty() ? 0.0 : 100 * quantile(errors, 0.9));
    db.tables[g.key] = std::move(t);
  }
  return db;
}

}  // namespace rooflens::profiler
