#include "reports/compare_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "profiler/timeline/module_paths.hpp"
#include "profiler/trace/trace_json.hpp"
#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json row_json(const profiler::ModuleComparison& r, bool block) {
  json kernels = json::array();
  for (const auto& k : r.top_kernels)
    kernels.push_back(
        {{"name", k.name}, {"short_name", k.short_name}, {"time_s", k.time_s}, {"count", k.count}});
  json j{{block ? "block" : "path", r.path},
         {"predicted_s", r.predicted_s},
         {"measured_s", r.measured_s},
         {"measured_q1_s", r.measured_q1_s},
         {"measured_q3_s", r.measured_q3_s},
         {"measured_total_s", r.measured_total_s},
         {"efficiency", optional_number(r.efficiency)},
         {"gap_s", r.gap_s},
         {"kernels", r.kernels},
         {"nodes", r.nodes},
         {"flops", r.flops},
         {"bytes", r.bytes},
         {"graph_s", r.graph_s},
         {"top_kernels", kernels},
         {"hint", r.hints.empty() ? json(nullptr) : json(r.hints.front())},
         {"hints", r.hints}};
  if (block) {
    j["instances"] = r.instances;
  } else {
    j["parent"] = r.path.empty() ? json(nullptr) : json(r.parent);
    j["children"] = r.children;
    j["subtree_predicted_s"] = r.subtree_predicted_s;
    j["subtree_measured_s"] = r.subtree_measured_s;
  }
  return j;
}

json named_times(const std::vector<std::pair<std::string, double>>& v) {
  json a = json::array();
  for (const auto& [n, s] : v) a.push_back({{"name", n}, {"kernel_s", s}});
  return a;
}

// Kernel names keep their beginning: the function name comes first.
std::string head(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}
std::string signed_time(double s) {
  return (s < 0 ? "-" : "+") + human_time(std::fabs(s));
}
std::string percent(const json& v) {
  return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : "-";
}
std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100 * part / whole) : "-";
}
std::string label(const json& row, bool block) {
  std::string p = row.at(block ? "block" : "path").get<std::string>();
  return profiler::display_path(p);
}

}  // namespace

json compare_json(const profiler::TimelineComparison& c) {
  json modules = json::array(), blocks = json::array();
  for (const auto& r : c.modules) modules.push_back(row_json(r, false));
  for (const auto& r : c.blocks) blocks.push_back(row_json(r, true));
  return json{
      {"timeline",
       {{"path", c.timeline},
        {"source", c.source},
        {"gpu", c.gpu},
        {"command", c.command},
        {"complete", c.complete},
        {"incomplete_reason", c.incomplete_reason},
        {"dropped_records", c.dropped_records},
        {"ranges", c.ranges}}},
      {"kernels", c.kernels},
      {"memcpys", c.memcpys},
      {"memsets", c.memsets},
      {"total_kernel_s", c.total_kernel_s},
      {"attributed_kernel_s", c.attributed_kernel_s},
      {"matched_kernel_s", c.matched_kernel_s},
      {"unattributed_kernel_s", c.unattributed_kernel_s},
      {"unattributed",
       {{"no_launch_call_s", c.no_launch_s}, {"outside_module_ranges_s", c.outside_modules_s}}},
      {"graph_kernels", c.graph_kernels},
      {"graph_kernel_s", c.graph_kernel_s},
      {"graph_aligned",
       {{"kernels", c.graph_aligned_kernels},
        {"launches", c.graph_aligned_launches},
        {"compiled_steps", c.graph_aligned_root_steps},
        {"kernel_s", c.graph_aligned_s},
        {"on_own_kind_s", c.graph_aligned_matched_s}}},
      {"host_gap_s", c.idle.total_s},
      {"idle",
       {{"host_wait_s", c.idle.host_wait_s},
        {"kernel_wait_s", c.idle.kernel_wait_s},
        {"other_s", c.idle.other_s},
        {"gaps", c.idle.gaps}}},
      {"steps", c.steps},
      {"step_source", c.step_source},
      {"step",
       {{"kernel_s", c.step_kernel_s},
        {"kernel_q1_s", c.step_kernel_q1_s},
        {"kernel_q3_s", c.step_kernel_q3_s},
        {"wall_s", c.step_wall_s},
        {"idle_s", c.step_idle_s}}},
      {"predicted_s", c.predicted_s},
      {"efficiency", optional_number(c.efficiency)},
      {"modules", modules},
      {"blocks", blocks},
      {"unmatched_ranges", named_times(c.unmatched_ranges)},
      {"unmapped_instances", named_times(c.unmapped_instances)},
      {"notes", c.notes},
      {"forced", c.forced.empty() ? json(nullptr) : json(c.forced)},
      {"precision_mismatch",
       c.precision_mismatch.empty() ? json(nullptr) : json(c.precision_mismatch)}};
}

namespace {

// The run compared with: the model, the timeline, its steps and where the GPU's time went.
void write_compare_header(std::ostream& out, const json& result, size_t width) {
  // The header line from the result alone, so `report` of a saved compare prints it too.
  out << wrap("rooflens compare: ",
              fmt::format("{} ({} nodes) on {} ({} roofs)",
                          fit(result.at("model").at("name").get<std::string>(), 40),
                          result.at("nodes").size(),
                          fit(result.at("device").at("id").get<std::string>(), 16),
                          result.at("device").at("roofs").get<std::string>()),
              width);
  const json& c = result.at("compare");
  const json& tl = c.at("timeline");
  const json& step = c.at("step");
  double total = c.at("total_kernel_s").get<double>();
  out << '\n'
      << wrap("Compared with ",
              fmt::format("{} ({}{})", fit(tl.at("path").get<std::string>(), 42),
                          tl.at("source").get<std::string>(),
                          tl.at("gpu").get<std::string>().empty()
                              ? ""
                              : ", " + fit(tl.at("gpu").get<std::string>(), 24)),
              width);
  if (!tl.at("complete").get<bool>())
    fmt::print(
        out, "{}",
        wrap("  ", "INCOMPLETE timeline: " + tl.at("incomplete_reason").get<std::string>(), width));
  // The trust checks (absent from JSON written before them).
  if (c.contains("forced") && c.at("forced").is_string())
    out << wrap("  FORCED (--force): ",
                "the trace may not be a run of this model: " + c.at("forced").get<std::string>(),
                width);
  if (c.contains("precision_mismatch") && c.at("precision_mismatch").is_string())
    out << wrap("  precision: ", c.at("precision_mismatch").get<std::string>(), width);
  out << wrap("  module ranges: ", fit(tl.at("ranges").get<std::string>(), width - 17), width);
  out << wrap("  steps: ",
              fmt::format("{}, from {}", c.at("steps").get<int>(),
                          fit(c.at("step_source").get<std::string>(), width - 20)),
              width);
  out << wrap(
      "  per step: ",
      fmt::format("predicted {}, GPU busy {} (IQR {} - {}), efficiency {}",
                  human_time(c.at("predicted_s").get<double>()),
                  human_time(step.at("kernel_s").get<double>()),
                  human_time(step.at("kernel_q1_s").get<double>()),
                  human_time(step.at("kernel_q3_s").get<double>()), percent(c.at("efficiency"))),
      width);
  out << wrap("            ",
              fmt::format("wall {}, GPU idle {}", human_time(step.at("wall_s").get<double>()),
                          human_time(step.at("idle_s").get<double>())),
              width);
  // The whole timeline from here on (all its steps), as the lines say.
  out << wrap("  GPU time: ",
              fmt::format("{} over the whole timeline in {} kernels, {} memcpys, {} memsets",
                          human_time(total), with_commas(c.at("kernels").get<int64_t>()),
                          with_commas(c.at("memcpys").get<int64_t>()),
                          with_commas(c.at("memsets").get<int64_t>())),
              width);
  out << wrap("            ",
              fmt::format("{} in modules of the model, {} in other module ranges, {} in none",
                          share(c.at("matched_kernel_s").get<double>(), total),
                          share(c.at("attributed_kernel_s").get<double>() -
                                    c.at("matched_kernel_s").get<double>(),
                                total),
                          share(c.at("unattributed_kernel_s").get<double>(), total)),
              width);
  const json& idle = c.at("idle");
  out << wrap("  host gaps ",
              fmt::format("{} over the whole timeline (GPU idle between activities): host wait {}, "
                          "kernel wait {}, other {}",
                          human_time(c.at("host_gap_s").get<double>()),
                          human_time(idle.at("host_wait_s").get<double>()),
                          human_time(idle.at("kernel_wait_s").get<double>()),
                          human_time(idle.at("other_s").get<double>())),
              width);
}

// Modules (or blocks) ranked by the gap between measured and predicted; returns the ranking.
std::vector<const json*> write_gap_table(std::ostream& out, const json& c, int top_n, bool by_block,
                                         size_t width) {
  const json& rows = c.at(by_block ? "blocks" : "modules");
  std::vector<const json*> ranked;
  for (const json& r : rows) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(), [](const json* x, const json* y) {
    return x->at("gap_s").get<double>() > y->at("gap_s").get<double>();
  });
  size_t shown = std::min(ranked.size(), static_cast<size_t>(std::max(top_n, 0)));
  out << '\n'
      << wrap("",
              fmt::format(
                  "{} by gap, per step (own kernels; children excluded){}",
                  by_block ? "Blocks (repeated layers summed)" : "Modules",
                  shown < ranked.size() ? fmt::format(", top {} of {}", shown, ranked.size()) : ""),
              width);
  // 100 columns: the name takes what the numbers leave (46, or 42 beside the count); fewer: less.
  const int w = static_cast<int>(width) - (by_block ? 58 : 54);
  fmt::print(out, "{:<{}} {}{:>9} {:>9} {:>5} {:>9} {:>6}\n", by_block ? "block" : "module", w,
             by_block ? "    x " : "", "predicted", "measured", "eff", "gap", "kernels");
  for (size_t i = 0; i < shown; ++i) {
    const json& r = *ranked[i];
    fmt::print(out, "{:<{}} {}{:>9} {:>9} {:>5} {:>9} {:>6.0f}\n",
               fit(label(r, by_block), static_cast<size_t>(w)), w,
               by_block ? fmt::format("{:>5} ", r.at("instances").get<int>()) : "",
               human_time(r.at("predicted_s").get<double>()),
               human_time(r.at("measured_s").get<double>()), percent(r.at("efficiency")),
               signed_time(r.at("gap_s").get<double>()), r.at("kernels").get<double>());
    if (r.at("hint").is_string())
      fmt::print(out, "{}", wrap("    ", r.at("hint").get<std::string>(), width));
  }
  ranked.resize(shown);
  return ranked;
}

// Where the time above the prediction goes: repeated layers summed, positive gaps only.
void write_time_above(std::ostream& out, const json& c, size_t width) {
  // Where the time above the prediction goes: repeated layers summed, positive gaps only.
  double above = 0;
  for (const json& b : c.at("blocks")) above += std::max(0.0, b.at("gap_s").get<double>());
  out << '\n'
      << wrap("",
              fmt::format(
                  "Where the time above the prediction goes (repeated layers summed; {} per step)",
                  human_time(above)),
              width);
  int listed = 0;
  for (const json& b : c.at("blocks")) {
    double gap = b.at("gap_s").get<double>();
    if (gap <= 0 || listed++ >= 8) break;
    const size_t name_w = width - 48;
    fmt::print(out, "  {:<{}} x{:<4} {:>9} {:>6}\n", fit(label(b, true), name_w), name_w,
               b.at("instances").get<int>(), signed_time(gap), share(gap, above));
  }
}

void write_gap_kernels(std::ostream& out, const std::vector<const json*>& ranked, bool by_block,
                       size_t width) {
  fmt::print(out, "\nTop kernels of the largest gaps (per step)\n");
  for (size_t i = 0; i < std::min<size_t>(ranked.size(), 3); ++i) {
    const json& r = *ranked[i];
    fmt::print(out, "  {}\n", fit(label(r, by_block), width - 4));
    int k = 0;
    for (const json& kern : r.at("top_kernels")) {
      if (k++ >= 3) break;
      fmt::print(out, "    {:>9} {:>5.0f}x  {}\n", human_time(kern.at("time_s").get<double>()),
                 kern.at("count").get<double>(),
                 head(kern.at("short_name").get<std::string>(), width - 22));
    }
  }
}

void write_compare_lists(std::ostream& out, const json& c, size_t width) {
  auto list = [&](const char* key, const char* what) {
    const json& v = c.at(key);
    if (v.empty()) return;
    out << '\n' << wrap("", fmt::format("{} ({}):", what, v.size()), width);
    for (size_t i = 0; i < v.size() && i < 5; ++i)
      fmt::print(out, "  {:<{}} {:>9}\n", fit(v[i].at("name").get<std::string>(), width - 20),
                 width - 20, human_time(v[i].at("kernel_s").get<double>()));
  };
  list("unmatched_ranges", "Module ranges that name no module of the model, kernel time inside");
  list("unmapped_instances",
       "Module instances matched to no module (time counted in the module around them)");
  if (!c.at("notes").empty()) {
    fmt::print(out, "\nNotes\n");
    for (const json& n : c.at("notes"))
      fmt::print(out, "{}", wrap("  - ", n.get<std::string>(), width));
  }
}

}  // namespace

void write_compare_table(std::ostream& out, const json& result, int top_n, bool by_block,
                         size_t width) {
  width = std::max<size_t>(width, 60);
  write_compare_header(out, result, width);
  const json& c = result.at("compare");
  std::vector<const json*> ranked = write_gap_table(out, c, top_n, by_block, width);
  if (!by_block) write_time_above(out, c, width);
  write_gap_kernels(out, ranked, by_block, width);
  write_compare_lists(out, c, width);
}

void write_compare_csv(std::ostream& out, const json& result, bool by_block) {
  const json& rows = result.at("compare").at(by_block ? "blocks" : "modules");
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  out << (by_block ? "block,instances" : "path,parent")
      << ",nodes,predicted_s,measured_s,measured_q1_s,measured_q3_s,measured_total_s,efficiency,"
         "gap_s,kernels,top_kernel,hint\n";
  for (const json& r : rows) {
    if (by_block)
      out << quote(r.at("block").get<std::string>()) << ',' << r.at("instances").get<int>();
    // The model itself by the label the tables give it, not an empty first row; its children's
    // parent too.
    else
      out << quote(profiler::display_path(r.at("path").get<std::string>())) << ','
          << quote(r.at("parent").is_string()
                       ? profiler::display_path(r.at("parent").get<std::string>())
                       : "");
    out << ',' << r.at("nodes").get<int>();
    for (const char* k :
         {"predicted_s", "measured_s", "measured_q1_s", "measured_q3_s", "measured_total_s"})
      out << ',' << fmt::format("{:.9g}", r.at(k).get<double>());
    out << ','
        << (r.at("efficiency").is_number() ? fmt::format("{:.4f}", r.at("efficiency").get<double>())
                                           : "");
    out << ',' << fmt::format("{:.9g}", r.at("gap_s").get<double>()) << ','
        << fmt::format("{:g}", r.at("kernels").get<double>());
    out << ','
        << quote(r.at("top_kernels").empty()
                     ? ""
                     : r.at("top_kernels")[0].at("short_name").get<std::string>());
    out << ',' << quote(r.at("hint").is_string() ? r.at("hint").get<std::string>() : "") << '\n';
  }
}

namespace {

constexpr int kGpuPid = 1, kHostPid = 2, kPredictedPid = 3;

json meta_event(const char* what, int pid, int64_t tid, const std::string& name) {
  json j{{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) j["tid"] = tid;
  return j;
}

// Microseconds since the trace's first activity or range.
struct TraceClock {
  uint64_t t0 = 0;
  explicit TraceClock(const profiler::Trace& t) {
    t0 = UINT64_MAX;
    for (const auto& a : t.activities) t0 = std::min(t0, a.start_ns);
    for (const auto& r : t.ranges) t0 = std::min(t0, r.start_ns);
    if (t0 == UINT64_MAX) t0 = 0;
  }
  double us(uint64_t ns) const {
    return ns >= t0 ? static_cast<double>(ns - t0) / 1e3 : -static_cast<double>(t0 - ns) / 1e3;
  }
};

using FirstStarts = std::map<std::pair<int, int>, uint64_t>;  // (row, step) -> first start

// The GPU's activities on a track per (device, stream), each with its module and step; returns
// where each module's kernels start in each step.
FirstStarts gpu_events(const profiler::Trace& t, const profiler::TimelineComparison& c,
                       const TraceClock& clock, json& events) {
  auto meta = meta_event;
  auto us = [&](uint64_t ns) { return clock.us(ns); };
  FirstStarts first_start;
  std::map<std::pair<uint32_t, uint32_t>, int64_t> tracks;  // (device, stream) -> tid
  for (size_t i = 0; i < t.activities.size(); ++i) {
    const auto& a = t.activities[i];
    auto [tr, fresh] =
        tracks.try_emplace({a.device, a.stream}, static_cast<int64_t>(tracks.size()) + 1);
    if (fresh)
      events.push_back(meta("thread_name", kGpuPid, tr->second,
                            fmt::format("device {} stream {}", a.device, a.stream)));
    int row = c.activity_row.empty() ? -1 : c.activity_row[i];
    int step = c.activity_step.empty() ? -1 : c.activity_step[i];
    json args{{"correlation", a.correlation_id},
              {"module", row >= 0 ? profiler::display_path(c.modules[static_cast<size_t>(row)].path)
                                  : "(none)"}};
    if (step >= 0) args["step"] = step;
    if (a.bytes) args["bytes"] = a.bytes;
    events.push_back({{"ph", "X"},
                      {"name", a.name},
                      {"cat", profiler::activity_kind_name(a.kind)},
                      {"pid", kGpuPid},
                      {"tid", tr->second},
                      {"ts", us(a.start_ns)},
                      {"dur", static_cast<double>(a.end_ns - a.start_ns) / 1e3},
                      {"args", args}});
    if (row >= 0 && step >= 0) {
      auto [f, new_row] = first_start.try_emplace({row, step}, a.start_ns);
      if (!new_row) f->second = std::min(f->second, a.start_ns);
    }
  }
  return first_start;
}

// The host's module ranges on a track per (pid, tid).
void host_events(const profiler::Trace& t, const TraceClock& clock, json& events) {
  auto meta = meta_event;
  auto us = [&](uint64_t ns) { return clock.us(ns); };
  std::map<std::pair<uint64_t, uint64_t>, int64_t> threads;
  for (const auto& r : t.ranges) {
    auto [th, fresh] =
        threads.try_emplace({r.pid, r.tid}, static_cast<int64_t>(threads.size()) + 1);
    if (fresh)
      events.push_back(
          meta("thread_name", kHostPid, th->second, fmt::format("pid {} tid {}", r.pid, r.tid)));
    events.push_back({{"ph", "X"},
                      {"name", r.name},
                      {"cat", r.domain.empty() ? "nvtx" : r.domain},
                      {"pid", kHostPid},
                      {"tid", th->second},
                      {"ts", us(r.start_ns)},
                      {"dur", static_cast<double>(r.end_ns - r.start_ns) / 1e3}});
  }
}

// Each module's predicted time, drawn from where its kernels start in each step.
void predicted_events(const profiler::TimelineComparison& c, const FirstStarts& first_start,
                      const TraceClock& clock, json& events) {
  auto us = [&](uint64_t ns) { return clock.us(ns); };
  for (const auto& [key, start] : first_start) {
    const auto& m = c.modules[static_cast<size_t>(key.first)];
    if (m.predicted_s <= 0) continue;
    json args{{"measured_us", m.measured_s * 1e6}, {"gap_us", m.gap_s * 1e6}};
    if (m.efficiency) args["efficiency"] = *m.efficiency;
    events.push_back({{"ph", "X"},
                      {"name", profiler::display_path(m.path)},
                      {"cat", "predicted"},
                      {"pid", kPredictedPid},
                      {"tid", 1},
                      {"ts", us(start)},
                      {"dur", m.predicted_s * 1e6},
                      {"args", args}});
  }
}

}  // namespace

void write_compare_trace(std::ostream& out, const profiler::Trace& t,
                         const profiler::TimelineComparison& c) {
  TraceClock clock(t);
  json events = json::array();
  events.push_back(meta_event("process_name", kGpuPid, -1,
                              "GPU: " + (t.gpu.empty() ? std::string("?") : t.gpu)));
  events.push_back(meta_event("process_name", kHostPid, -1, "host: module ranges"));
  events.push_back(meta_event("process_name", kPredictedPid, -1, "predicted"));
  events.push_back(meta_event("thread_name", kPredictedPid, 1, "roofline prediction per module"));
  FirstStarts first_start = gpu_events(t, c, clock, events);
  host_events(t, clock, events);
  predicted_events(c, first_start, clock, events);
  json doc{{"traceEvents", events},
           {"displayTimeUnit", "ns"},
           {"otherData", {{"tool", "rooflens compare"}, {"gpu", t.gpu}}}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace rooflens::reports
