// Chrome trace event format (the JSON Perfetto and chrome://tracing open): complete events
// ("ph": "X") in microseconds, processes and threads named by metadata events.
#include <algorithm>
#include <map>

#include "profiler/attribution.hpp"
#include "reports/saved_result.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {
constexpr int kGpuPid = 1, kLayerPid = 2, kPredictedPid = 3;

json meta(const char* what, int pid, int tid, const std::string& name) {
  json j{{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) j["tid"] = tid;
  return j;
}
}  // namespace

void write_chrome_trace(std::ostream& out, const Analysis& a, const profiler::Trace& t) {
  uint64_t t0 = UINT64_MAX;
  for (const auto& x : t.activities) t0 = std::min(t0, x.start_ns);
  for (const auto& r : t.ranges) t0 = std::min(t0, r.start_ns);
  if (t0 == UINT64_MAX) t0 = 0;
  auto us = [&](uint64_t ns) { return static_cast<double>(ns - t0) / 1e3; };
  std::map<uint32_t, uint64_t> external;
  for (const auto& e : t.externals) external[e.correlation_id] = e.external_id;
  std::map<int, const NodeResult*> by_index;
  for (const auto& n : a.nodes) by_index[n.index] = &n;

  json events = json::array();
  events.push_back(meta("process_name", kGpuPid, -1, "GPU: " + t.gpu));
  events.push_back(meta("process_name", kLayerPid, -1, "layers (NVTX, host)"));
  events.push_back(meta("thread_name", kLayerPid, 1, "rooflens"));
  events.push_back(meta("process_name", kPredictedPid, -1, "predicted"));
  events.push_back(meta("thread_name", kPredictedPid, 1, "roofline prediction per layer"));
  std::map<uint32_t, bool> streams;
  std::map<int, uint64_t> first_start;  // layer -> first kernel start of its first sample
  for (const auto& x : t.activities) {
    json ev{{"ph", "X"}, {"name", x.name}, {"cat", x.kind == profiler::GpuActivity::Kind::kernel ? "kernel" : "memory"},
            {"pid", kGpuPid}, {"tid", x.stream}, {"ts", us(x.start_ns)}, {"dur", static_cast<double>(x.end_ns - x.start_ns) / 1e3}};
    json args{{"correlation", x.correlation_id}};
    if (auto it = external.find(x.correlation_id); it != external.end()) {
      int layer = profiler::layer_of(it->second), sample = profiler::sample_of(it->second);
      if (auto n = by_index.find(layer); n != by_index.end()) args["layer"] = n->second->name;
      args["sample"] = sample;
      auto [f, fresh] = first_start.try_emplace(layer, x.start_ns);
      if (!fresh) f->second = std::min(f->second, x.start_ns);
    } else {
      args["layer"] = "(none: L2 flush or set-up)";
    }
    if (x.bytes) args["bytes"] = x.bytes;
    ev["args"] = std::move(args);
    events.push_back(std::move(ev));
    streams[x.stream] = true;
  }
  for (auto& [s, _] : streams) events.push_back(meta("thread_name", kGpuPid, static_cast<int>(s), "stream " + std::to_string(s)));
  for (const auto& r : t.ranges)
    events.push_back({{"ph", "X"}, {"name", r.name}, {"cat", "nvtx"}, {"pid", kLayerPid}, {"tid", 1}, {"ts", us(r.start_ns)},
                      {"dur", static_cast<double>(r.end_ns - r.start_ns) / 1e3}, {"args", {{"domain", r.domain}}}});
  for (auto& [layer, start] : first_start) {
    const NodeResult& n = *by_index[layer];
    json args{{"op", n.op}, {"bound", std::string(bound_name(n.roof.bound))}};
    if (n.measured && n.measured->status == ReplayStatus::measured) {
      args["measured_median_us"] = n.measured->time.median * 1e6;
      args["error"] = n.measured->error;
    }
    events.push_back({{"ph", "X"}, {"name", n.name}, {"cat", "predicted"}, {"pid", kPredictedPid}, {"tid", 1}, {"ts", us(start)},
                      {"dur", n.roof.predicted * 1e6}, {"args", args}});
  }
  json doc{{"traceEvents", events}, {"displayTimeUnit", "ns"}, {"otherData", {{"tool", "rooflens"}, {"gpu", t.gpu}}}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace rooflens::reports
