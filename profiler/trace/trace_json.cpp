#include "profiler/trace/trace_json.hpp"

#include <stdexcept>

namespace rooflens::profiler {

using nlohmann::json;

const char* activity_kind_name(GpuActivity::Kind k) {
  switch (k) {
    case GpuActivity::Kind::kernel:
      return "kernel";
    case GpuActivity::Kind::memcpy:
      return "memcpy";
    case GpuActivity::Kind::memset:
      return "memset";
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

uint64_t uint_field(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  throw std::invalid_argument(std::string("field '") + key +
                              "' is not a non-negative integer: " + v.dump());
}

uint64_t uint_field_or(const json& j, const char* key, uint64_t fallback) {
  return j.contains(key) ? uint_field(j, key) : fallback;
}

uint32_t u32_field(const json& j, const char* key) {
  uint64_t v = uint_field(j, key);
  if (v > 0xffffffffu)
    throw std::invalid_argument(std::string("field '") + key +
                                "' is out of range: " + std::to_string(v));
  return static_cast<uint32_t>(v);
}

uint32_t u32_field_or(const json& j, const char* key, uint32_t fallback) {
  return j.contains(key) ? u32_field(j, key) : fallback;
}

int int_field_or(const json& j, const char* key, int fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < -(1 << 30) || v.get<int64_t>() > (1 << 30))
    throw std::invalid_argument(std::string("field '") + key +
                                "' is not an integer in range: " + v.dump());
  return static_cast<int>(v.get<int64_t>());
}

void to_json(json& j, const GpuActivity& a) {
  j = json{{"kind", activity_kind_name(a.kind)},
           {"name", a.name},
           {"start", a.start_ns},
           {"end", a.end_ns},
           {"correlation", a.correlation_id},
           {"stream", a.stream},
           {"bytes", a.bytes},
           {"device", a.device},
           {"context", a.context}};
  if (a.graph_id) j["graph"] = a.graph_id;
}

void from_json(const json& j, GpuActivity& a) {
  a.kind = kind_from(j.at("kind").get<std::string>());
  a.name = j.at("name").get<std::string>();
  a.start_ns = uint_field(j, "start");
  a.end_ns = uint_field(j, "end");
  a.correlation_id = u32_field(j, "correlation");
  a.stream = u32_field(j, "stream");
  a.bytes = uint_field(j, "bytes");
  a.device = u32_field_or(j, "device", 0);
  a.context = u32_field_or(j, "context", 0);
  a.graph_id = u32_field_or(j, "graph", 0);
}

void to_json(json& j, const ApiCall& c) {
  j = json{{"name", c.name},  {"start", c.start_ns},
           {"end", c.end_ns}, {"correlation", c.correlation_id},
           {"pid", c.pid},    {"tid", c.tid}};
}

void from_json(const json& j, ApiCall& c) {
  c.name = j.at("name").get<std::string>();
  c.start_ns = uint_field(j, "start");
  c.end_ns = uint_field(j, "end");
  c.correlation_id = u32_field(j, "correlation");
  c.pid = uint_field_or(j, "pid", 0);
  c.tid = uint_field_or(j, "tid", 0);
}

void to_json(json& j, const ExternalCorrelation& e) {
  j = json{{"correlation", e.correlation_id}, {"external", e.external_id}};
}

void from_json(const json& j, ExternalCorrelation& e) {
  e.correlation_id = u32_field(j, "correlation");
  e.external_id = uint_field(j, "external");
}

void to_json(json& j, const NvtxRange& r) {
  j = json{{"domain", r.domain}, {"name", r.name}, {"start", r.start_ns},
           {"end", r.end_ns},    {"pid", r.pid},   {"tid", r.tid}};
}

void from_json(const json& j, NvtxRange& r) {
  r.domain = j.at("domain").get<std::string>();
  r.name = j.at("name").get<std::string>();
  r.start_ns = uint_field(j, "start");
  r.end_ns = uint_field(j, "end");
  r.pid = uint_field_or(j, "pid", 0);
  r.tid = uint_field_or(j, "tid", 0);
}

void to_json(json& j, const TraceDevice& d) {
  j = json{{"id", d.id}, {"name", d.name}};
}

void from_json(const json& j, TraceDevice& d) {
  d.id = u32_field(j, "id");
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
  t.dropped = uint_field(h, "dropped");
  t.source = h.value("source", std::string("rooflens profile"));
  t.command = h.value("command", std::vector<std::string>{});
  t.devices = h.value("devices", std::vector<TraceDevice>{});
  t.complete = h.value("complete", true);
  t.incomplete_reason = h.value("incomplete_reason", std::string());
  t.exit_code = int_field_or(h, "exit_code", 0);
  t.notes = h.value("notes", std::vector<std::string>{});
}

}  // namespace rooflens::profiler
