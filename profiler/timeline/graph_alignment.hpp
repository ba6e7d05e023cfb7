#pragma once
// Kernels a CUDA graph launched with no module range around them: a graph captured once and
// replayed, as every serving engine runs decode, records no module calls when it replays. Each
// such kernel is given the model node it most likely runs by aligning the kernels of one graph
// launch, in the order they ran, with the model's nodes in execution order, by kind: a GEMM node
// takes matrix kernels, a norm the element-wise and reduction kernels eager PyTorch writes it as,
// attention its fused kernel. The alignment is the cheapest monotone assignment (dynamic
// programming): a kernel of another kind than its node costs, a node that gets no kernel costs
// (a matrix node most), a second matrix kernel on one matrix node costs. The report says the
// attribution is by alignment and how much kernel time sits on a node of its own kind.
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/timeline/timeline_attribution.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

struct GraphAlignment {
  std::vector<int> node;  // per trace activity: the analysis node it was aligned to, or -1
  int launches = 0;       // graph launches aligned
  int kernels = 0;
  double kernel_s = 0;   // the aligned kernels' time
  double matched_s = 0;  // of it, on a node of the kernel's own kind
  int too_large = 0;     // launches left unaligned: kernels x nodes past the table's limit
};

// Aligns every graph launch whose kernels have no module (`places[i].from_graph`, module -1).
GraphAlignment align_graph_kernels(const Trace& t, const std::vector<ActivityPlace>& places,
                                   const Analysis& a);

}  // namespace rooflens::profiler
