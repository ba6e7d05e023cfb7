#pragma once
// Gives every tensor a concrete shape and dtype by running each node's rule in topological
// order, folding shape arithmetic on the way; marks static (pre-computable) tensors.
#include <string>
#include <vector>

#include "analyzer/graph.hpp"
#include "analyzer/rule_registry.hpp"

namespace rooflens {

struct InferenceResult {
  std::vector<std::string> unresolved;  // per node: why its outputs are unknown ("" if known)
  std::vector<bool> folded;             // per node: every output is static
};

InferenceResult infer_shapes(Graph& g, const RuleRegistry& rules);

}  // namespace rooflens
