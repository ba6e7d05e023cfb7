#pragma once
// Two timelines of the same model set side by side (`rooflens compare MODEL BEFORE AFTER`): per
// module, what got faster or slower between them, with the same attribution as `compare` (each
// timeline compared with the model first, so both pass the same trust checks and module mapping).
#include <string>
#include <vector>

#include "profiler/timeline/module_compare.hpp"

namespace rooflens::profiler {

struct ModuleChange {
  std::string path;  // a module (or, by block, repeated layers folded: "model.layers.*.mlp")
  int instances = 1;
  double before_s = 0, after_s = 0;              // per step, own kernels (0: not measured there)
  double kernels_before = 0, kernels_after = 0;  // per step
  std::string top_before, top_after;             // each side's longest kernel, demangled
  double change_s() const { return after_s - before_s; }
};

struct RunDiff {
  std::string before, after;                   // the timelines
  double step_before_s = 0, step_after_s = 0;  // GPU time per step
  double wall_before_s = 0, wall_after_s = 0;  // a step's span
  double predicted_s = 0;                      // the model's prediction, one step
  std::vector<ModuleChange> modules;           // by |change|, largest first
  std::vector<std::string> notes;
};

// `by_block`: rows of repeated layers folded (the comparisons' block view), else per module.
RunDiff diff_runs(const TimelineComparison& before, const TimelineComparison& after, bool by_block);

}  // namespace rooflens::profiler
