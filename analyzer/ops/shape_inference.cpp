#include "analyzer/ops/shape_inference.hpp"

#include <set>

namespace rooflens {
namespace {

bool is_random(const std::string& op) {
  static const std::set<std::string> ops{"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                         "RandomUniformLike", "Multinomial",   "Bernoulli"};
  return ops.count(op) > 0;
}

bool has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.kind == Attribute::Kind::graph) return true;
  return false;
}

}  // namespace

InferenceResult infer_shapes(Graph& g, const RuleRegistry& rules, const ForeignShapes& foreign) {
  InferenceResult r;
  r.unresolved.assign(g.nodes.size(), "");
  r.folded.assign(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    const OpRule* rule = rules.find(n.domain, n.op_type);
    if (has_subgraph(n)) {
      // The loader splices in an If or Loop it can resolve; one left here needs a flag.
      r.unresolved[i] =
          n.op_type == "If" ? "control flow: the condition is not a constant; --if-branch "
                              "then|else picks the branch"
          : n.op_type == "Loop"
              ? "control flow: the trip count is not a constant; --loop-trips N sets it"
          : n.op_type == "Scan"
              ? "control flow: the file does not state the scanned length; --loop-trips N sets it"
              : "control flow with a subgraph is not resolved";
    } else if (rule && rule->infer) {
      InferContext ctx(g, n);
      try {
        rule->infer(ctx);
      } catch (const NotInferable& e) {
        r.unresolved[i] = e.reason;
      }
    } else {
      r.unresolved[i] = "no rooflens rule for this op";
      if (foreign) foreign(g, n);  // outputs may still get shapes, so what follows is costed
    }
    bool outputs_known = true, values_known = true;
    for (int t : n.outputs) {
      if (t < 0) continue;
      outputs_known = outputs_known && g.tensors[t].shape.has_value();
      values_known = values_known && g.tensors[t].value.has_value();
    }
    if (!outputs_known && r.unresolved[i].empty()) r.unresolved[i] = "output shape unknown";
    bool inputs_static = !is_random(n.op_type) && !has_subgraph(n);
    for (int t : n.inputs)
      if (t >= 0 && !g.tensors[t].is_static) inputs_static = false;
    if (outputs_known && (inputs_static || values_known) && r.unresolved[i].empty()) {
      r.folded[i] = true;
      for (int t : n.outputs)
        if (t >= 0) g.tensors[t].is_static = true;
    }
  }
  return r;
}

}  // namespace rooflens
