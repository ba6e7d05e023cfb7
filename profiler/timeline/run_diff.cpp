#include "profiler/timeline/run_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace rooflens::profiler {
namespace {

std::string longest_kernel(const ModuleComparison& m) {
  return m.top_kernels.empty() ? std::string() : m.top_kernels.front().short_name;
}

}  // namespace

RunDiff diff_runs(const TimelineComparison& before, const TimelineComparison& after,
                  bool by_block) {
  RunDiff d;
  d.before = before.timeline;
  d.after = after.timeline;
  d.step_before_s = before.step_kernel_s;
  d.step_after_s = after.step_kernel_s;
  d.wall_before_s = before.step_wall_s;
  d.wall_after_s = after.step_wall_s;
  d.predicted_s = before.predicted_s;
  const auto& rows_before = by_block ? before.blocks : before.modules;
  const auto& rows_after = by_block ? after.blocks : after.modules;
  std::map<std::string, size_t> index;
  auto row = [&](const ModuleComparison& m) -> ModuleChange& {
    auto [it, fresh] = index.try_emplace(m.path, d.modules.size());
    if (fresh) {
      d.modules.emplace_back();
      d.modules.back().path = m.path;
      d.modules.back().instances = m.instances;
    }
    return d.modules[it->second];
  };
  for (const ModuleComparison& m : rows_before) {
    ModuleChange& c = row(m);
    c.before_s = m.measured_s;
    c.kernels_before = m.kernels;
    c.top_before = longest_kernel(m);
  }
  for (const ModuleComparison& m : rows_after) {
    ModuleChange& c = row(m);
    c.after_s = m.measured_s;
    c.kernels_after = m.kernels;
    c.top_after = longest_kernel(m);
  }
  d.modules.erase(
      std::remove_if(d.modules.begin(), d.modules.end(),
                     [](const ModuleChange& c) { return c.before_s == 0 && c.after_s == 0; }),
      d.modules.end());
  std::stable_sort(d.modules.begin(), d.modules.end(),
                   [](const ModuleChange& x, const ModuleChange& y) {
                     return std::abs(x.change_s()) > std::abs(y.change_s());
                   });
  if (before.ranges != after.ranges)
    d.notes.push_back(fmt::format(
        "the two timelines were attributed differently (before: {}; after: {}): a row one side "
        "measures by module and the other by node does not pair; the totals and the rows both "
        "sides measure do",
        before.ranges, after.ranges));
  for (const auto* c : {&before, &after})
    if (c->matched_kernel_s < 0.95 * c->total_kernel_s)
      d.notes.push_back(
          fmt::format("{}: {:.1f}% of its kernel time is in no module of the model; the rows "
                      "leave it out",
                      c->timeline, 100 * (1 - c->matched_kernel_s / c->total_kernel_s)));
  if (before.gpu != after.gpu)
    d.notes.push_back(
        fmt::format("the runs are of different GPUs: {} and {}", before.gpu, after.gpu));
  return d;
}

}  // namespace rooflens::profiler
