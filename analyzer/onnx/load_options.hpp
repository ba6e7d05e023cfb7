#pragma once
// How an ONNX file is read (the loader's and the control-flow splicer's options).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "analyzer/core/limits.hpp"

namespace rooflens {

enum class IfBranch { then_branch, else_branch };

// The branch one If takes, and why (for the graph's note).
struct IfChoice {
  IfBranch branch = IfBranch::then_branch;
  std::string why;
};

struct LoadOptions {
  std::map<std::string, int64_t> dims;  // --dim NAME=VALUE, binds symbolic input dims
  int64_t bind_unbound_dims = 0;  // > 0: every unbound or unnamed input dim takes this (fuzzing)
  // --batch N: dim 0 of every input becomes N; every input must lead with the same dim (one
  // symbolic name, or one size), else InputError. The graph's notes say what was rewritten.
  std::optional<int64_t> batch;
  // Control flow: an If whose condition is not a constant takes the branch `if_choices` names for
  // it (by its node name; analyze_onnx fills it with each If's costlier branch), else this one
  // (--if-branch); a Loop whose trip count is not a constant, or a Scan whose scanned length is
  // not known when the file is read, runs this many times (--loop-trips). Without them such a
  // node stays one node, not costed.
  std::optional<IfBranch> if_branch;
  std::map<std::string, IfChoice> if_choices;
  std::optional<int64_t> loop_trips;
  // Nodes allowed after inlining functions and unrolling loops. The fuzzer lowers it: its inputs
  // are a few KiB, and a graph that size under ASan tests nothing the limit's own error does not.
  int64_t max_nodes = limits::kMaxNodes;
};

}  // namespace rooflens
