#pragma once
// `rooflens compare MODEL TIMELINE`: the prediction next to what a real run did, module by module.
// Each module's predicted time is the sum over the model's nodes that belong to it; its measured
// time the sum of the GPU activities whose launch ran inside its range and no child's, per step
// (the median over steps, with the spread). Efficiency = predicted / measured; gap = measured -
// predicted. Every number is computed here; reports only format (reports/compare_report).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/timeline/timeline_attribution.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

struct TopKernel {
  std::string name;        // demangled
  std::string short_name;  // without parameters and inner namespaces
  double time_s = 0;       // per step (whole-timeline time / steps)
  double count = 0;        // per step
};

struct ModuleComparison {
  std::string path;    // module path; a block ("model.layers.*.mlp") in the block view
  std::string parent;  // module view only
  std::vector<std::string> children;  // module view only: child modules that have a row
  int instances = 1;                  // block view: modules folded into the row
  int nodes = 0;                      // costed nodes whose time is predicted here
  double predicted_s = 0;             // per step, own nodes
  double measured_s = 0;              // per step (median over steps), own kernels
  double measured_q1_s = 0, measured_q3_s = 0;
  double measured_total_s = 0;  // every step and what lies between, summed: the sum of its kernels
  std::optional<double> efficiency;                        // predicted / measured, when measured
  double gap_s = 0;                                        // measured - predicted
  double kernels = 0;                                      // GPU activities per step (median)
  double subtree_predicted_s = 0, subtree_measured_s = 0;  // with every descendant (module view)
  int64_t flops = 0, bytes = 0;  // of the predicted nodes, for the roofline
  double graph_s = 0;            // per step, launched from CUDA graphs
  std::vector<TopKernel> top_kernels;
  std::vector<std::string> hints;  // the first is the row's one-line hint
};

struct TimelineComparison {
  std::string timeline;  // the file
  std::string source;    // "pytorch profiler", "rooflens record"
  std::string gpu;
  std::vector<std::string> command;
  bool complete = true;
  std::string incomplete_reason;
  uint64_t dropped_records = 0;
  std::string ranges;  // which kind of module ranges attributed the kernels
  int kernels = 0, memcpys = 0, memsets = 0;
  double total_kernel_s = 0;         // every GPU activity in the timeline
  double attributed_kernel_s = 0;    // launched inside a module range
  double matched_kernel_s = 0;       // ... of a module of the model
  double unattributed_kernel_s = 0;  // total - attributed
  double no_launch_s = 0;            // unattributed: no launch call recorded for its correlation id
  double outside_modules_s = 0;      // unattributed: launched outside every module range
  double graph_kernel_s = 0;
  int graph_kernels = 0;
  // Kernels with no module range of their own given nodes by alignment (graph_alignment.hpp):
  // from graph launches, or steps of a compiled model that only the model's own range holds.
  int graph_aligned_kernels = 0, graph_aligned_launches = 0, graph_aligned_too_large = 0;
  int graph_aligned_root_steps = 0, graph_aligned_from_graphs = 0;
  double graph_aligned_s = 0, graph_aligned_matched_s = 0, graph_aligned_from_graphs_s = 0;
  IdleTime idle;  // host gaps over the whole timeline
  int steps = 1;
  std::string step_source;
  double step_kernel_s = 0, step_kernel_q1_s = 0, step_kernel_q3_s = 0;  // GPU time per step
  double step_wall_s = 0, step_idle_s = 0;  // median span and idle per step
  double predicted_s = 0;                   // the model, one step
  std::optional<double> efficiency;         // predicted / step_kernel_s
  std::vector<ModuleComparison>
      modules;  // every module with a prediction or a measurement, execution order
  std::vector<ModuleComparison> blocks;  // repeated layers folded, ranked by gap
  std::vector<std::pair<std::string, double>>
      unmatched_ranges;  // module-like ranges not in the model: kernel s
  std::vector<std::pair<std::string, double>>
      unmapped_instances;  // vanilla instances without a path: kernel s
  std::vector<std::string> notes;
  // The trust checks (trust_checks.hpp): what disagreed when --force compared anyway ("" when all
  // agreed), and the precision the kernels ran in where it is not the prediction's ("" when it is).
  std::string forced;
  std::string precision_mismatch;
  // Per trace activity (same order): its module row and step, -1 for none. Not in the JSON; the
  // Chrome trace places the prediction with them.
  std::vector<int> activity_row, activity_step;
};

struct CompareOptions {
  std::string timeline_path;
  int steps = 0;       // --steps
  bool force = false;  // --force: compare a timeline the trust checks refuse, marked as forced
  bool device_given = false;  // --device was passed: a trace of another GPU is refused, not noted
};

// InputError (exit 2) when the timeline cannot be compared: no GPU activity, no module range at
// all, most kernel time in modules the model does not have, or (without --force) a trust check
// says it is a run of another model, phase or device.
TimelineComparison compare_timeline(const Analysis& a, const Graph& g, const Trace& t,
                                    const CompareOptions& o);

// The analysis with its compare section.
Analysis with_comparison(Analysis a, TimelineComparison c);

}  // namespace rooflens::profiler
