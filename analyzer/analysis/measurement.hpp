#pragma once
// What `rooflens profile` measured, attached to an Analysis so every report (terminal, JSON,
// CSV, HTML) shows prediction and measurement side by side. Filled by profiler/, formatted by
// reports/; the analyzer itself never sets these.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/hw/roofline.hpp"

namespace rooflens {

// Order statistics of one layer's samples, in seconds.
struct SampleStats {
  int n = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0;
  double spread() const { return median > 0 ? (q3 - q1) / median : 0; }  // relative IQR
};
SampleStats summarize_samples(std::vector<double> samples);
// The q-quantile (0..1) by linear interpolation between order statistics.
double quantile(std::vector<double> sorted_values, double q);

enum class ReplayStatus {
  measured,      // replayed and timed
  not_replayed,  // no replay kernel for this node kind: never timed as zero
  skipped,       // replayable, but not run here (too big for the GPU memory, ...)
  no_kernel,     // a view or a folded node: no runtime launches anything for it
};
std::string_view replay_status_name(ReplayStatus s);

struct Measurement {
  ReplayStatus status = ReplayStatus::not_replayed;
  std::string reason;                     // why not measured
  SampleStats time;                       // GPU time of the layer's kernels per sample
  int kernels = 0;                        // kernels per sample (split-K, workspace memsets count)
  std::vector<std::string> kernel_names;  // distinct, in launch order
  std::string replay;                     // what the plan asked for: "bf16 GEMM m=8 n=11008 k=4096"
  std::string library;    // what ran it: "cuBLASLt", "cuDNN", "rooflens" (our kernels)
  std::string algorithm;  // the algorithm, engine or kernel in that library
  std::string choice;     // how it was picked, or why the vendor library did not run it
  double achieved_flops = 0, achieved_bytes_per_s = 0;
  double roof_fraction = 0;  // achieved / the hardware's peak (spec roofs, as ncu reports)
  Bound measured_class = Bound::none;
  double error = 0;  // (predicted - measured) / measured
};

struct ClassError {
  std::string family;
  int layers = 0;
  double median_abs = 0, p90_abs = 0;
  double time_weighted = 0;  // sum |predicted - measured| / sum measured over the class's layers
  double predicted_s = 0, measured_s = 0;
};

struct ProfileSummary {
  std::string gpu;               // the name the driver reports
  std::string timing = "cupti";  // "cupti", or "cuda-events" when CUPTI could not subscribe
  std::string timing_note;       // why the fallback was taken
  std::string l2 = "cold";       // "cold": flushed before each sample, "hot": back to back
  std::string roofs = "spec";    // "calibrated" when the device profile was measured here
  double sm_clock_mhz = 0;
  bool valid = true;  // false when CUPTI dropped records
  std::string invalid_reason;
  bool complete = true;  // false when interrupted
  uint64_t dropped_records = 0;
  int measured = 0, not_replayed = 0, skipped = 0, no_kernel = 0;
  double predicted_s = 0, measured_s = 0;          // over measured layers only
  double model_error = 0;                          // (sum predicted - sum measured) / sum measured
  double median_abs_error = 0, p90_abs_error = 0;  // per layer, all classes
  // The headline: sum over layers of |predicted - measured| / sum of measured. The median hides
  // where the time goes; this weighs each layer's error by its time.
  double time_weighted_error = 0;
  std::vector<ClassError> classes;
  double wall_s = 0;
  std::string cudnn;  // "cuDNN 9.19.0 (path)" or why it was not available
};

// What the GPU module hands back from `rooflens profile`: each node's measurement (none for a node
// the run did not reach) and the run's conditions and validity. The module reads the analysis
// and never writes it; profiler::with_measurements composes the result on the binary's side.
struct ProfileMeasurements {
  std::vector<std::optional<Measurement>> nodes;
  ProfileSummary run;
};

}  // namespace rooflens
