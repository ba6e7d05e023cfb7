#include "reports/profile_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>

#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {
double seconds(const json& v) {
  return v.get<double>();
}
}  // namespace

namespace {

// "compute/latency" as "comp/lat": the table must fit 100 columns.
std::string short_class(const json& b) {
  std::string s = b.get<std::string>();
  return s == "compute" ? "comp" : s == "memory" ? "mem" : s == "latency" ? "lat" : s;
}

// The library as a word.
std::string short_library(const json& m) {
  std::string l = m.value("library", "");
  return l == "rooflens"              ? std::string("ours")
         : l == "cuBLASLt + rooflens" ? std::string("cuBLASLt+")
                                      : l;
}

// The GPU and how it was measured, and whether the run can be trusted.
void write_measured_on(std::ostream& out, const json& p, bool wide, size_t rest) {
  fmt::print(out, "\nMeasured on {} ({} timing, L2 {}, SM clock {:.0f} MHz, {} roofs)\n",
             fit(p.at("gpu").get<std::string>(), wide ? 30 : 20), p.at("timing").get<std::string>(),
             p.at("l2").get<std::string>(), p.at("sm_clock_mhz").get<double>(),
             p.at("roofs").get<std::string>());
  if (!p.at("timing_note").get<std::string>().empty())
    fmt::print(out, "  timing fallback: {}\n", fit(p.at("timing_note").get<std::string>(), rest));
  if (!p.at("valid").get<bool>())
    fmt::print(out, "  INVALID RUN: {}\n", fit(p.at("invalid_reason").get<std::string>(), rest));
  if (!p.at("complete").get<bool>())
    fmt::print(out, "  INCOMPLETE: interrupted before every layer ran\n");
}

// The measured layers, slowest first; returns every measured node (not only the top_n shown).
std::vector<const json*> write_measured_rows(std::ostream& out, const json& r, int top_n, bool wide,
                                             size_t width) {
  std::vector<const json*> rows;
  for (const json& n : r.at("nodes"))
    if (n.contains("measured") && n["measured"].at("status") == "measured") rows.push_back(&n);
  std::stable_sort(rows.begin(), rows.end(), [](auto* x, auto* y) {
    return seconds(x->at("measured").at("median_s")) > seconds(y->at("measured").at("median_s"));
  });
  std::vector<const json*> measured_nodes = rows;
  if (static_cast<int>(rows.size()) > top_n) rows.resize(static_cast<size_t>(top_n));
  const size_t name_w = wide ? 26 : std::max<size_t>(16, width - 50);
  if (wide)
    fmt::print(out, "{:<26} {:<10} {:>9} {:>9} {:>5} {:>6} {:>9} {:<9} {:>2}\n", "node", "op",
               "predicted", "measured", "IQR%", "error", "class p/m", "ran", "k");
  else
    fmt::print(out, "{:<{}} {:<10} {:>9} {:>9} {:>6} {:>9}\n", "node", name_w, "op", "predicted",
               "measured", "error", "class p/m");
  for (const json* n : rows) {
    const json& m = n->at("measured");
    double median = seconds(m.at("median_s")), iqr = m.at("relative_iqr").get<double>();
    std::string op = n->at("op").get<std::string>();
    std::string classes =
        fmt::format("{}/{}", short_class(n->at("bound")), short_class(m.at("bound")));
    if (wide)
      fmt::print(out, "{:<26} {:<10} {:>9} {:>9} {:>5.1f} {:>+5.0f}% {:>9} {:<9} {:>2}\n",
                 fit_name(n->at("name").get<std::string>(), 26, op), fit_op(op, 10),
                 human_time(seconds(n->at("predicted_s"))), human_time(median), 100 * iqr,
                 100 * m.at("error").get<double>(), classes, fit(short_library(m), 9),
                 m.at("kernels").get<int>());
    else
      fmt::print(out, "{:<{}} {:<10} {:>9} {:>9} {:>+5.0f}% {:>9}\n",
                 fit_name(n->at("name").get<std::string>(), name_w, op), name_w, fit_op(op, 10),
                 human_time(seconds(n->at("predicted_s"))), human_time(median),
                 100 * m.at("error").get<double>(), classes);
  }
  return measured_nodes;
}

// The prediction's error: time-weighted, model sum, median, per class.
void write_prediction_error(std::ostream& out, const json& p, size_t width) {
  if (p.at("measured").get<int>() == 0) {
    fmt::print(out, "\nno layer was measured: no prediction error to report\n");
  } else {
    // The headline weighs each layer's error by its time: the median alone hides where it goes.
    // Results written before the time-weighted figure existed show "-" there, not a zero.
    auto pct = [](const json& o, const char* key) {
      return o.contains(key) ? fmt::format("{:.1f}%", 100 * o[key].get<double>())
                             : std::string("-");
    };
    out << '\n'
        << wrap("",
                fmt::format("Prediction error, time-weighted sum|p - m| / sum m: {} (model sum "
                            "{:+.1f}%, median per layer {:.1f}%)",
                            pct(p, "time_weighted_error"), 100 * p.at("model_error").get<double>(),
                            100 * p.at("median_abs_error").get<double>()),
                width);
    fmt::print(out, "{:<14} {:>6} {:>10} {:>8} {:>8} {:>10} {:>10}\n", "class", "layers",
               "time-wtd", "median", "p90", "predicted", "measured");
    for (const json& c : p.at("classes"))
      fmt::print(out, "{:<14} {:>6} {:>10} {:>7.1f}% {:>7.1f}% {:>10} {:>10}\n",
                 c.at("family").get<std::string>(), c.at("layers").get<int>(),
                 pct(c, "time_weighted_error"), 100 * c.at("median_abs_error").get<double>(),
                 100 * c.at("p90_abs_error").get<double>(),
                 human_time(seconds(c.at("predicted_s"))), human_time(seconds(c.at("measured_s"))));
    fmt::print(out, "{:<14} {:>6} {:>10} {:>7.1f}% {:>7.1f}% {:>10} {:>10}\n", "all",
               p.at("measured").get<int>(), pct(p, "time_weighted_error"),
               100 * p.at("median_abs_error").get<double>(),
               100 * p.at("p90_abs_error").get<double>(), human_time(seconds(p.at("predicted_s"))),
               human_time(seconds(p.at("measured_s"))));
  }
}

// What the replay did: counts, the libraries that ran, why layers were not replayed.
void write_replay_summary(std::ostream& out, const json& r,
                          const std::vector<const json*>& measured_nodes, size_t width) {
  const json& p = r.at("profile");
  out << wrap("replay: ",
              fmt::format("{} measured, {} not replayed, {} skipped, {} without a kernel; {:.1f} s",
                          p.at("measured").get<int>(), p.at("not_replayed").get<int>(),
                          p.at("skipped").get<int>(), p.at("no_kernel").get<int>(),
                          p.at("wall_s").get<double>()),
              width);
  // What ran: layers and measured time per library.
  std::map<std::string, std::pair<int, double>> libraries;
  for (const json* n : measured_nodes) {
    auto& [count, time] = libraries[short_library(n->at("measured"))];
    ++count;
    time += seconds(n->at("measured").at("median_s"));
  }
  if (!libraries.empty()) {
    std::string line;
    for (const auto& [l, ct] : libraries)
      line += fmt::format("{}{} {} layers {}", line.empty() ? "" : ", ", l.empty() ? "?" : l,
                          ct.first, human_time(ct.second));
    fmt::print(out, "ran:    {}\n", fit(line, width - 8));
  }
  if (p.contains("cudnn"))
    fmt::print(out, "cudnn:  {}\n", fit(p["cudnn"].get<std::string>(), width - 8));
  std::map<std::string, int> reasons;
  for (const json& n : r.at("nodes")) {
    if (!n.contains("measured")) continue;
    const json& m = n["measured"];
    if (m.at("status") == "not replayed" || m.at("status") == "skipped")
      ++reasons[fmt::format("{} {}: {}", m.at("status").get<std::string>(),
                            n.at("op").get<std::string>(), m.value("reason", ""))];
  }
  for (const auto& [reason, count] : reasons)
    fmt::print(out, "  {} x{}\n", fit(reason, width - 12), count);
}

}  // namespace

void write_profile_table(std::ostream& out, const json& r, int top_n, size_t width) {
  const json& p = r.at("profile");
  // Below 100 columns the compact layout: no IQR, library or kernel-count columns, and the name
  // takes what is left.
  const bool wide = width >= 100;
  const size_t rest = width > 20 ? width - 20 : width;
  write_measured_on(out, p, wide, rest);
  std::vector<const json*> measured_nodes = write_measured_rows(out, r, top_n, wide, width);
  write_prediction_error(out, p, width);
  write_replay_summary(out, r, measured_nodes, width);
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
                {"relative_iqr", m.time.spread()},
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
    classes.push_back({{"family", c.family},
                       {"layers", c.layers},
                       {"median_abs_error", c.median_abs},
                       {"p90_abs_error", c.p90_abs},
                       {"time_weighted_error", c.time_weighted},
                       {"predicted_s", c.predicted_s},
                       {"measured_s", c.measured_s}});
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
