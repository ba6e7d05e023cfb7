#include "analyzer/hw/perf_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rooflens {

size_t PerfTable::size() const {
  size_t n = 1;
  for (const auto& g : grid) n *= g.size();
  return n;
}

size_t PerfTable::flat_index(const std::vector<size_t>& index) const {
  size_t flat = 0;
  for (size_t a = 0; a < grid.size(); ++a) flat = flat * grid[a].size() + index[a];
  return flat;
}

std::optional<double> PerfTable::lookup(const std::vector<double>& x) const {
  if (x.size() != grid.size() || seconds.size() != size()) return std::nullopt;
  constexpr double kTolerance = 1e-9;
  // Per axis: the cell's lower index and the weight of its upper neighbour, in log space.
  std::vector<size_t> lo(grid.size());
  std::vector<double> w(grid.size());
  for (size_t a = 0; a < grid.size(); ++a) {
    const std::vector<double>& g = grid[a];
    double v = x[a];
    if (!(v > 0) || v < g.front() * (1 - kTolerance) || v > g.back() * (1 + kTolerance))
      return std::nullopt;
    if (g.size() == 1) {
      lo[a] = 0;
      w[a] = 0;
      continue;
    }
    size_t i = static_cast<size_t>(std::upper_bound(g.begin(), g.end(), v) - g.begin());
    i = std::clamp<size_t>(i, 1, g.size() - 1) - 1;  // g[i] <= v <= g[i + 1]
    lo[a] = i;
    w[a] = std::clamp((std::log(v) - std::log(g[i])) / (std::log(g[i + 1]) - std::log(g[i])), 0.0,
                      1.0);
  }
  double log_t = 0;
  std::vector<size_t> idx(grid.size());
  for (size_t corner = 0; corner < (size_t{1} << grid.size()); ++corner) {
    double weight = 1;
    for (size_t a = 0; a < grid.size(); ++a) {
      bool up = (corner >> a) & 1;
      if (up && grid[a].size() == 1) {
        weight = 0;
        break;
      }
      idx[a] = lo[a] + (up ? 1 : 0);
      weight *= up ? w[a] : 1 - w[a];
    }
    if (weight == 0) continue;
    double t = seconds[flat_index(idx)];
    if (!(t > 0)) return std::nullopt;  // a corner of this cell was not measured
    log_t += weight * std::log(t);
  }
  return std::exp(log_t);
}

std::vector<double> PerfTable::clamp(const std::vector<double>& x) const {
  std::vector<double> c(x);
  for (size_t a = 0; a < grid.size() && a < c.size(); ++a)
    c[a] = std::clamp(c[a], grid[a].front(), grid[a].back());
  return c;
}

std::optional<double> PerfTable::extrapolate(
    const std::vector<double>& x, const std::function<double(const std::vector<double>&)>& work,
    double floor_s) const {
  std::vector<double> edge = clamp(x);
  auto at_edge = lookup(edge);
  if (!at_edge) {
    auto nearest = nearest_measured(edge);
    if (!nearest) return std::nullopt;
    edge = *nearest;
    at_edge = lookup(edge);
  }
  double work_edge = work(edge);
  if (!at_edge || !(work_edge > 0)) return std::nullopt;
  double ratio = work(x) / work_edge;
  if (ratio >= 1) return *at_edge * ratio;
  return floor_s + std::max(0.0, *at_edge - floor_s) * ratio;
}

std::optional<std::vector<double>> PerfTable::nearest_measured(const std::vector<double>& x) const {
  if (x.size() != grid.size() || seconds.size() != size()) return std::nullopt;
  std::optional<std::vector<double>> best;
  double best_distance = std::numeric_limits<double>::infinity();
  std::vector<size_t> idx(grid.size(), 0);
  for (size_t flat = 0; flat < seconds.size(); ++flat) {
    // idx: the grid index of `flat`, row-major (the last axis fastest).
    size_t rest = flat;
    for (size_t a = grid.size(); a-- > 0;) {
      idx[a] = rest % grid[a].size();
      rest /= grid[a].size();
    }
    if (std::isnan(seconds[flat])) continue;
    double distance = 0;
    bool same_kernel = true;
    for (size_t a = 0; a < grid.size() && same_kernel; ++a) {
      double v = grid[a][idx[a]];
      if (axes[a] == "align" || axes[a] == "d") same_kernel = std::fabs(v - x[a]) <= 1e-9 * x[a];
      double l = std::log(v) - std::log(x[a]);
      distance += l * l;
    }
    if (!same_kernel || distance >= best_distance) continue;
    best_distance = distance;
    best.emplace();
    for (size_t a = 0; a < grid.size(); ++a) best->push_back(grid[a][idx[a]]);
  }
  return best;
}

PerfTable PerfTable::without(size_t flat) const {
  PerfTable t = *this;
  if (flat < t.seconds.size()) t.seconds[flat] = std::numeric_limits<double>::quiet_NaN();
  return t;
}

}  // namespace rooflens
