#pragma once
// Kernels with no module range of their own: a CUDA graph captured once and replayed, as every
// serving engine runs decode, records no module calls when it replays; a torch.compile'd model
// runs its compiled graph inside the model's own call, with no module calls either. Each such
// kernel is given the model node it most likely runs by aligning the kernels of one graph launch
// (or one step of a compiled model), in the order they ran, with the model's nodes in execution
// order, by kind (an Inductor kernel fusing an add into a layer norm lands on the norm's node,
// once): a GEMM node
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
  int root_steps = 0;     // steps whose kernels only the model's own range held, aligned
  int kernels = 0;
  double kernel_s = 0;    // the aligned kernels' time
  double matched_s = 0;   // of it, on a node of the kernel's own kind
  int too_large = 0;      // launches left unaligned: kernels x nodes past the table's limit
  int graph_kernels = 0;  // of the aligned kernels, those a graph launched, and their time
  double graph_s = 0;
};

// Aligns every graph launch whose kernels have no module (`places[i].from_graph`, module -1), and
// every step where the kernels of `root_module` (the model's own range, -1: none) are at least
// half the step's kernel time; `steps`: how many steps the places number.
GraphAlignment align_graph_kernels(const Trace& t, const std::vector<ActivityPlace>& places,
                                   const Analysis& a, int root_module, size_t steps);

}  // namespace rooflens::profiler
