#include "profiler/timeline/module_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "analyzer/analysis/measurement.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/layer_names.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "profiler/timeline/graph_alignment.hpp"
#include "profiler/timeline/kernel_names.hpp"
#include "profiler/timeline/launch_frames.hpp"
#include "profiler/timeline/module_paths.hpp"
#include "profiler/timeline/trust_checks.hpp"

namespace rooflens::profiler {

namespace {

constexpr size_t kTopKernels = 5;

std::string us(double s) {
  return s >= 1e-3 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}
std::string mb(double bytes) {
  return fmt::format("{:.1f} MB", bytes / 1e6);
}

// What the timeline says about one module (or block), per step where it says "per step".
struct Measured {
  std::vector<double> time;     // per step
  std::vector<double> kernels;  // per step
  double total_s = 0;           // the whole timeline
  double copy_s = 0, graph_s = 0, aligned_s = 0,
         host_device_bytes = 0;  // summed over steps (divided by steps later)
  // Copy time by the Python function that launched it (with_stack traces), summed over steps.
  std::map<std::string, double> copy_frames;
  std::map<std::string, std::pair<double, double>> by_kernel;  // name -> (time, count), over steps
  std::vector<double> durations;                               // every kernel in a step
  explicit Measured(size_t steps = 1) : time(steps, 0), kernels(steps, 0) {}
  void add(const Measured& o) {
    for (size_t s = 0; s < time.size(); ++s) time[s] += o.time[s], kernels[s] += o.kernels[s];
    total_s += o.total_s;
    copy_s += o.copy_s, graph_s += o.graph_s, aligned_s += o.aligned_s;
    for (const auto& [f, v] : o.copy_frames) copy_frames[f] += v;
    host_device_bytes += o.host_device_bytes;
    for (const auto& [k, v] : o.by_kernel)
      by_kernel[k].first += v.first, by_kernel[k].second += v.second;
    durations.insert(durations.end(), o.durations.begin(), o.durations.end());
  }
};

struct Predicted {
  double time_s = 0;
  int nodes = 0, not_costed = 0;
  int64_t flops = 0, bytes = 0, kv_bytes = 0;
  void add(const Predicted& o) {
    time_s += o.time_s, nodes += o.nodes, not_costed += o.not_costed;
    flops += o.flops, bytes += o.bytes, kv_bytes += o.kv_bytes;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

std::vector<std::string> hints_for(const Predicted& p, const Measured& m,
                                   const ModuleComparison& row, size_t steps) {
  std::vector<std::string> h;
  double per = 1.0 / static_cast<double>(steps);
  double copy = m.copy_s * per, measured = row.measured_s, kernels = row.kernels;
  if (measured > 0 && p.nodes == 0)
    h.push_back(
        fmt::format("no node of the model predicts this work ({:.0f} kernels per step)", kernels));
  if (p.time_s > 0 && measured == 0 && m.total_s == 0)
    h.push_back("predicted, but no kernel ran in this module's range");
  if (measured > 0 && copy >= 0.25 * measured && copy >= 5e-6) {
    // The trace's own stacks name what launched the copies, where it has them.
    auto top = std::max_element(m.copy_frames.begin(), m.copy_frames.end(),
                                [](const auto& x, const auto& y) { return x.second < y.second; });
    if (top != m.copy_frames.end())
      h.push_back(fmt::format("copy kernels take {} of {} per step, {} of it launched from {}",
                              us(copy), us(measured), us(top->second * per), top->first));
    else if (p.kv_bytes > 0)
      h.push_back(
          fmt::format("copy kernels take {} of {} per step: KV cache concatenation copies the {} "
                      "cache every step",
                      us(copy), us(measured),
                      mb(static_cast<double>(p.kv_bytes) / std::max(1, row.instances))));
    else
      h.push_back(fmt::format("copy kernels take {} of {} per step ({:.0f}%)", us(copy),
                              us(measured), 100 * copy / measured));
  }
  double expected = static_cast<double>(p.nodes) / std::max(1, row.instances);
  double kernels_each = kernels / std::max(1, row.instances);
  if (p.nodes > 0 && kernels_each >= 3 && kernels_each >= 2 * expected)
    h.push_back(
        expected <= 1
            ? fmt::format("{:.0f} kernels where one fused kernel is predicted", kernels_each)
            : fmt::format("{:.0f} kernels where {:.0f} are predicted", kernels_each, expected));
  if (m.host_device_bytes > 0)
    h.push_back(fmt::format("host-device copies move {} per step", mb(m.host_device_bytes * per)));
  if (m.aligned_s > 0)
    h.push_back(
        "no module range of its own (a CUDA graph, a compiled model): placed here by aligning "
        "the kernels with the model's nodes in order");
  else if (m.graph_s > 0)
    h.push_back("launched from a CUDA graph: attributed to the range around the graph launch");
  if (row.efficiency && *row.efficiency < 0.5 && kernels >= 4 && !m.durations.empty()) {
    double typical = median(m.durations);
    if (typical < 5e-6)
      h.push_back(fmt::format("short kernels (median {}): launch-bound", us(typical)));
  }
  if (row.efficiency && *row.efficiency > 1.25)
    h.push_back("faster than predicted: the prediction is pessimistic here");
  return h;
}

// The row's per-step figures from its measurement and prediction.
void fill_row(ModuleComparison& row, const Predicted& p, const Measured& m, size_t steps) {
  std::vector<double> t = m.time;
  std::sort(t.begin(), t.end());
  row.nodes = p.nodes;
  row.predicted_s = p.time_s;
  row.measured_s = quantile(t, 0.5);
  row.measured_q1_s = quantile(t, 0.25);
  row.measured_q3_s = quantile(t, 0.75);
  row.measured_total_s = m.total_s;
  row.kernels = median(m.kernels);
  row.flops = p.flops;
  row.bytes = p.bytes;
  row.graph_s = m.graph_s / static_cast<double>(steps);
  if (row.measured_s > 0) row.efficiency = row.predicted_s / row.measured_s;
  row.gap_s = row.measured_s - row.predicted_s;
  std::vector<std::pair<std::string, std::pair<double, double>>> ks(m.by_kernel.begin(),
                                                                    m.by_kernel.end());
  std::sort(ks.begin(), ks.end(),
            [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  for (size_t i = 0; i < ks.size() && i < kTopKernels; ++i) {
    std::string name = demangle_kernel(ks[i].first);
    row.top_kernels.push_back({name, short_kernel_name(name),
                               ks[i].second.first / static_cast<double>(steps),
                               ks[i].second.second / static_cast<double>(steps)});
  }
  row.hints = hints_for(p, m, row, steps);
}

int count_kind(const Trace& t, GpuActivity::Kind k) {
  int n = 0;
  for (const auto& a : t.activities) n += a.kind == k;
  return n;
}

// Kernel time per module, per step, and the whole timeline's totals in `c`; refuses a timeline
// whose module time lies mostly in modules the model lacks (a trace of another model).
std::vector<Measured> measure_modules(const Trace& t, const TimelineAttribution& at,
                                      const Analysis& a, const std::string& name,
                                      TimelineComparison& c, std::vector<double>& step_kernel) {
  size_t steps = at.steps.size();
  std::vector<Measured> measured(at.modules.size(), Measured(steps));
  step_kernel.assign(steps, 0);
  LaunchFrames frames(t);
  for (size_t i = 0; i < t.activities.size(); ++i) {
    const GpuActivity& x = t.activities[i];
    const ActivityPlace& p = at.places[i];
    double s = seconds(x.start_ns, x.end_ns);
    c.total_kernel_s += s;
    if (p.from_graph) c.graph_kernel_s += s, ++c.graph_kernels;
    if (p.in_module_range)
      c.attributed_kernel_s += s;
    else if (!p.launch)
      c.no_launch_s += s;
    else
      c.outside_modules_s += s;
    if (p.step >= 0) step_kernel[static_cast<size_t>(p.step)] += s;
    if (p.module < 0) continue;
    c.matched_kernel_s += s;
    Measured& m = measured[static_cast<size_t>(p.module)];
    m.total_s += s;
    if (p.step < 0) continue;
    size_t step = static_cast<size_t>(p.step);
    m.time[step] += s;
    if (x.kind == GpuActivity::Kind::kernel) {
      m.kernels[step] += 1;
      m.durations.push_back(s);
    }
    auto& k = m.by_kernel[x.kind == GpuActivity::Kind::kernel   ? x.name
                          : x.kind == GpuActivity::Kind::memcpy ? "memcpy"
                                                                : "memset"];
    k.first += s, k.second += 1;
    if (is_copy_kernel(x.name) ||
        (x.kind == GpuActivity::Kind::memcpy && x.name.find("DtoD") != std::string::npos)) {
      m.copy_s += s;
      if (p.launch && !frames.empty())
        if (std::string f = frames.frame_of(*p.launch); !f.empty()) m.copy_frames[f] += s;
    }
    if (x.kind == GpuActivity::Kind::memcpy &&
        (x.name.find("HtoD") != std::string::npos || x.name.find("DtoH") != std::string::npos))
      m.host_device_bytes += static_cast<double>(x.bytes);
    if (p.from_graph) m.graph_s += s;
    if (p.aligned) m.aligned_s += s;
  }
  c.unattributed_kernel_s = c.total_kernel_s - c.attributed_kernel_s;
  double foreign = c.attributed_kernel_s - c.matched_kernel_s;
  if (c.matched_kernel_s < 0.5 * c.total_kernel_s && foreign > c.matched_kernel_s) {
    std::string example = at.unmatched_ranges_s.empty()
                              ? (at.instances.unmapped.empty() ? "" : at.instances.unmapped.front())
                              : at.unmatched_ranges_s.begin()->first;
    throw InputError(
        fmt::format("{}: model/trace mismatch: {:.0f}% of the kernel time is in modules {} does "
                    "not have (e.g. '{}'); is "
                    "the timeline a run of this model?",
                    name, 100 * foreign / c.total_kernel_s, a.model, example));
  }
  return measured;
}

// The prediction per module: each node goes to the innermost module the timeline measured.
std::map<std::string, Predicted> predict_modules(const Analysis& a, const Graph& g,
                                                 const ModelModules& model,
                                                 const TimelineAttribution& at,
                                                 TimelineComparison& c) {
  std::set<std::string> known(at.modules.begin(), at.modules.end());
  known.insert("");
  std::map<std::string, Predicted> predicted;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeResult& n = a.nodes[i];
    Predicted& p = predicted[*model.module_of(static_cast<int>(i), known)];
    if (n.status == NodeStatus::not_costed) ++p.not_costed;
    if (n.status != NodeStatus::costed) continue;
    ++p.nodes;
    p.time_s += n.roof.predicted;
    p.flops += n.cost.flops;
    p.bytes += n.cost.bytes();
    c.predicted_s += n.roof.predicted;
    if (n.index >= 0 && static_cast<size_t>(n.index) < g.nodes.size())
      for (int in : g.nodes[static_cast<size_t>(n.index)].inputs)
        if (in >= 0 && g.tensors[static_cast<size_t>(in)].is_kv_cache &&
            g.tensors[static_cast<size_t>(in)].shape)
          p.kv_bytes += storage_bytes(g.tensors[static_cast<size_t>(in)].dtype,
                                      g.tensors[static_cast<size_t>(in)].elements());
  }
  return predicted;
}

// Predicted and measured, side by side per module.
struct ModuleTimes {
  std::map<std::string, Predicted> predicted;
  std::vector<Measured> measured;
  std::map<std::string, int> measured_index;  // module path -> index into measured
  size_t steps = 0;

  Predicted predicted_of(const std::string& path) const {
    auto it = predicted.find(path);
    return it == predicted.end() ? Predicted{} : it->second;
  }
  Measured measured_of(const std::string& path) const {
    auto it = measured_index.find(path);
    return it == measured_index.end() ? Measured(steps) : measured[static_cast<size_t>(it->second)];
  }
};

// The rows in the model's execution order (depth first), each with its parent, children and
// subtree sums; returns the paths in that order.
std::vector<std::string> module_rows(const ModelModules& model, const TimelineAttribution& at,
                                     const ModuleTimes& times, TimelineComparison& c,
                                     std::map<std::string, size_t>& row_of) {
  std::map<std::string, size_t> dfs_order;
  std::function<void(const std::string&)> walk = [&](const std::string& p) {
    dfs_order.emplace(p, dfs_order.size());
    for (const auto& child : model.find(p)->children) walk(child);
  };
  walk("");
  std::set<std::string> paths{""};  // the model itself heads the tree
  for (const auto& [p, v] : times.predicted)
    if (v.nodes > 0 || v.not_costed > 0) paths.insert(p);
  for (size_t i = 0; i < at.modules.size(); ++i)
    if (times.measured[i].total_s > 0) paths.insert(at.modules[i]);
  std::vector<std::string> ordered(paths.begin(), paths.end());
  std::sort(ordered.begin(), ordered.end(),
            [&](const auto& x, const auto& y) { return dfs_order[x] < dfs_order[y]; });
  for (const auto& path : ordered) {
    ModuleComparison row;
    row.path = path;
    Predicted p = times.predicted_of(path);
    fill_row(row, p, times.measured_of(path), times.steps);
    if (p.not_costed > 0)
      row.hints.push_back(
          fmt::format("{} node(s) here not costed: the prediction is short", p.not_costed));
    row_of[path] = c.modules.size();
    c.modules.push_back(std::move(row));
  }
  for (auto& row : c.modules) {
    row.subtree_predicted_s += row.predicted_s;
    row.subtree_measured_s += row.measured_s;
    if (row.path.empty()) continue;
    for (std::string up = parent_path(row.path);; up = parent_path(up)) {
      if (auto it = row_of.find(up); it != row_of.end()) {
        if (row.parent.empty() && c.modules[it->second].path != row.path) {
          row.parent = up;
          c.modules[it->second].children.push_back(row.path);
        }
        c.modules[it->second].subtree_predicted_s += row.predicted_s;
        c.modules[it->second].subtree_measured_s += row.measured_s;
      }
      if (up.empty()) break;
    }
  }
  return ordered;
}

// Repeated layers folded into blocks, ranked by gap.
void block_rows(const std::vector<std::string>& ordered, const ModuleTimes& times,
                TimelineComparison& c) {
  std::map<std::string, std::pair<Predicted, Measured>> folded;
  std::map<std::string, int> instances;
  for (const auto& path : ordered) {
    std::string b = fold_layer_numbers(path);
    auto [it, fresh] = folded.try_emplace(b, Predicted{}, Measured(times.steps));
    if (times.predicted.count(path)) it->second.first.add(times.predicted.at(path));
    if (auto mi = times.measured_index.find(path); mi != times.measured_index.end())
      it->second.second.add(times.measured[static_cast<size_t>(mi->second)]);
    ++instances[b];
  }
  for (auto& [b, pm] : folded) {
    ModuleComparison row;
    row.path = b;
    row.instances = instances[b];
    fill_row(row, pm.first, pm.second, times.steps);
    c.blocks.push_back(std::move(row));
  }
  std::stable_sort(c.blocks.begin(), c.blocks.end(),
                   [](const auto& x, const auto& y) { return x.gap_s > y.gap_s; });
}

// The whole step: kernel time's median and quartiles, wall time, idle time, efficiency.
void step_figures(const Trace& t, const TimelineAttribution& at, std::vector<double> step_kernel,
                  TimelineComparison& c) {
  size_t steps = at.steps.size();
  std::vector<double> walls, idles;
  std::sort(step_kernel.begin(), step_kernel.end());
  c.step_kernel_s = quantile(step_kernel, 0.5);
  c.step_kernel_q1_s = quantile(step_kernel, 0.25);
  c.step_kernel_q3_s = quantile(step_kernel, 0.75);
  // A step lasts from its start on the host to the end of its last GPU activity.
  std::vector<uint64_t> step_end(steps, 0);
  for (size_t i = 0; i < t.activities.size(); ++i)
    if (at.places[i].step >= 0)
      step_end[static_cast<size_t>(at.places[i].step)] =
          std::max(step_end[static_cast<size_t>(at.places[i].step)], t.activities[i].end_ns);
  for (size_t s = 0; s < steps; ++s) {
    walls.push_back(seconds(at.steps[s].start_ns, std::max(at.steps[s].end_ns, step_end[s])));
    idles.push_back(at.step_idle[s].total_s);
  }
  c.step_wall_s = median(walls);
  c.step_idle_s = median(idles);
  if (c.step_kernel_s > 0) c.efficiency = c.predicted_s / c.step_kernel_s;
}

// Each activity's row and step, and the ranges and instances that matched nothing.
void activity_places(const Trace& t, const TimelineAttribution& at,
                     const std::map<std::string, size_t>& row_of, TimelineComparison& c) {
  c.activity_row.assign(t.activities.size(), -1);
  c.activity_step.assign(t.activities.size(), -1);
  for (size_t i = 0; i < t.activities.size(); ++i) {
    const ActivityPlace& p = at.places[i];
    c.activity_step[i] = p.step;
    if (p.module >= 0)
      if (auto it = row_of.find(at.modules[static_cast<size_t>(p.module)]); it != row_of.end())
        c.activity_row[i] = static_cast<int>(it->second);
  }
  for (const auto& [n, s] : at.unmatched_ranges_s) c.unmatched_ranges.emplace_back(n, s);
  for (const auto& [n, s] : at.unmapped_instances_s) c.unmapped_instances.emplace_back(n, s);
  auto by_time = [](const auto& x, const auto& y) { return x.second > y.second; };
  std::sort(c.unmatched_ranges.begin(), c.unmatched_ranges.end(), by_time);
  std::sort(c.unmapped_instances.begin(), c.unmapped_instances.end(), by_time);
}

void comparison_notes(const Analysis& a, const Trace& t, const TimelineAttribution& at,
                      TimelineComparison& c) {
  auto& notes = c.notes;
  if (!t.complete) notes.push_back("INCOMPLETE timeline: " + t.incomplete_reason);
  if (t.dropped > 0)
    notes.push_back(fmt::format(
        "CUPTI dropped {} records: kernel time is missing from the timeline", t.dropped));
  if (t.gpu.empty())
    notes.push_back("the timeline does not name its GPU");
  else if (auto d = device_for_gpu_name(t.gpu, 0); d && d->id != a.device.id)
    notes.push_back(
        fmt::format("recorded on {} ({}), predicted for {}: pass --device {} for predictions of "
                    "the GPU that ran it",
                    t.gpu, d->id, a.device.id, d->id));
  if (!at.prefix_note.empty()) notes.push_back(at.prefix_note);
  if (c.graph_aligned_kernels > 0) {
    std::string where =
        c.graph_aligned_launches > 0 && c.graph_aligned_root_steps > 0
            ? fmt::format("{} CUDA graph launch(es) and {} step(s) of a compiled model",
                          c.graph_aligned_launches, c.graph_aligned_root_steps)
        : c.graph_aligned_launches > 0
            ? fmt::format("{} CUDA graph launch(es)", c.graph_aligned_launches)
            : fmt::format(
                  "{} step(s) whose kernels only the model's own range holds (a "
                  "torch.compile'd model)",
                  c.graph_aligned_root_steps);
    notes.push_back(fmt::format(
        "{} kernels ({}) of {} ran with no module range of their own: each was given a node by "
        "aligning them with the model's nodes in execution order by kind (attribution by "
        "alignment, not by range; a fused kernel counts once, on one node); {:.1f}% of that time "
        "sits on a node of its own kind",
        c.graph_aligned_kernels, us(c.graph_aligned_s), where,
        c.graph_aligned_s > 0 ? 100 * c.graph_aligned_matched_s / c.graph_aligned_s : 0.0));
  }
  if (c.graph_aligned_too_large > 0)
    notes.push_back(
        fmt::format("{} CUDA graph launch(es) hold too many kernels to align with the "
                    "model's nodes: their kernels stay unattributed",
                    c.graph_aligned_too_large));
  if (c.graph_kernels > c.graph_aligned_from_graphs)
    notes.push_back(
        fmt::format("{} GPU activities ({}) ran from CUDA graphs: each is attributed to the module "
                    "range around its "
                    "graph launch, so module detail inside a graph is lost",
                    c.graph_kernels - c.graph_aligned_from_graphs,
                    us(c.graph_kernel_s - c.graph_aligned_from_graphs_s)));
  if (c.unattributed_kernel_s > 0.05 * c.total_kernel_s)
    notes.push_back(
        fmt::format("{:.1f}% of the kernel time is in no module range ({} with no launch call "
                    "recorded, {} launched "
                    "outside every module range)",
                    100 * c.unattributed_kernel_s / c.total_kernel_s, us(c.no_launch_s),
                    us(c.outside_modules_s)));
  if (!c.unmapped_instances.empty())
    notes.push_back(
        fmt::format("{} module instance(s) that launched work matched no module of the model (e.g. "
                    "{}); their kernels "
                    "count in the nearest matched module around them",
                    c.unmapped_instances.size(), c.unmapped_instances.front().first));
  if (!at.instances.folded.empty())
    notes.push_back(fmt::format(
        "{} module instance(s) have no node of their own: the export fused them into the "
        "convolution or linear beside them (e.g. {}), whose module counts their kernels",
        at.instances.folded.size(), at.instances.folded.front()));
  for (const auto& n : t.notes) notes.push_back(n);
}

// A timeline with GPU activity to compare, or InputError naming why not.
void require_activity(const Trace& t, const std::string& name) {
  auto called = [&](const char* api) {
    return std::any_of(t.api_calls.begin(), t.api_calls.end(),
                       [&](const ApiCall& c) { return c.name.find(api) != std::string::npos; });
  };
  if (t.activities.empty() && (called("BeginCapture") || called("GraphInstantiate")) &&
      !called("GraphLaunch"))
    throw InputError(
        fmt::format("{}: a CUDA graph was captured but never replayed (no cudaGraphLaunch) and "
                    "nothing else ran on the "
                    "GPU: record the replays, not only the capture",
                    name));
  if (t.activities.empty())
    throw InputError(fmt::format(
        "{}: no GPU activity (kernels, memcpys, memsets) in the timeline; a PyTorch trace needs "
        "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
        name));
}

// Graph kernels the alignment gave a node: placed in that node's innermost module path.
void place_aligned_kernels(const ModelModules& model, const GraphAlignment& aligned,
                           TimelineAttribution& at) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < at.modules.size(); ++i) index[at.modules[i]] = static_cast<int>(i);
  for (size_t i = 0; i < aligned.node.size(); ++i) {
    if (aligned.node[i] < 0) continue;
    const std::string& path = model.chain(aligned.node[i]).back();
    auto [it, fresh] = index.try_emplace(path, static_cast<int>(at.modules.size()));
    if (fresh) at.modules.push_back(path);
    at.places[i].module = it->second;
    at.places[i].in_module_range = true;
    at.places[i].aligned = true;
  }
}

}  // namespace

TimelineComparison compare_timeline(const Analysis& a, const Graph& g, const Trace& t,
                                    const CompareOptions& o) {
  const std::string& name = o.timeline_path;
  require_activity(t, name);
  ModelModules model(a, g);
  TimelineAttribution at = attribute_timeline(t, model, o.steps);
  std::vector<int> activity_step;
  for (const auto& p : at.places) activity_step.push_back(p.step);
  TrustFindings trust = check_trust(
      a, t, kernel_census(t, activity_step, static_cast<int>(at.steps.size()), !at.steps_split),
      {o.device_given});
  std::string disagreement;
  for (const auto& m : trust.mismatches) disagreement += (disagreement.empty() ? "" : "; ") + m;
  if (!disagreement.empty() && !o.force)
    throw InputError(
        fmt::format("{}: not a run of this model as predicted: {} (--force compares anyway)", name,
                    disagreement));
  int root = static_cast<int>(std::find(at.modules.begin(), at.modules.end(), std::string()) -
                              at.modules.begin());
  GraphAlignment aligned = align_graph_kernels(
      t, at.places, a, root < static_cast<int>(at.modules.size()) ? root : -1, at.steps.size());
  place_aligned_kernels(model, aligned, at);
  if (at.module_ranges == 0 && aligned.kernels == 0)
    throw InputError(fmt::format(
        "{}: no module ranges in the timeline, so its kernels cannot be split by module: record "
        "the "
        "PyTorch trace with with_stack=True, or annotate the run (python/rooflens_annotate.py, "
        "docs/compare.md)",
        name));

  TimelineComparison c;
  c.timeline = name;
  c.source = t.source;
  c.gpu = t.gpu;
  c.command = t.command;
  c.complete = t.complete;
  c.incomplete_reason = t.incomplete_reason;
  c.dropped_records = t.dropped;
  c.ranges = at.range_kind;
  c.graph_aligned_kernels = aligned.kernels;
  c.graph_aligned_s = aligned.kernel_s;
  c.graph_aligned_matched_s = aligned.matched_s;
  c.graph_aligned_launches = aligned.launches;
  c.graph_aligned_too_large = aligned.too_large;
  c.graph_aligned_root_steps = aligned.root_steps;
  c.graph_aligned_from_graphs = aligned.graph_kernels;
  c.graph_aligned_from_graphs_s = aligned.graph_s;
  if (aligned.kernels > 0)
    c.ranges = at.module_ranges == 0
                   ? std::string(
                         "none: CUDA graph kernels aligned with the model's nodes in "
                         "execution order")
                   : c.ranges + (aligned.root_steps > 0
                                     ? ", and a compiled model's kernels aligned by order"
                                     : ", and CUDA graph kernels aligned by order");
  c.kernels = count_kind(t, GpuActivity::Kind::kernel);
  c.memcpys = count_kind(t, GpuActivity::Kind::memcpy);
  c.memsets = count_kind(t, GpuActivity::Kind::memset);
  c.steps = static_cast<int>(at.steps.size());
  c.step_source = at.step_source;
  c.idle = at.idle;
  c.forced = disagreement;
  c.precision_mismatch = trust.precision;

  ModuleTimes times;
  times.steps = at.steps.size();
  std::vector<double> step_kernel;
  times.measured = measure_modules(t, at, a, name, c, step_kernel);
  times.predicted = predict_modules(a, g, model, at, c);
  for (size_t i = 0; i < at.modules.size(); ++i)
    times.measured_index[at.modules[i]] = static_cast<int>(i);
  std::map<std::string, size_t> row_of;
  std::vector<std::string> ordered = module_rows(model, at, times, c, row_of);
  block_rows(ordered, times, c);
  step_figures(t, at, std::move(step_kernel), c);
  activity_places(t, at, row_of, c);
  comparison_notes(a, t, at, c);
  return c;
}

Analysis with_comparison(Analysis a, TimelineComparison c) {
  a.comparison = std::make_shared<const TimelineComparison>(std::move(c));
  return a;
}

}  // namespace rooflens::profiler
