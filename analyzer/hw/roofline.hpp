#pragma once
// Predicted time and bound class of one node on one device (design notes §3).
#include <string>
#include <string_view>

#include "analyzer/core/cost.hpp"
#include "analyzer/hw/device.hpp"

namespace rooflens {

enum class Bound { compute, memory, latency, communication, none };
std::string_view bound_name(Bound b);

// Where a node's predicted time came from: a calibrated table where its shape lies inside one,
// the table's nearest point scaled by the roofline where it lies beyond, else the roofline.
enum class PredictionSource { measured_table, fitted, roofline };
std::string_view source_name(PredictionSource s);  // "measured table", "fitted", "roofline"

// A node whose best roof would be used less than this fraction is latency-bound.
inline constexpr double kLatencyThreshold = 0.6;

struct RooflinePoint {
  double compute_roof = 0;   // FLOP/s of the unit the node runs on
  std::string unit;          // e.g. "tensor bf16", "cuda fp32"
  double t_compute = 0;      // FLOPs / compute roof, whole chip
  double t_memory = 0;       // bytes / HBM bandwidth, whole chip
  double wave_fraction = 1;  // thread blocks / SMs, capped at 1: below one wave the roofs shrink
  double predicted = 0;      // max(t_compute, t_memory) / wave_fraction, at least the launch floor
  double roof_fraction =
      0;                   // the fraction of the hardware's peak (spec) the predicted time implies
  bool uncertain = false;  // the class is within kClassMargin of another
  double intensity = 0;    // FLOPs per byte
  Bound bound = Bound::none;
  PredictionSource source = PredictionSource::roofline;
  std::string table;  // the table's key, for measured-table and fitted predictions
};

RooflinePoint place_on_roofline(const NodeCost& c, Precision p, const Device& d);
// Thread instructions per second the CUDA cores issue on `d`.
double issue_rate(const Device& d);

// The class Nsight Compute would give a kernel doing `c` in `seconds` (its rule: the larger of SM
// and memory throughput as a fraction of the hardware's peaks; at least kLatencyThreshold, that
// class, else latency-bound), for a predicted time and a measured one alike. SM throughput is the
// instructions the SM issues (the tensor FLOP fraction with the issue beside it on the matrix
// units); memory throughput is DRAM's, which sees the reads and only the writes L2 cannot hold.
struct BoundClass {
  double compute_fraction = 0, memory_fraction = 0;
  double roof_fraction = 0;  // the larger
  Bound bound = Bound::none;
  bool uncertain = false;  // within kClassMargin of the line, or of the other roof
};
BoundClass classify(const NodeCost& c, Precision p, double seconds, const Device& d);

// Bytes/s per direction between GPUs: NVLink where the device has it, else PCIe.
double link_bandwidth(const Device& d);

}  // namespace rooflens
