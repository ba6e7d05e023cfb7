#include "reports/profile_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>

#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

void write_profile_table(std::ostream& out, const Analysis& a, int top_n) {
  const ProfileSummary& p = *a.profile;
  fmt::print(out, "\nMeasured on {} ({} timing, L2 {}, SM clock {:.0f} MHz, {} roofs)\n", p.gpu, p.timing, p.l2, p.sm_clock_mhz,
             p.roofs);
  if (!p.timing_note.empty()) fmt::print(out, "  timing fallback: {}\n", p.timing_note);
  if (!p.valid) fmt::print(out, "  INVALID RUN: {}\n", p.invalid_reason);
  if (!p.complete) fmt::print(out, "  INCOMPLETE: interrupted before every layer ran\n");
  std::vector<const NodeResult*> rows;
  for (const auto& n : a.nodes)
    if (n.measured && n.measured->status == ReplayStatus::measured) rows.push_back(&n);
  std::stable_sort(rows.begin(), rows.end(), [](auto* x, auto* y) { return x->measured->time.median > y->measured->time.median; });
  if (static_cast<int>(rows.size()) > top_n) rows.resize(static_cast<size_t>(top_n));
  fmt::print(out, "{:<30} {:<12} {:>9} {:>9} {:>6} {:>7} {:>15} {:>3}\n", "node", "op", "predicted", "measured", "IQR%", "error",
             "class pred/meas", "k");
  for (const NodeResult* n : rows) {
    const Measurement& m = *n->measured;
    fmt::print(out, "{:<30} {:<12} {:>9} {:>9} {:>6.1f} {:>+6.0f}% {:>15} {:>3}\n", fit(n->name, 30), fit(n->op, 12),
               human_time(n->roof.predicted), human_time(m.time.median), 100 * m.time.spread(), 100 * m.error,
               fmt::format("{}/{}", bound_name(n->roof.bound), bound_name(m.measured_class)), m.kernels);
  }
  if (p.measured == 0) {
    fmt::print(out, "\nno layer was measured: no prediction error to report\n");
  } else {
    fmt::print(out, "\nPrediction error |predicted - measured| / measured, per layer\n{:<14} {:>6} {:>8} {:>8} {:>10} {:>10}\n",
               "class", "layers", "median", "p90", "predicted", "measured");
    for (const ClassError& c : p.classes)
      fmt::print(out, "{:<14} {:>6} {:>7.1f}% {:>7.1f}% {:>10} {:>10}\n", c.family, c.layers, 100 * c.median_abs, 100 * c.p90_abs,
                 human_time(c.predicted_s), human_time(c.measured_s));
    fmt::print(out, "{:<14} {:>6} {:>7.1f}% {:>7.1f}% {:>10} {:>10}  (model sum: {:+.1f}%)\n", "all", p.measured,
               100 * p.median_abs_error, 100 * p.p90_abs_error, human_time(p.predicted_s), human_time(p.measured_s), 100 * p.model_error);
  }
  fmt::print(out, "replay: {} measured, {} not replayed, {} skipped, {} without a kernel; {:.1f} s\n", p.measured, p.not_replayed,
             p.skipped, p.no_kernel, p.wall_s);
  std::map<std::string, int> reasons;
  for (const auto& n : a.nodes)
    if (n.measured && (n.measured->status == ReplayStatus::not_replayed || n.measured->status == ReplayStatus::skipped))
      ++reasons[fmt::format("{} {}: {}", replay_status_name(n.measured->status), n.op, n.measured->reason)];
  for (const auto& [r, count] : reasons) fmt::print(out, "  {} x{}\n", fit(r, 88), count);
}

json measurement_json(const Measurement& m) {
  json j{{"status", std::string(replay_status_name(m.status))}};
  if (m.status != ReplayStatus::measured) {
    j["reason"] = m.reason;
    if (!m.replay.empty()) j["replay"] = m.replay;
    return j;
  }
  j.update(json{{"replay", m.replay},
                {"library", m.library},
                {"algorithm", m.algorithm},
                {"choice", m.choice},
                {"median_s", m.time.median},
                {"q1_s", m.time.q1},
                {"q3_s", m.time.q3},
                {"min_s", m.time.min},
                {"max_s", m.time.max},
                {"samples", m.time.n},
                {"kernels", m.kernels},
                {"kernel_names", m.kernel_names},
                {"achieved_flops", m.achieved_flops},
                {"achieved_bytes_per_s", m.achieved_bytes_per_s},
                {"roof_fraction", m.roof_fraction},
                {"bound", std::string(bound_name(m.measured_class))},
                {"error", m.error}});
  return j;
}

json profile_json(const ProfileSummary& p) {
  json classes = json::array();
  for (const ClassError& c : p.classes)
    classes.push_back({{"family", c.family}, {"layers", c.layers}, {"median_abs_error", c.median_abs}, {"p90_abs_error", c.p90_abs},
                       {"time_weighted_error", c.time_weighted}, {"predicted_s", c.predicted_s}, {"measured_s", c.measured_s}});
  return json{{"gpu", p.gpu},
              {"timing", p.timing},
              {"timing_note", p.timing_note},
              {"l2", p.l2},
              {"roofs", p.roofs},
              {"sm_clock_mhz", p.sm_clock_mhz},
              {"valid", p.valid},
              {"invalid_reason", p.invalid_reason},
              {"complete", p.complete},
              {"dropped_records", p.dropped_records},
              {"measured", p.measured},
              {"not_replayed", p.not_replayed},
              {"skipped", p.skipped},
              {"no_kernel", p.no_kernel},
              {"predicted_s", p.predicted_s},
              {"measured_s", p.measured_s},
              {"model_error", p.model_error},
              {"median_abs_error", p.median_abs_error},
              {"p90_abs_error", p.p90_abs_error},
              {"time_weighted_error", p.time_weighted_error},
              {"classes", classes},
              {"cudnn", p.cudnn},
              {"wall_s", p.wall_s}};
}

}  // namespace rooflens::reports
