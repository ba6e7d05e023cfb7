#include "profiler/timeline/timeline_attribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <unordered_map>

#include "analyzer/core/errors.hpp"
#include "profiler/trace/pytorch_trace.hpp"

namespace rooflens::profiler {

namespace {

using ThreadKey = std::pair<uint64_t, uint64_t>;  // (pid, tid)

// A dotted name of identifiers and numbers: what a module path looks like.
bool path_like(const std::string& s) {
  if (s.empty() || s.find('.') == std::string::npos) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return s.front() != '.' && s.back() != '.';
}

// A class name: the root range python/rooflens_annotate.py writes ("LlamaForCausalLM").
bool class_like(const std::string& s) {
  if (s.empty() || !std::isupper(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool is_graph_launch(const std::string& api) {
  return api.find("GraphLaunch") != std::string::npos;
}

// Rewrites annotated range names to the model's paths when they differ by a prefix (the run
// annotated `model.model` where the model file starts at the top, or the other way round).
struct PrefixRule {
  size_t strip = 0;  // leading components dropped
  std::string add;   // then this prefix added (with its dot)
  std::string apply(const std::string& name) const {
    std::string n = name;
    for (size_t k = 0; k < strip; ++k) {
      auto dot = n.find('.');
      if (dot == std::string::npos) return std::string("\x01");  // matches nothing
      n = n.substr(dot + 1);
    }
    return add + n;
  }
  bool identity() const { return strip == 0 && add.empty(); }
};

PrefixRule best_prefix_rule(const std::set<std::string>& names, const ModelModules& model,
                            std::vector<std::string> all_paths) {
  auto matches = [&](const PrefixRule& r) {
    int n = 0;
    for (const auto& name : names) n += model.has(r.apply(name));
    return n;
  };
  std::vector<PrefixRule> rules{{}, {1, ""}, {2, ""}};
  int tried = 0;
  for (const auto& name : names) {
    if (model.has(name) || ++tried > 20) continue;
    for (const auto& p : all_paths)
      if (p.size() > name.size() && p.compare(p.size() - name.size(), name.size(), name) == 0 &&
          p[p.size() - name.size() - 1] == '.') {
        rules.push_back({0, p.substr(0, p.size() - name.size())});
        break;
      }
  }
  PrefixRule best;
  int best_n = matches(best);
  for (const auto& r : rules)
    if (int n = matches(r); n > best_n) best = r, best_n = n;
  return best;
}

struct ResolvedRange {
  const NvtxRange* range;
  int module = -1;           // model module index; -1 none
  bool module_like = false;  // a module range (of the model or not)
  bool root_candidate = false;
};

}  // namespace

IdleTime idle_time(const Trace& t, const std::vector<ActivityPlace>& places,
                   const std::vector<size_t>& activities) {
  IdleTime idle;
  std::map<uint32_t, std::vector<size_t>> by_device;
  for (size_t i : activities) by_device[t.activities[i].device].push_back(i);
  for (auto& [device, list] : by_device) {
    std::sort(list.begin(), list.end(), [&](size_t x, size_t y) {
      return t.activities[x].start_ns < t.activities[y].start_ns;
    });
    uint64_t busy_end = 0;
    bool first = true;
    for (size_t i : list) {
      const GpuActivity& a = t.activities[i];
      if (!first && a.start_ns > busy_end) {
        double gap = static_cast<double>(a.start_ns - busy_end);
        const ApiCall* launch = places[i].launch;
        idle.total_s += gap * 1e-9;
        ++idle.gaps;
        if (launch && launch->end_ns > busy_end)
          idle.host_wait_s += gap * 1e-9;
        else if (gap < kKernelWaitThresholdNs)
          idle.kernel_wait_s += gap * 1e-9;
        else
          idle.other_s += gap * 1e-9;
      }
      busy_end = first ? a.end_ns : std::max(busy_end, a.end_ns);
      first = false;
    }
  }
  return idle;
}

namespace {

// The ranges of each thread nested once (HTA's call stack, built once and queried): each range's
// enclosing range, and which ranges run on which thread or, for start/end ranges, process.
struct RangeNesting {
  std::map<ThreadKey, std::vector<size_t>>
      thread_ranges;  // indices into the resolved ranges, nesting order
  std::map<uint64_t, std::vector<size_t>> process_ranges;  // start/end ranges (tid 0)
  std::vector<int> parent;  // enclosing range on its thread; -1 top-level
};

// Attribution in named steps; each fills its part of `out` from the steps before it.
class Attributor {
 public:
  Attributor(const Trace& t, const ModelModules& model) : t_(t), model_(model) {}

  // Which ranges are modules, and of which path.
  void resolve_ranges();
  // Nesting per thread; class-named ranges around mapped modules become the model's root.
  void nest_ranges();
  // Each GPU activity's launch and the innermost module range around that launch.
  void place_launches();
  // The iteration: a repeating top-level range, --steps equal runs, or the whole timeline.
  void find_steps(int steps_flag);
  // Each activity's step, and the GPU's idle time overall and per step.
  void assign_steps(int steps_flag);

  TimelineAttribution take() { return std::move(out_); }

 private:
  int module_id(const std::string& path) {
    auto [it, fresh] = module_index_.try_emplace(path, static_cast<int>(out_.modules.size()));
    if (fresh) out_.modules.push_back(path);
    return it->second;
  }
  bool nesting_order(size_t x, size_t y) const {
    const NvtxRange &a = *resolved_[x].range, &b = *resolved_[y].range;
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  }
  struct Owner {
    int module = -1;
    bool in_module_range = false;
    const NvtxRange* unmatched = nullptr;  // innermost module-like range not of the model
    const NvtxRange* unmapped = nullptr;   // innermost vanilla instance without a path
  };
  // chain: enclosing module-like ranges, outermost first.
  Owner describe(const std::vector<size_t>& chain) const;
  Owner owner_of(const ApiCall* c, const ThreadKey& key, std::vector<size_t>& stack,
                 const std::vector<size_t>& ranges, size_t& next) const;
  std::string iteration_group(int steps_flag);
  void equal_steps(int steps_flag);

  const Trace& t_;
  const ModelModules& model_;
  TimelineAttribution out_;
  std::map<std::string, int> module_index_;
  std::vector<ResolvedRange> resolved_;
  RangeNesting nesting_;
  std::set<const ApiCall*> used_;  // launches of the timeline's activities
  std::string best_group_;         // the repeating range that made the steps, if any
};

void Attributor::resolve_ranges() {
  std::vector<const NvtxRange*> vanilla;
  std::set<std::string> annotated_names;
  for (const auto& r : t_.ranges) {
    if (r.domain == kModuleDomain)
      vanilla.push_back(&r);
    else
      annotated_names.insert(r.name);
  }
  if (!vanilla.empty()) out_.instances = map_instances(vanilla, model_);
  std::vector<std::string> all_paths;
  for (const auto& name : annotated_names)
    if (path_like(name) && !model_.has(name)) {
      // Only collected when some name needs a rule; the model's paths are many.
      all_paths.clear();
      std::vector<std::string> stack{""};
      while (!stack.empty()) {
        std::string p = stack.back();
        stack.pop_back();
        all_paths.push_back(p);
        for (const auto& c : model_.find(p)->children) stack.push_back(c);
      }
      break;
    }
  PrefixRule rule =
      all_paths.empty() ? PrefixRule{} : best_prefix_rule(annotated_names, model_, all_paths);
  if (!rule.identity())
    out_.prefix_note = fmt::format(
        "range names matched to the model's paths with {} leading component(s) dropped{}",
        rule.strip, rule.add.empty() ? "" : fmt::format(" and '{}' added", rule.add));
  resolved_.reserve(t_.ranges.size());
  bool any_vanilla = false, any_annotated = false;
  for (const auto& r : t_.ranges) {
    ResolvedRange x{&r};
    if (r.domain == kModuleDomain) {
      x.module_like = true;
      any_vanilla = true;
      if (const std::string* path = out_.instances.path_of(r)) x.module = module_id(*path);
    } else {
      std::string path = rule.apply(r.name);
      if (model_.has(path) && !path.empty()) {
        x.module_like = true;
        x.module = module_id(path);
        any_annotated = true;
      } else if (path_like(r.name)) {
        x.module_like = true;
      } else if (class_like(r.name)) {
        x.root_candidate = true;
      }
    }
    if (x.module_like) ++out_.module_ranges;
    if (x.module >= 0) ++out_.mapped_ranges;
    resolved_.push_back(x);
  }
  out_.range_kind = any_vanilla && any_annotated ? "nn.Module calls and module-path ranges"
                    : any_vanilla                ? "nn.Module calls (vanilla PyTorch trace)"
                    : any_annotated              ? "module-path ranges (annotated)"
                                                 : "none";
}

void Attributor::nest_ranges() {
  for (size_t i = 0; i < resolved_.size(); ++i) {
    const NvtxRange& r = *resolved_[i].range;
    if (r.tid == 0)
      nesting_.process_ranges[r.pid].push_back(i);
    else
      nesting_.thread_ranges[{r.pid, r.tid}].push_back(i);
  }
  nesting_.parent.assign(resolved_.size(), -1);
  for (auto& [key, list] : nesting_.thread_ranges) {
    std::stable_sort(list.begin(), list.end(),
                     [this](size_t x, size_t y) { return nesting_order(x, y); });
    std::vector<size_t> stack;
    for (size_t i : list) {
      while (!stack.empty() && resolved_[stack.back()].range->end_ns < resolved_[i].range->end_ns)
        stack.pop_back();
      if (!stack.empty()) nesting_.parent[i] = static_cast<int>(stack.back());
      stack.push_back(i);
    }
  }
  int root_id = -1;
  for (size_t i = 0; i < resolved_.size(); ++i) {
    int parent = nesting_.parent[i];
    if (resolved_[i].module >= 0 && parent >= 0 &&
        resolved_[static_cast<size_t>(parent)].root_candidate) {
      ResolvedRange& root = resolved_[static_cast<size_t>(parent)];
      if (root.module < 0) {
        if (root_id < 0) root_id = module_id("");
        root.module = root_id;
        root.module_like = true;
        ++out_.module_ranges, ++out_.mapped_ranges;
      }
    }
  }
}

Attributor::Owner Attributor::describe(const std::vector<size_t>& chain) const {
  Owner o;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const ResolvedRange& r = resolved_[*it];
    o.in_module_range = true;
    if (r.module >= 0) {
      o.module = r.module;
      break;
    }
    if (r.range->domain == kModuleDomain) {
      if (!o.unmapped) o.unmapped = r.range;
    } else if (!o.unmatched) {
      o.unmatched = r.range;
    }
  }
  return o;
}

// The module-like ranges open on the call's thread when it started (`stack`, advanced through
// the thread's `ranges` from `next` as calls come in start order); else the start/end ranges of
// its process around it, the innermost (latest started) deciding.
Attributor::Owner Attributor::owner_of(const ApiCall* c, const ThreadKey& key,
                                       std::vector<size_t>& stack,
                                       const std::vector<size_t>& ranges, size_t& next) const {
  while (next < ranges.size() && resolved_[ranges[next]].range->start_ns <= c->start_ns) {
    size_t r = ranges[next++];
    while (!stack.empty() && resolved_[stack.back()].range->end_ns < resolved_[r].range->end_ns)
      stack.pop_back();
    stack.push_back(r);
  }
  while (!stack.empty() && resolved_[stack.back()].range->end_ns < c->start_ns) stack.pop_back();
  Owner o = describe(stack);
  if (o.in_module_range) return o;
  std::vector<size_t> around;
  if (auto pr = nesting_.process_ranges.find(key.first); pr != nesting_.process_ranges.end())
    for (size_t i : pr->second)
      if (resolved_[i].module_like && resolved_[i].range->start_ns <= c->start_ns &&
          resolved_[i].range->end_ns >= c->start_ns)
        around.push_back(i);
  std::sort(around.begin(), around.end(),
            [this](size_t x, size_t y) { return nesting_order(x, y); });
  return describe(around);
}

void Attributor::place_launches() {
  std::unordered_map<uint32_t, const ApiCall*> launch_of;
  for (const auto& c : t_.api_calls) launch_of.emplace(c.correlation_id, &c);
  std::map<ThreadKey, std::vector<const ApiCall*>> thread_calls;
  out_.places.resize(t_.activities.size());
  for (size_t i = 0; i < t_.activities.size(); ++i) {
    const GpuActivity& a = t_.activities[i];
    ActivityPlace& p = out_.places[i];
    auto it = launch_of.find(a.correlation_id);
    if (a.correlation_id != 0 && it != launch_of.end()) {
      p.launch = it->second;
      p.from_graph = a.graph_id != 0 || is_graph_launch(it->second->name);
      if (used_.insert(p.launch).second)
        thread_calls[{p.launch->pid, p.launch->tid}].push_back(p.launch);
    } else {
      p.from_graph = a.graph_id != 0;
    }
  }
  std::unordered_map<const ApiCall*, Owner> owner;
  for (auto& [key, calls] : thread_calls) {
    std::sort(calls.begin(), calls.end(),
              [](auto* x, auto* y) { return x->start_ns < y->start_ns; });
    std::vector<size_t> ranges;
    if (auto it = nesting_.thread_ranges.find(key); it != nesting_.thread_ranges.end())
      for (size_t i : it->second)
        if (resolved_[i].module_like) ranges.push_back(i);
    size_t next = 0;
    std::vector<size_t> stack;
    for (const ApiCall* c : calls) owner[c] = owner_of(c, key, stack, ranges, next);
  }
  for (size_t i = 0; i < t_.activities.size(); ++i) {
    ActivityPlace& p = out_.places[i];
    if (!p.launch) continue;
    const Owner& o = owner[p.launch];
    p.module = o.module;
    p.in_module_range = o.in_module_range;
    double s = seconds(t_.activities[i].start_ns, t_.activities[i].end_ns);
    if (o.module < 0 && o.unmatched) out_.unmatched_ranges_s[o.unmatched->name] += s;
    if (o.unmapped) out_.unmapped_instances_s[o.unmapped->name] += s;
  }
}

// Top-level ranges (no enclosing range on their thread), grouped by name with numbers folded
// ("ProfilerStep#*"); the group of disjoint occurrences holding the most launches is the
// iteration. "" when none repeats.
std::string Attributor::iteration_group(int steps_flag) {
  std::map<std::string, std::vector<const NvtxRange*>> groups;
  for (size_t i = 0; i < resolved_.size(); ++i)
    if (nesting_.parent[i] < 0 && resolved_[i].range->tid != 0) {
      // Numbers that count ("ProfilerStep#12", "LlamaForCausalLM_0") fold; "GPT2LMHeadModel" keeps
      // its 2.
      std::string key;
      const std::string& n = resolved_[i].range->name;
      for (size_t k = 0; k < n.size(); ++k) {
        bool digit = std::isdigit(static_cast<unsigned char>(n[k]));
        if (digit && k > 0 && std::string("#_. :").find(n[k - 1]) != std::string::npos) {
          while (k + 1 < n.size() && std::isdigit(static_cast<unsigned char>(n[k + 1]))) ++k;
          key += '*';
        } else {
          key += n[k];
        }
      }
      groups[key].push_back(resolved_[i].range);
    }
  std::vector<const ApiCall*> launches(used_.begin(), used_.end());
  std::sort(launches.begin(), launches.end(),
            [](auto* x, auto* y) { return x->start_ns < y->start_ns; });
  auto launches_inside = [&](const NvtxRange* r) {
    auto lo = std::lower_bound(launches.begin(), launches.end(), r->start_ns,
                               [](auto* c, uint64_t v) { return c->start_ns < v; });
    auto hi = std::upper_bound(launches.begin(), launches.end(), r->end_ns,
                               [](uint64_t v, auto* c) { return v < c->start_ns; });
    return static_cast<size_t>(hi - lo);
  };
  std::string best_group;
  size_t best_launches = 0;
  for (auto& [key, occ] : groups) {
    if (occ.size() < 2) continue;
    std::sort(occ.begin(), occ.end(), [](auto* x, auto* y) { return x->start_ns < y->start_ns; });
    bool disjoint = true;
    for (size_t k = 1; k < occ.size(); ++k) disjoint &= occ[k]->start_ns >= occ[k - 1]->end_ns;
    if (!disjoint) continue;
    size_t n = 0;
    for (auto* r : occ) n += launches_inside(r);
    if (n > best_launches ||
        (n == best_launches && !best_group.empty() && occ.size() > groups[best_group].size()))
      best_group = key, best_launches = n;
  }
  if (best_group.empty()) return best_group;
  auto& occ = groups[best_group];
  size_t first = 0;
  if (steps_flag > 0) {
    if (static_cast<size_t>(steps_flag) > occ.size())
      throw InputError(fmt::format("--steps {}: the timeline repeats '{}' only {} times",
                                   steps_flag, best_group, occ.size()));
    first = occ.size() - static_cast<size_t>(steps_flag);
  }
  for (size_t k = first; k < occ.size(); ++k)
    out_.steps.push_back({occ[k]->start_ns, occ[k]->end_ns});
  out_.step_source = fmt::format("repeating range '{}' ({} occurrences{})", best_group, occ.size(),
                                 first ? fmt::format(", the last {} taken", steps_flag) : "");
  return best_group;
}

// Nothing repeats: --steps N equal runs of activities in launch order.
void Attributor::equal_steps(int steps_flag) {
  std::vector<size_t> order(t_.activities.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto when = [&](size_t i) {
    return out_.places[i].launch ? out_.places[i].launch->start_ns : t_.activities[i].start_ns;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return when(x) < when(y); });
  size_t n = static_cast<size_t>(steps_flag);
  if (order.empty() || order.size() % n != 0)
    throw InputError(
        fmt::format("--steps {}: no range repeats in the timeline, and {} does not divide its {} "
                    "GPU activities into "
                    "equal steps",
                    steps_flag, steps_flag, order.size()));
  size_t per = order.size() / n;
  for (size_t k = 0; k < n; ++k) {
    uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
    for (size_t i = k * per; i < (k + 1) * per; ++i) {
      lo = std::min(lo, when(order[i]));
      hi = std::max(hi, when(order[i]));
      out_.places[order[i]].step = static_cast<int>(k);
    }
    out_.steps.push_back({lo, hi});
  }
  out_.step_source =
      fmt::format("--steps {}: {} activities each, in launch order", steps_flag, per);
  out_.steps_split = true;
}

void Attributor::find_steps(int steps_flag) {
  best_group_ = iteration_group(steps_flag);
  if (best_group_.empty() && steps_flag > 1) equal_steps(steps_flag);
  if (out_.steps.empty()) {
    uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
    for (const auto& a : t_.activities) lo = std::min(lo, a.start_ns), hi = std::max(hi, a.end_ns);
    out_.steps.push_back({lo, hi});
    out_.step_source = "the whole timeline (no repeating top-level range)";
  }
}

void Attributor::assign_steps(int steps_flag) {
  bool split_by_count = steps_flag > 1 && best_group_.empty();  // equal_steps placed them
  std::vector<std::vector<size_t>> step_members(out_.steps.size());
  std::vector<size_t> everything;
  for (size_t i = 0; i < t_.activities.size(); ++i) {
    everything.push_back(i);
    ActivityPlace& p = out_.places[i];
    if (!split_by_count) {
      uint64_t when = p.launch ? p.launch->start_ns : t_.activities[i].start_ns;
      auto it = std::upper_bound(out_.steps.begin(), out_.steps.end(), when,
                                 [](uint64_t v, const Step& s) { return v < s.start_ns; });
      if (it != out_.steps.begin() && when <= std::prev(it)->end_ns)
        p.step = static_cast<int>(std::prev(it) - out_.steps.begin());
      else if (out_.steps.size() == 1 && best_group_.empty())
        p.step = 0;
    }
    if (p.step >= 0) step_members[static_cast<size_t>(p.step)].push_back(i);
  }
  out_.idle = idle_time(t_, out_.places, everything);
  for (const auto& members : step_members)
    out_.step_idle.push_back(idle_time(t_, out_.places, members));
}

}  // namespace

TimelineAttribution attribute_timeline(const Trace& t, const ModelModules& model, int steps_flag) {
  Attributor a(t, model);
  a.resolve_ranges();
  a.nest_ranges();
  a.place_launches();
  a.find_steps(steps_flag);
  a.assign_steps(steps_flag);
  return a.take();
}

}  // namespace rooflens::profiler
