#pragma once
// A measured performance table: kernel time over a grid of shape coordinates (GEMM m, n, k;
// attention heads and sequence; bytes of a memory-bound kernel ...), measured by
// `rooflens calibrate` on the harness's kernels and stored in the device profile. Lookups
// interpolate between the measured neighbours in log space (times follow power laws in the
// dims: a GEMM twice as wide takes about twice as long), never beyond the grid.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflens {

struct PerfTable {
  std::vector<std::string> axes;          // coordinate names, e.g. {"align", "m", "n", "k"}
  std::vector<std::vector<double>> grid;  // per axis, ascending, > 0
  std::vector<double> seconds;            // row-major over the grid; NaN where not measured

  size_t size() const;  // product of the axis lengths
  size_t flat_index(const std::vector<size_t>& index) const;
  // Multilinear interpolation of log(time) in log(coordinates) over the grid cell holding x.
  // nullopt when x lies outside the grid on any axis or a corner of its cell was not measured.
  std::optional<double> lookup(const std::vector<double>& x) const;
  // x with every coordinate clamped into the grid's range.
  std::vector<double> clamp(const std::vector<double>& x) const;
  // The measured grid point nearest to x in log coordinates, among those that share x's value on
  // the axes that name another kernel rather than a size ("align", the head dim "d"); nullopt
  // when none was measured.
  std::optional<std::vector<double>> nearest_measured(const std::vector<double>& x) const;
  // The time at x beyond the grid, or inside it where a neighbour was not measured: the time at
  // the clamped point (or, unmeasured, the nearest measured one) scaled by work(x) / work(that
  // point), `work` being any quantity the time is proportional to (the roofline's ideal time,
  // elements). With less work than there, only the time above `floor_s` scales: a kernel smaller
  // than the grid's smallest is never predicted below the fixed cost every kernel pays. nullopt
  // when no point was measured or the work there is not positive.
  std::optional<double> extrapolate(const std::vector<double>& x,
                                    const std::function<double(const std::vector<double>&)>& work,
                                    double floor_s = 0) const;
  // The same table without one measured point (leave-one-out validation).
  PerfTable without(size_t flat) const;
};

// Tables by key ("gemm.bf16", "attn_decode.bf16", "mem.norm", ...; analyzer/hw/perf_model.hpp).
struct PerfDatabase {
  std::map<std::string, PerfTable> tables;
  // How well the tables predict shapes that are not grid points, measured by calibrate: per key,
  // the median and p90 of |predicted - measured| / measured over held-out random shapes.
  struct Validation {
    int shapes = 0;
    double median_abs = 0, p90_abs = 0;
  };
  std::map<std::string, Validation> validation;
  bool empty() const { return tables.empty(); }
};

}  // namespace rooflens
