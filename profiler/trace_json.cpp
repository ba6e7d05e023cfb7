#include "profiler/trace_json.hpp"

#include <stdexcept>

namespace rooflens::profiler {

using nlohmann::json;

const char* activity_kind_name(GpuActivity::Kind k) {
  switch (k) {
    case GpuActivity::Kind::kernel: return "kernel";
    case GpuActivity::Kind::memcpy: return "memcpy";
    case GpuActivity::Kind::memset: return "memset";
  }
  return "kernel";
}

namespace {
GpuActivity::Kind kind_from(const std::string& s) {
  if (s == "kernel") return GpuActivity::Kind::kernel;
  if (s == "memcpy") return GpuActivity::Kind::memcpy;
  if (s == "memset") return GpuActivity::Kind::memset;
  throw std::invalid_argument("unknown activity kind '" + s + "'");
}
}  // namespace

void to_json(json& j, const GpuActivity& a) {
  j = json{{"kind", activity_kind_name(a.kind)}, {"name", a.name}, {"start", a.start_ns}, {"end", a.end_ns},
           {"correlation", a.correlation_id}, {"stream", a.stream}, {"bytes", a.bytes}, {"device", a.device},
           {"context", a.context}};
  if (a.graph_id) j["graph"] = a.graph_id;
}

void from_json(const json& j, GpuActivity& a) {
  a.kind = kind_from(j.at("kind").get<std::string>());
  a.name = j.at("name").get<std::string>();
  a.start_ns = j.at("start").get<uint64_t>();
  a.end_ns = j.at("end").get<uint64_t>();
  a.correlation_id = j.at("correlation").get<uint32_t>();
  a.stream = j.at("stream").get<uint32_t>();
  a.bytes = j.at("bytes").get<uint64_t>();
  a.device = j.value("device", 0u);
  a.context = j.value("context", 0u);
  a.graph_id = j.value("graph", 0u);
}

void to_json(json& j, const ApiCall& c) {
  j = json{{"name", c.name}, {"start", c.start_ns}, {"end", c.end_ns}, {"correlation", c.correlation_id},
           {"pid", c.pid}, {"tid", c.tid}};
}

void from_json(const json& j, ApiCall& c) {
  c.name = j.at("name").get<std::string>();
  c.start_ns = j.at("start").get<uint64_t>();
  c.end_ns = j.at("end").get<uint64_t>();
  c.correlation_id = j.at("correlation").get<uint32_t>();
  c.pid = j.value("pid", uint64_t{0});
  c.tid = j.value("tid", uint64_t{0});
}

void to_json(json& j, const ExternalCorrelation& e) { j = json{{"correlation", e.correlation_id}, {"external", e.external_id}}; }

void from_json(const json& j, ExternalCorrelation& e) {
  e.correlation_id = j.at("correlation").get<uint32_t>();
  e.external_id = j.at("external").get<uint64_t>();
}

void to_json(json& j, const NvtxRange& r) {
  j = json{{"domain", r.domain}, {"name", r.name}, {"start", r.start_ns}, {"end", r.end_ns}, {"pid", r.pid}, {"tid", r.tid}};
}

void from_json(const json& j, NvtxRange& r) {
  r.domain = j.at("domain").get<std::string>();
  r.name = j.at("name").get<std::string>();
  r.start_ns = j.at("start").get<uint64_t>();
  r.end_ns = j.at("end").get<uint64_t>();
  r.pid = j.value("pid", uint64_t{0});
  r.tid = j.value("tid", uint64_t{0});
}

void to_json(json& j, const TraceDevice& d) { j = json{{"id", d.id}, {"name", d.name}}; }

void from_json(const json& j, TraceDevice& d) {
  d.id = j.at("id").get<uint32_t>();
  d.name = j.at("name").get<std::string>();
}

json trace_header_json(const Trace& t) {
  return json{{"trace_version", kTraceVersion},
              {"gpu", t.gpu},
              {"sm_clock_mhz", t.sm_clock_mhz},
              {"dropped", t.dropped},
              {"source", t.source},
              {"command", t.command},
              {"devices", t.devices},
              {"complete", t.complete},
              {"incomplete_reason", t.incomplete_reason},
              {"exit_code", t.exit_code},
              {"notes", t.notes}};
}

void read_trace_header(const json& h, Trace& t) {
  t.gpu = h.at("gpu").get<std::string>();
  t.sm_clock_mhz = h.at("sm_clock_mhz").get<double>();
  t.dropped = h.at("dropped").get<uint64_t>();
  t.source = h.value("source", std::string("rooflens profile"));
  t.command = h.value("command", std::vector<std::string>{});
  t.devices = h.value("devices", std::vector<TraceDevice>{});
  t.complete = h.value("complete", true);
  t.incomplete_reason = h.value("incomplete_reason", std::string());
  t.exit_code = h.value("exit_code", 0);
  t.notes = h.value("notes", std::vector<std::string>{});
}

}  // namespace rooflens::profiler
