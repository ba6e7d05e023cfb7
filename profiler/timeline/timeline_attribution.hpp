#pragma once
// Where each GPU activity of a timeline belongs: the host call that launched it (correlation id),
// the innermost module range around that call on the same thread, and the step (iteration) it
// ran in. Module ranges are the vanilla trace's "nn.Module: X_N" calls, named by path through the
// instance map, and NVTX or record_function ranges named by module path (python/
// rooflens_annotate.py writes them). Kernels that a CUDA graph launched belong to the range around
// the graph launch. Nothing is dropped: what cannot be attributed is counted with the reason.
#include <map>
#include <string>
#include <vector>

#include "profiler/timeline/instance_map.hpp"
#include "profiler/timeline/module_paths.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

struct ActivityPlace {
  int module = -1;  // index into TimelineAttribution::modules; -1: no module of the model
  bool in_module_range = false;     // inside some module range (of the model or not)
  int step = -1;                    // -1: outside every step
  const ApiCall* launch = nullptr;  // nullptr: no launch call recorded for its correlation id
  bool from_graph = false;          // launched by a CUDA graph
  bool aligned = false;  // a graph kernel given its module by alignment (graph_alignment.hpp)
};

struct Step {
  uint64_t start_ns = 0, end_ns = 0;
};

// Time the GPU had nothing to run (HTA's idle time): gaps between the busy periods of a device
// within a window. Host wait: the next activity's launch call returned after the GPU had gone
// idle, so the GPU waited for the host; kernel wait: back-to-back gaps under 30 ns; other: the
// rest (waiting on a synchronization, a dependency, a copy engine).
struct IdleTime {
  double total_s = 0, host_wait_s = 0, kernel_wait_s = 0, other_s = 0;
  int gaps = 0;
};
inline constexpr double kKernelWaitThresholdNs = 30;  // HTA's consecutive_kernel_delay default

struct TimelineAttribution {
  std::vector<std::string> modules;   // module paths of the model that ranges named, by index
  std::vector<ActivityPlace> places;  // one per trace activity, same order
  std::vector<Step> steps;
  std::string step_source;  // how the steps were found, for the report
  bool steps_split =
      false;  // --steps N split the activities into equal runs: a step need not be one iteration
  std::string range_kind;   // "nn.Module calls (vanilla trace)", "module-path ranges (annotated)",
                            // both, or "none"
  InstanceMap instances;    // vanilla traces: instance -> path
  std::string prefix_note;  // range names needed a prefix change to match the model's paths
  int module_ranges = 0, mapped_ranges = 0;
  // Ranges that look like module paths but name no module of the model, with kernel time inside.
  std::map<std::string, double> unmatched_ranges_s;
  // Instances the map could not name: their kernels went to the nearest named ancestor.
  std::map<std::string, double> unmapped_instances_s;
  IdleTime idle;                    // over the whole timeline, per device, summed
  std::vector<IdleTime> step_idle;  // per step
};

// `steps`: 0 finds them (a repeating top-level range), N > 0 takes the last N occurrences of
// the repeating range, or splits the activities into N equal runs where nothing repeats
// (InputError when N does not divide them).
TimelineAttribution attribute_timeline(const Trace& trace, const ModelModules& model,
                                       int steps = 0);

// Idle time of `activities` (indices into trace.activities) between `from` and `to`.
IdleTime idle_time(const Trace& trace, const std::vector<ActivityPlace>& places,
                   const std::vector<size_t>& activities);

}  // namespace rooflens::profiler
