#pragma once
// An If whose condition is not a constant, with no --if-branch: both branches costed, the costlier
// taken (docs/ops.md, Control flow). Never a zero for work that may run.
#include <string>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/onnx/load_options.hpp"

namespace rooflens {

// `load` with `if_choices` naming, for every If the file leaves open, the branch whose nodes
// predict the longer time (ties: more FLOPs, then the then branch). Nested Ifs are chosen a
// level at a time. Returns `load` unchanged when --if-branch is given or no If is open.
LoadOptions choose_costlier_branches(const std::string& path, const LoadOptions& load,
                                     const AnalysisOptions& options);

}  // namespace rooflens
