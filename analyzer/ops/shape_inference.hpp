#pragma once
// Gives every tensor a concrete shape and dtype by running each node's rule in topological
// order, folding shape arithmetic on the way; marks static (pre-computable) tensors.
#include <functional>
#include <string>
#include <vector>

#include "analyzer/ir/graph.hpp"
#include "analyzer/ops/rule_registry.hpp"

namespace rooflens {

struct InferenceResult {
  std::vector<std::string> unresolved;  // per node: why its outputs are unknown ("" if known)
  std::vector<bool> folded;             // per node: every output is static
};

// Shapes for a node no rule covers, from the format it was loaded from (the ONNX library's
// inference for ONNX graphs): passed in, so that the op rules know no file format.
using ForeignShapes = std::function<bool(Graph&, Node&)>;

InferenceResult infer_shapes(Graph& g, const RuleRegistry& rules,
                             const ForeignShapes& foreign = {});

}  // namespace rooflens
