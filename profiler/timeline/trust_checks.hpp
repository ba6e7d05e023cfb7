#pragma once
// Before `compare` puts a prediction next to a timeline: is the timeline a run of this model, in
// this phase, on this device? Read from what the trace itself holds: the classes of its kernels
// per step (convolution and attention kernels against the model's convolution and attention
// nodes), its matrix kernels' time per step against the prediction's, the attention queries' shapes
// where the trace records them (record_shapes), and its GPU. Precision the kernels ran in (TF32,
// bf16 vs fp16) is compared with the prediction's and stated, never an error.
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

struct TrustOptions {
  bool device_given =
      false;  // --device was passed: a trace from another GPU is a mismatch, not a note
};

struct TrustFindings {
  std::vector<std::string>
      mismatches;         // each names what disagrees; any one: another model, phase or device
  std::string precision;  // "" or the one line on the precision the kernels ran in
};

// What a trace's kernels are, per step (the median over steps).
struct KernelCensus {
  double convolutions = 0, attention = 0, gemms = 0;  // kernels per step
  // In the whole timeline: whether the program ran such kernels at all.
  bool any_convolution = false, any_attention = false, any_gemm = false;
  // The steps are the trace's iterations (a repeating range, or the whole timeline), not equal
  // runs that --steps N cut: only then are counts and times per step those of one forward.
  bool per_iteration = true;
  double matrix_s = 0;                  // GEMM, convolution and attention kernel time per step
  double tf32 = 0, bf16 = 0, fp16 = 0;  // kernels per step whose names state the type
  double tf32_s = 0;
};

// `activity_step`: per trace activity, the step it ran in (-1: none); `steps`: how many. With no
// steps, the whole timeline is one.
KernelCensus kernel_census(const Trace& t, const std::vector<int>& activity_step, int steps,
                           bool per_iteration = true);

TrustFindings check_trust(const Analysis& a, const Trace& t, const KernelCensus& census,
                          const TrustOptions& o);

// The precision line alone: "" when the kernels ran in the precision predicted.
std::string precision_mismatch(const Analysis& a, const KernelCensus& census);

}  // namespace rooflens::profiler
