// Loading and analyzing an ONNX file, with each open If's branch chosen by cost.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/onnx/loader.hpp"

namespace rooflens {
namespace {

// The Ifs the loader could not resolve: still one node, with their branches as attributes.
std::vector<std::string> open_ifs(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes)
    if (n.op_type == "If" && n.domain.empty()) names.push_back(n.name);
  return names;
}

struct BranchCost {
  double seconds = 0;
  int64_t flops = 0;
};

// What the nodes spliced in from one branch (named "<if>/then/...") predict.
BranchCost branch_cost(const Analysis& a, const std::string& prefix) {
  BranchCost c;
  for (const NodeResult& n : a.nodes)
    if (n.name.compare(0, prefix.size(), prefix) == 0 && n.status == NodeStatus::costed) {
      c.seconds += n.roof.predicted;
      c.flops += n.cost.flops;
    }
  return c;
}

std::string us(double s) {
  return fmt::format("{:.3g} us", s * 1e6);
}

// The graph `first` (loaded with `load`) reloaded with `if_choices` naming, for every If it
// leaves open, the branch whose nodes predict the longer time (ties: more FLOPs, then the then
// branch). Nested Ifs are chosen a level at a time. `first` as it is when no If is open.
Graph with_costlier_branches(const std::string& path, const LoadOptions& load,
                             const AnalysisOptions& options, Graph first) {
  LoadOptions chosen = load;
  Graph g = std::move(first);
  for (int level = 0; level < limits::kMaxFunctionDepth; ++level) {
    std::vector<std::string> open = open_ifs(g);
    if (open.empty()) break;
    LoadOptions then = chosen, other = chosen;
    then.if_branch = IfBranch::then_branch;
    other.if_branch = IfBranch::else_branch;
    // A branch that cannot be analyzed (its shapes do not fit the inputs given) is not taken.
    auto analyzed = [&](const LoadOptions& l) -> std::optional<Analysis> {
      try {
        return analyze_graph(load_onnx(path, l), options);
      } catch (const InputError&) {
        return std::nullopt;
      }
    };
    std::optional<Analysis> t = analyzed(then), e = analyzed(other);
    if (!t && !e) break;  // the Ifs stay open: not costed, and the report says so
    for (const std::string& name : open) {
      std::string why;
      bool take_else;
      if (t && e) {
        BranchCost ct = branch_cost(*t, name + "/then/"), ce = branch_cost(*e, name + "/else/");
        take_else = ce.seconds > ct.seconds || (ce.seconds == ct.seconds && ce.flops > ct.flops);
        why = fmt::format("the costlier: then {}, else {}; --if-branch names one", us(ct.seconds),
                          us(ce.seconds));
      } else {
        take_else = !t;
        why = fmt::format("the {} branch does not fit the inputs; --if-branch names one",
                          take_else ? "then" : "else");
      }
      chosen.if_choices[name] =
          IfChoice{take_else ? IfBranch::else_branch : IfBranch::then_branch, why};
    }
    g = load_onnx(path, chosen);
  }
  return g;
}

}  // namespace

Analysis analyze_onnx(const std::string& path, const LoadOptions& load,
                      const AnalysisOptions& options, Graph* inferred) {
  resolve_device(options);  // a bad --device fails before the model is read
  Graph g = load_onnx(path, load);
  // --if-branch resolves every If when the file is read; without it an open If is chosen here.
  if (!load.if_branch) g = with_costlier_branches(path, load, options, std::move(g));
  return analyze_graph(std::move(g), options, inferred);
}

}  // namespace rooflens
