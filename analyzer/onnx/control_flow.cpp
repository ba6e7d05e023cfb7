// Control flow resolved when the graph is loaded (docs/ops.md, Control flow): an If's branch and a
// Loop's body, once per iteration, spliced in as plain nodes, so the rules cost the work inside.
#include "analyzer/onnx/control_flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"

namespace rooflens {
namespace {

class ControlFlow {
 public:
  ControlFlow(const SpliceTarget& t, const LoadOptions& o) : t_(t), o_(o) {}

  const onnx::GraphProto* graph_attr(const onnx::NodeProto& np, const char* name) const {
    for (const auto& a : np.attribute())
      if (a.name() == name && a.type() == onnx::AttributeProto::GRAPH) return &a.g();
    return nullptr;
  }

  // A subgraph's nodes under `prefix`: its own tensors renamed into the prefix, the names in
  // `bound` (its inputs and outputs) as given, every other name from the enclosing scope.
  void splice(const onnx::GraphProto& sg, const std::string& prefix,
              std::map<std::string, std::string> bound,
              const std::function<std::string(const std::string&)>& outer, int depth) {
    std::set<std::string> local;
    for (const auto& n : sg.node())
      for (const auto& o : n.output()) local.insert(o);
    for (const auto& init : sg.initializer()) {
      onnx::TensorProto copy = init;
      copy.set_name(prefix + init.name());
      t_.add_initializer(copy);
      local.insert(init.name());
    }
    for (const auto& n : sg.node())
      for (const auto* names : {&n.input(), &n.output()})
        for (const auto& x : *names)
          if (!x.empty() && !bound.count(x)) bound[x] = local.count(x) ? prefix + x : outer(x);
    for (const auto& n : sg.node()) t_.add_node(n, prefix, bound, depth + 1);
  }

  onnx::TensorProto scalar(const std::string& name, int data_type, int64_t v) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(data_type);
    if (data_type == onnx::TensorProto::BOOL)
      t.add_int32_data(static_cast<int32_t>(v));
    else
      t.add_int64_data(v);
    return t;
  }

  // If: the branch its condition names when that is a constant, else the one chosen for it by
  // name (analyze_onnx: the costlier), else the one --if-branch names; with none it stays one
  // node, not costed (never a zero for work that runs).
  bool splice_if(const onnx::NodeProto& np, const std::string& node_name,
                 const std::function<std::string(const std::string&)>& outer, int depth) {
    if (np.input_size() < 1) return false;
    std::optional<bool> then;
    std::string why;
    if (auto c = t_.constant_of(outer(np.input(0))); c && c->size() == 1) {
      then = c->int_at(0) != 0;
      why = "its condition is a constant";
    } else if (auto chosen = o_.if_choices.find(node_name); chosen != o_.if_choices.end()) {
      then = chosen->second.branch == IfBranch::then_branch;
      why = chosen->second.why;
    } else if (o_.if_branch) {
      then = *o_.if_branch == IfBranch::then_branch;
      why = "--if-branch";
    } else {
      return false;
    }
    const onnx::GraphProto* branch = graph_attr(np, *then ? "then_branch" : "else_branch");
    if (!branch || branch->output_size() != np.output_size()) return false;
    std::vector<std::string> targets;
    for (int i = 0; i < np.output_size(); ++i) targets.push_back(outer(np.output(i)));
    splice_outputs(*branch, node_name + (*then ? "/then/" : "/else/"), {}, targets, outer, depth);
    t_.note(fmt::format("If '{}': the {} branch is costed ({})", node_name, *then ? "then" : "else",
                        why));
    return true;
  }

  // A subgraph spliced in with its inputs bound to `inputs` and its outputs written to `targets`;
  // an output it passes through from outside (or from an input) gets an Identity of its own.
  void splice_outputs(const onnx::GraphProto& sg, const std::string& prefix,
                      const std::map<std::string, std::string>& inputs,
                      const std::vector<std::string>& targets,
                      const std::function<std::string(const std::string&)>& outer, int depth) {
    std::set<std::string> produced, initialized;
    for (const auto& n : sg.node())
      for (const auto& o : n.output()) produced.insert(o);
    for (const auto& init : sg.initializer()) initialized.insert(init.name());
    std::map<std::string, std::string> bound = inputs;
    std::vector<std::pair<std::string, std::string>> passthrough;  // source, target
    for (int i = 0; i < sg.output_size(); ++i) {
      const std::string& o = sg.output(i).name();
      if (produced.count(o))
        bound[o] = targets[i];
      else
        passthrough.emplace_back(inputs.count(o)        ? inputs.at(o)
                                 : initialized.count(o) ? prefix + o
                                                        : outer(o),
                                 targets[i]);
    }
    splice(sg, prefix, bound, outer, depth);
    for (size_t i = 0; i < passthrough.size(); ++i) {
      onnx::NodeProto id;
      id.set_op_type("Identity");
      id.set_name(fmt::format("pass_{}", i));
      id.add_input(passthrough[i].first);
      id.add_output(passthrough[i].second);
      t_.add_node(id, prefix,
                  {{passthrough[i].first, passthrough[i].first},
                   {passthrough[i].second, passthrough[i].second}},
                  depth + 1);
    }
  }

  // Loop: the body spliced in once per iteration, the trip count from a constant M or
  // --loop-trips (the condition is taken to stay true); loop-carried values chained from one
  // iteration to the next, scan outputs stacked (an Unsqueeze and a Concat, as the runtime copies
  // them). Without a trip count it stays one node, not costed.
  bool splice_loop(const onnx::NodeProto& np, const std::string& node_name,
                   const std::function<std::string(const std::string&)>& outer, int depth) {
    const onnx::GraphProto* body = graph_attr(np, "body");
    if (!body || np.input_size() < 2 || body->input_size() < 2 || body->output_size() < 1)
      return false;
    int carried = np.input_size() - 2;
    int scans = body->output_size() - 1 - carried;
    if (carried < 0 || scans < 0 || body->input_size() != 2 + carried ||
        np.output_size() != carried + scans)
      return false;
    std::optional<int64_t> trips;
    std::string why;
    if (auto m = t_.constant_of(outer(np.input(0))); m && m->size() == 1) {
      trips = m->int_at(0);
      why = "a constant trip count";
    } else if (o_.loop_trips) {
      trips = *o_.loop_trips;
      why = "--loop-trips";
    } else {
      return false;
    }
    if (*trips < 1) return false;
    check_unrolled_size("Loop", node_name, *trips, body->node_size() + 2 * scans);
    std::vector<std::string> state(static_cast<size_t>(carried));
    for (int j = 0; j < carried; ++j) state[j] = outer(np.input(2 + j));
    std::string cond = np.input(1).empty() ? "" : outer(np.input(1));
    std::vector<std::vector<std::string>> stacked(static_cast<size_t>(scans));
    for (int64_t k = 0; k < *trips; ++k) {
      std::string prefix = fmt::format("{}/iter_{}/", node_name, k);
      std::map<std::string, std::string> bound;
      std::string iter = prefix + "iteration";
      t_.add_initializer(scalar(iter, onnx::TensorProto::INT64, k));
      bound[body->input(0).name()] = iter;
      if (cond.empty()) {
        cond = prefix + "condition";
        t_.add_initializer(scalar(cond, onnx::TensorProto::BOOL, 1));
      }
      bound[body->input(1).name()] = cond;
      for (int j = 0; j < carried; ++j) bound[body->input(2 + j).name()] = state[j];
      std::vector<std::string> outs;
      for (int i = 0; i < body->output_size(); ++i) {
        bool last_state = k + 1 == *trips && i >= 1 && i <= carried;
        outs.push_back(last_state ? outer(np.output(i - 1)) : fmt::format("{}out_{}", prefix, i));
      }
      splice_outputs(*body, prefix, bound, outs, outer, depth);
      cond = outs[0];
      for (int j = 0; j < carried; ++j) state[j] = outs[1 + j];
      for (int s = 0; s < scans; ++s) stacked[s].push_back(outs[1 + carried + s]);
    }
    for (int s = 0; s < scans; ++s)
      stack(node_name, s, stacked[s], 0, outer(np.output(carried + s)), depth);
    t_.note(
        fmt::format("Loop '{}': its body costed {} times ({}; the condition is taken to stay true)",
                    node_name, *trips, why));
    return true;
  }

  void check_unrolled_size(const char* op, const std::string& node_name, int64_t trips,
                           int64_t nodes_per_trip) {
    if (trips > o_.max_nodes / std::max<int64_t>(1, nodes_per_trip))
      throw InputError(fmt::format("{}: {} '{}' unrolled {} times exceeds the limit of {} nodes",
                                   t_.path, op, node_name, trips, o_.max_nodes));
  }

  // The per-iteration values `rows` stacked into `target` along `axis` (an Unsqueeze of each and
  // one Concat): the copy a runtime makes of a Loop's or Scan's scan outputs.
  void stack(const std::string& node_name, int s, const std::vector<std::string>& rows,
             int64_t axis, const std::string& target, int depth) {
    std::string axes = fmt::format("{}/stack_{}/axes", node_name, s);
    onnx::TensorProto a;
    a.set_name(axes);
    a.set_data_type(onnx::TensorProto::INT64);
    a.add_dims(1);
    a.add_int64_data(axis);
    t_.add_initializer(a);
    onnx::NodeProto concat;
    concat.set_op_type("Concat");
    concat.set_name(fmt::format("{}/stack_{}", node_name, s));
    auto* ax = concat.add_attribute();
    ax->set_name("axis");
    ax->set_type(onnx::AttributeProto::INT);
    ax->set_i(axis);
    std::map<std::string, std::string> names;
    for (size_t k = 0; k < rows.size(); ++k) {
      onnx::NodeProto u;
      u.set_op_type("Unsqueeze");
      u.set_name(fmt::format("{}/stack_{}/unsqueeze_{}", node_name, s, k));
      u.add_input(rows[k]);
      u.add_input(axes);
      std::string row = fmt::format("{}/stack_{}/row_{}", node_name, s, k);
      u.add_output(row);
      t_.add_node(u, "", {{rows[k], rows[k]}, {axes, axes}, {row, row}}, depth + 1);
      concat.add_input(row);
      names[row] = row;
    }
    concat.add_output(target);
    names[target] = target;
    t_.add_node(concat, "", names, depth + 1);
  }

  std::vector<int64_t> ints_attr(const onnx::NodeProto& np, const char* name, size_t n) const {
    for (const auto& a : np.attribute())
      if (a.name() == name && a.type() == onnx::AttributeProto::INTS)
        return {a.ints().begin(), a.ints().end()};
    return std::vector<int64_t>(n, 0);
  }

  // Scan (opset 9+): the body spliced in once per step along the scanned axis, each step's slice
  // of every scan input taken by a Gather (a runtime that copies the slice; ONNX Runtime takes
  // axis 0 as a view), state chained like a Loop's, scan outputs stacked along their axes. The
  // length is the scanned axis of the first scan input when the file states it (a graph input,
  // an initializer or value_info), else --loop-trips; without either it stays one node.
  bool splice_scan(const onnx::NodeProto& np, const std::string& node_name,
                   const std::function<std::string(const std::string&)>& outer, int depth) {
    const onnx::GraphProto* body = graph_attr(np, "body");
    int64_t m = -1;
    for (const auto& a : np.attribute())
      if (a.name() == "num_scan_inputs" && a.type() == onnx::AttributeProto::INT) m = a.i();
    if (!body || m < 1 || m > np.input_size()) return false;
    int states = np.input_size() - static_cast<int>(m);
    int scans = body->output_size() - states;
    if (body->input_size() != np.input_size() || scans < 0 || np.output_size() != states + scans)
      return false;
    auto in_axes = ints_attr(np, "scan_input_axes", static_cast<size_t>(m));
    auto in_dirs = ints_attr(np, "scan_input_directions", static_cast<size_t>(m));
    auto out_axes = ints_attr(np, "scan_output_axes", static_cast<size_t>(scans));
    auto out_dirs = ints_attr(np, "scan_output_directions", static_cast<size_t>(scans));
    if (in_axes.size() != static_cast<size_t>(m) || in_dirs.size() != static_cast<size_t>(m) ||
        out_axes.size() != static_cast<size_t>(scans) ||
        out_dirs.size() != static_cast<size_t>(scans))
      return false;
    std::vector<int64_t> axis(static_cast<size_t>(m));
    std::optional<int64_t> length;
    for (int64_t j = 0; j < m; ++j) {
      auto shape = t_.shape_of(outer(np.input(states + static_cast<int>(j))));
      if (!shape) {  // the axis as given: a negative one needs the rank
        if (in_axes[j] < 0) return false;
        axis[j] = in_axes[j];
        continue;
      }
      int64_t rank = static_cast<int64_t>(shape->size());
      int64_t a = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
      if (a < 0 || a >= rank)
        throw InputError(fmt::format("{}: Scan '{}': scan_input_axes[{}] = {} is outside rank {}",
                                     t_.path, node_name, j, in_axes[j], rank));
      axis[j] = a;
      if (length && *length != (*shape)[a])
        throw InputError(
            fmt::format("{}: Scan '{}': its scan inputs disagree on the scanned length ({} and {})",
                        t_.path, node_name, *length, (*shape)[a]));
      length = (*shape)[a];
    }
    std::string why = "the scan inputs' stated length";
    if (!length) {
      if (!o_.loop_trips) return false;
      length = *o_.loop_trips;
      why = "--loop-trips";
    }
    if (*length < 1) return false;
    check_unrolled_size("Scan", node_name, *length, body->node_size() + m + 2 * scans);
    std::vector<std::string> state(static_cast<size_t>(states));
    for (int j = 0; j < states; ++j) state[j] = outer(np.input(j));
    std::vector<std::vector<std::string>> stacked(static_cast<size_t>(scans));
    for (int64_t k = 0; k < *length; ++k) {
      std::string prefix = fmt::format("{}/iter_{}/", node_name, k);
      std::map<std::string, std::string> bound;
      for (int j = 0; j < states; ++j) bound[body->input(j).name()] = state[j];
      for (int64_t j = 0; j < m; ++j) {
        std::string index = fmt::format("{}slice_{}_index", prefix, j);
        t_.add_initializer(
            scalar(index, onnx::TensorProto::INT64, in_dirs[j] != 0 ? *length - 1 - k : k));
        std::string source = outer(np.input(states + static_cast<int>(j)));
        std::string slice = fmt::format("{}slice_{}", prefix, j);
        onnx::NodeProto g;
        g.set_op_type("Gather");
        g.set_name(fmt::format("slice_{}", j));
        g.add_input(source);
        g.add_input(index);
        g.add_output(slice);
        auto* ax = g.add_attribute();
        ax->set_name("axis");
        ax->set_type(onnx::AttributeProto::INT);
        ax->set_i(axis[j]);
        t_.add_node(g, prefix, {{source, source}, {index, index}, {slice, slice}}, depth + 1);
        bound[body->input(states + static_cast<int>(j)).name()] = slice;
      }
      std::vector<std::string> outs;
      for (int i = 0; i < body->output_size(); ++i) {
        bool last_state = k + 1 == *length && i < states;
        outs.push_back(last_state ? outer(np.output(i)) : fmt::format("{}out_{}", prefix, i));
      }
      splice_outputs(*body, prefix, bound, outs, outer, depth);
      for (int j = 0; j < states; ++j) state[j] = outs[j];
      for (int s = 0; s < scans; ++s) stacked[s].push_back(outs[states + s]);
    }
    for (int s = 0; s < scans; ++s) {
      if (out_dirs[s] != 0) std::reverse(stacked[s].begin(), stacked[s].end());
      stack(node_name, s, stacked[s], out_axes[s], outer(np.output(states + s)), depth);
    }
    t_.note(fmt::format("Scan '{}': its body costed {} times ({})", node_name, *length, why));
    return true;
  }

 private:
  const SpliceTarget& t_;
  const LoadOptions& o_;
};

}  // namespace

bool splice_control_flow(const SpliceTarget& t, const LoadOptions& o, const onnx::NodeProto& np,
                         const std::string& node_name, const NameMap& outer, int depth) {
  ControlFlow cf(t, o);
  if (np.op_type() == "If") return cf.splice_if(np, node_name, outer, depth);
  if (np.op_type() == "Loop") return cf.splice_loop(np, node_name, outer, depth);
  if (np.op_type() == "Scan") return cf.splice_scan(np, node_name, outer, depth);
  return false;
}

}  // namespace rooflens
