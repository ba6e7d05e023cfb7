// Chrome trace event format (the JSON Perfetto and chrome://tracing open): complete events
// ("ph": "X") in microseconds, processes and threads named by metadata events. One writer for
// the predicted timeline (analyze, report: no GPU needed) and the measured one (profile).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "profiler/timeline/attribution.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {
constexpr int kGpuPidBase = 1, kLayerPidBase = 2, kPredictedPid = 3, kPredictedPidBase = 3;
constexpr int kNodeTid = 1, kStepTid = 2;

json meta(const char* what, int pid, int tid, const std::string& name) {
  json j{{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) j["tid"] = tid;
  return j;
}

// What a predicted slice carries: the node's numbers as the result has them.
json node_args(const json& n) {
  json args{{"op", n.at("op")}, {"index", n.at("index")}};
  for (const char* key : {"flops", "bytes_read_activations", "bytes_read_weights", "bytes_written",
                          "intensity", "unit", "bound", "predicted_s"})
    if (n.contains(key)) args[key] = n[key];
  if (n.contains("measured") && n["measured"].at("status") == "measured") {
    args["measured_median_us"] = n["measured"].at("median_s").get<double>() * 1e6;
    args["error"] = n["measured"].at("error");
  }
  return args;
}

json slice(const std::string& name, const char* cat, int pid, int tid, double ts_us, double dur_us,
           json args) {
  return {{"ph", "X"},  {"name", name}, {"cat", cat},    {"pid", pid},
          {"tid", tid}, {"ts", ts_us},  {"dur", dur_us}, {"args", std::move(args)}};
}

// Every costed node back to back in execution order; a node that is not costed is an instant
// marker where it would run (unknown is never a zero-length slice); a generate run adds its
// prefill and each decode step on a track of their own.
void predicted_timeline(const json& r, json& events) {
  events.push_back(meta(
      "process_name", kPredictedPid, -1,
      "predicted on " + r.at("device").at("id").get<std::string>() + " (roofline model, no GPU)"));
  bool generate = r.contains("transformer") && r["transformer"].contains("generation");
  events.push_back(
      meta("thread_name", kPredictedPid, kNodeTid,
           generate ? "prefill: nodes in execution order" : "nodes in execution order"));
  double cursor = 0;
  for (const json& n : r.at("nodes")) {
    const std::string status = n.at("status").get<std::string>();
    if (status == "costed") {
      double dur = n.at("predicted_s").get<double>() * 1e6;
      events.push_back(slice(n.at("name").get<std::string>(), "predicted", kPredictedPid, kNodeTid,
                             cursor, dur, node_args(n)));
      cursor += dur;
    } else if (status == "not costed") {
      events.push_back({{"ph", "i"},
                        {"s", "t"},
                        {"name", "not costed: " + n.at("name").get<std::string>()},
                        {"cat", "not costed"},
                        {"pid", kPredictedPid},
                        {"tid", kNodeTid},
                        {"ts", cursor},
                        {"args", {{"op", n.at("op")}, {"reason", n.value("reason", "")}}}});
    }
  }
  if (!generate) return;
  const json& g = r["transformer"]["generation"];
  events.push_back(meta("thread_name", kPredictedPid, kStepTid,
                        "generation: prefill, then one decode step a token"));
  double ttft = g.at("ttft_s").get<double>() * 1e6;
  int64_t prompt = g.at("prompt").get<int64_t>(),
          batch = r["transformer"].at("batch").get<int64_t>();
  events.push_back(slice("prefill (first token)", "step", kPredictedPid, kStepTid, 0, ttft,
                         {{"tokens", prompt}, {"batch", batch}}));
  double at = ttft;
  int64_t step = 1;
  for (const json& s : g.at("decode_step_s")) {
    double dur = s.get<double>() * 1e6;
    events.push_back(slice(fmt::format("decode step {}", step), "step", kPredictedPid, kStepTid, at,
                           dur,
                           {{"context", prompt + step}, {"batch", batch}, {"predicted_s", s}}));
    at += dur;
    ++step;
  }
}

// Kernels on their stream tracks, NVTX layer ranges, and each layer's predicted duration from
// where its first kernel started, so prediction and measurement line up.
uint64_t first_timestamp(const profiler::Trace& t) {
  uint64_t t0 = UINT64_MAX;
  for (const auto& x : t.activities) t0 = std::min(t0, x.start_ns);
  for (const auto& x : t.ranges) t0 = std::min(t0, x.start_ns);
  return t0;
}

// `rank` >= 0: one GPU of a tensor-parallel run; its tracks are numbered and named apart from
// the other ranks', on the time axis all ranks share (t0, the earliest record of any).
void measured_timeline(const json& r, const profiler::Trace& t, json& events, int rank = -1,
                       uint64_t t0 = UINT64_MAX) {
  if (t0 == UINT64_MAX) t0 = first_timestamp(t);
  if (t0 == UINT64_MAX) t0 = 0;
  const int base = rank < 0 ? 0 : 10 * rank;
  const int gpu_pid = kGpuPidBase + base, layer_pid = kLayerPidBase + base,
            predicted_pid = kPredictedPidBase + base;
  const std::string of_rank = rank < 0 ? "" : fmt::format(" (rank {})", rank);
  auto us = [&](uint64_t ns) { return static_cast<double>(ns - t0) / 1e3; };
  std::map<uint32_t, uint64_t> external;
  for (const auto& e : t.externals) external[e.correlation_id] = e.external_id;
  std::map<int64_t, const json*> by_index;
  for (const json& n : r.at("nodes")) by_index[n.at("index").get<int64_t>()] = &n;

  events.push_back(meta("process_name", gpu_pid, -1,
                        (rank < 0 ? "GPU: " : fmt::format("GPU {}: ", rank)) + t.gpu));
  events.push_back(meta("process_name", layer_pid, -1, "layers (NVTX, host)" + of_rank));
  events.push_back(meta("thread_name", layer_pid, 1, "rooflens"));
  events.push_back(meta("process_name", predicted_pid, -1, "predicted" + of_rank));
  events.push_back(meta("thread_name", predicted_pid, kNodeTid, "roofline prediction per layer"));
  std::map<uint32_t, bool> streams;
  std::map<int64_t, uint64_t> first_start;  // layer -> first kernel start of its first sample
  for (const auto& x : t.activities) {
    json args{{"correlation", x.correlation_id}};
    if (auto it = external.find(x.correlation_id); it != external.end()) {
      int layer = profiler::layer_of(it->second);
      if (auto n = by_index.find(layer); n != by_index.end()) args["layer"] = n->second->at("name");
      args["sample"] = profiler::sample_of(it->second);
      auto [f, fresh] = first_start.try_emplace(layer, x.start_ns);
      if (!fresh) f->second = std::min(f->second, x.start_ns);
    } else {
      args["layer"] = "(none: L2 flush or set-up)";
    }
    if (x.bytes) args["bytes"] = x.bytes;
    events.push_back(slice(x.name,
                           x.kind == profiler::GpuActivity::Kind::kernel ? "kernel" : "memory",
                           gpu_pid, static_cast<int>(x.stream), us(x.start_ns),
                           static_cast<double>(x.end_ns - x.start_ns) / 1e3, std::move(args)));
    streams[x.stream] = true;
  }
  for (auto& [s, _] : streams)
    events.push_back(
        meta("thread_name", gpu_pid, static_cast<int>(s), "stream " + std::to_string(s)));
  for (const auto& x : t.ranges)
    events.push_back(slice(x.name, "nvtx", layer_pid, 1, us(x.start_ns),
                           static_cast<double>(x.end_ns - x.start_ns) / 1e3,
                           {{"domain", x.domain}}));
  for (auto& [layer, start] : first_start) {
    auto n = by_index.find(layer);
    if (n == by_index.end() || !n->second->contains("predicted_s")) continue;
    const json& node = *n->second;
    events.push_back(slice(node.at("name").get<std::string>(), "predicted", predicted_pid, kNodeTid,
                           us(start), node.at("predicted_s").get<double>() * 1e6, node_args(node)));
  }
}

}  // namespace

void write_chrome_trace(std::ostream& out, const json& result, const profiler::Trace* measured) {
  json events = json::array();
  if (measured)
    measured_timeline(result, *measured, events);
  else
    predicted_timeline(result, events);
  json other{{"tool", "rooflens"},
             {"model", result.at("model").at("name")},
             {"device", result.at("device").at("id")},
             {"timeline", measured ? "measured" : "predicted"},
             {"coverage", result.at("coverage").at("line")}};
  if (measured) other["gpu"] = measured->gpu;
  json doc{{"traceEvents", std::move(events)},
           {"displayTimeUnit", "ns"},
           {"otherData", std::move(other)}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

void write_chrome_trace(std::ostream& out, const json& result,
                        const std::vector<profiler::Trace>& ranks) {
  json events = json::array();
  uint64_t t0 = UINT64_MAX;
  for (const profiler::Trace& t : ranks) t0 = std::min(t0, first_timestamp(t));
  for (size_t r = 0; r < ranks.size(); ++r)
    measured_timeline(result, ranks[r], events, static_cast<int>(r), t0);
  json other{{"tool", "rooflens"},
             {"model", result.at("model").at("name")},
             {"device", result.at("device").at("id")},
             {"timeline", "measured"},
             {"ranks", ranks.size()},
             {"coverage", result.at("coverage").at("line")}};
  if (!ranks.empty()) other["gpu"] = ranks.front().gpu;
  json doc{{"traceEvents", std::move(events)},
           {"displayTimeUnit", "ns"},
           {"otherData", std::move(other)}};
  out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

void write_chrome_trace(std::ostream& out, const Analysis& a, const profiler::Trace& trace) {
  write_chrome_trace(out, result_json(a), &trace);
}

}  // namespace rooflens::reports
