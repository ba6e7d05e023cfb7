#pragma once
// Peak activation memory: a liveness walk over the topological order. A tensor lives from its
// producer to its last consumer; views alias their input; graph inputs live from the start and
// graph outputs to the end. Static (pre-computed) tensors are weights, not activations.
#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/ir/graph.hpp"

namespace rooflens {

struct LiveTensor {
  int tensor;
  int64_t bytes;
};

struct MemoryPlan {
  int64_t peak_bytes = 0;
  int peak_node = -1;                    // node index where the peak happens
  std::vector<LiveTensor> live_at_peak;  // largest first
  std::vector<int64_t> live_bytes;       // per node: activation bytes alive while it runs
  int unknown_tensors = 0;               // activations whose shape is unknown (not counted)
};

// `is_view[i]`: node i's output 0 aliases its input 0. `float_override`: --dtype storage.
MemoryPlan plan_memory(const Graph& g, const std::vector<bool>& is_view,
                       std::optional<DType> float_override);

}  // namespace rooflens
