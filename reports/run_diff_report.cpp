#include "reports/run_diff_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

json run_diff_json(const profiler::RunDiff& d) {
  json rows = json::array();
  for (const auto& m : d.modules)
    rows.push_back({{"path", m.path},
                    {"instances", m.instances},
                    {"before_s", m.before_s},
                    {"after_s", m.after_s},
                    {"change_s", m.change_s()},
                    {"kernels_before", m.kernels_before},
                    {"kernels_after", m.kernels_after},
                    {"top_kernel_before", m.top_before},
                    {"top_kernel_after", m.top_after}});
  return {
      {"before",
       {{"timeline", d.before}, {"step_s", d.step_before_s}, {"wall_s", d.wall_before_s}}},
      {"after", {{"timeline", d.after}, {"step_s", d.step_after_s}, {"wall_s", d.wall_after_s}}},
      {"predicted_s", d.predicted_s},
      {"modules", rows},
      {"notes", d.notes}};
}

namespace {

std::string signed_time(double s) {
  return (s > 0 ? "+" : s < 0 ? "-" : "") + human_time(std::abs(s));
}

std::string percent_change(double before, double after) {
  if (before <= 0) return after > 0 ? "new" : "-";
  if (after <= 0) return "gone";
  return fmt::format("{:+.0f}%", 100 * (after / before - 1));
}

}  // namespace

void write_run_diff(std::ostream& out, const json& d, int top_n, size_t width) {
  const json &b = d.at("before"), &a = d.at("after");
  double sb = b.at("step_s").get<double>(), sa = a.at("step_s").get<double>();
  out << wrap("before   ", fit(b.at("timeline").get<std::string>(), width - 9), width)
      << wrap("after    ", fit(a.at("timeline").get<std::string>(), width - 9), width)
      << wrap("per step ",
              fmt::format("GPU busy {} -> {} ({}, {}); wall {} -> {}; predicted {}", human_time(sb),
                          human_time(sa), signed_time(sa - sb), percent_change(sb, sa),
                          human_time(b.at("wall_s").get<double>()),
                          human_time(a.at("wall_s").get<double>()),
                          human_time(d.at("predicted_s").get<double>())),
              width);
  const json& rows = d.at("modules");
  size_t name = width >= 100 ? 44 : 30;
  fmt::print(out, "\nModules by change, per step (own kernels), top {} of {}\n",
             std::min<size_t>(static_cast<size_t>(top_n), rows.size()), rows.size());
  fmt::print(out, "{:<{}} {:>9} {:>9} {:>10} {:>6} {:>9}\n", "module", name, "before", "after",
             "change", "", "kernels");
  int shown = 0;
  for (const auto& r : rows) {
    if (shown++ >= top_n) break;
    double before = r.at("before_s").get<double>(), after = r.at("after_s").get<double>();
    std::string path = r.at("path").get<std::string>();
    if (int n = r.at("instances").get<int>(); n > 1) path += fmt::format(" x{}", n);
    fmt::print(out, "{:<{}} {:>9} {:>9} {:>10} {:>6} {:>9}\n",
               fit(path.empty() ? "(model)" : path, name), name, human_time(before),
               human_time(after), signed_time(after - before), percent_change(before, after),
               fmt::format("{:g}->{:g}", r.at("kernels_before").get<double>(),
                           r.at("kernels_after").get<double>()));
    std::string tb = r.at("top_kernel_before").get<std::string>(),
                ta = r.at("top_kernel_after").get<std::string>();
    if (!tb.empty() && !ta.empty() && tb != ta)
      out << wrap(
          "    ",
          fmt::format("kernel changed: {} -> {}", fit(tb, width / 2 - 12), fit(ta, width / 2 - 12)),
          width);
  }
  if (!d.at("notes").empty()) {
    out << "\nNotes\n";
    for (const auto& n : d.at("notes")) out << wrap("  - ", n.get<std::string>(), width);
  }
}

}  // namespace rooflens::reports
