#include "profiler/trace_io.hpp"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/errors.hpp"

namespace rooflens::profiler {

using nlohmann::json;

namespace {

const char* kind_name(GpuActivity::Kind k) {
  switch (k) {
    case GpuActivity::Kind::kernel: return "kernel";
    case GpuActivity::Kind::memcpy: return "memcpy";
    case GpuActivity::Kind::memset: return "memset";
  }
  return "kernel";
}

GpuActivity::Kind kind_from(const std::string& s) {
  if (s == "kernel") return GpuActivity::Kind::kernel;
  if (s == "memcpy") return GpuActivity::Kind::memcpy;
  if (s == "memset") return GpuActivity::Kind::memset;
  throw InputError(fmt::format("trace: unknown activity kind '{}'", s));
}

}  // namespace

void write_trace(std::ostream& out, const Trace& t) {
  json j;
  j["trace_version"] = 1;
  j["gpu"] = t.gpu;
  j["sm_clock_mhz"] = t.sm_clock_mhz;
  j["dropped"] = t.dropped;
  json acts = json::array();
  for (const auto& a : t.activities)
    acts.push_back({{"kind", kind_name(a.kind)}, {"name", a.name}, {"start", a.start_ns}, {"end", a.end_ns},
                    {"correlation", a.correlation_id}, {"stream", a.stream}, {"bytes", a.bytes}});
  j["activities"] = std::move(acts);
  json api = json::array();
  for (const auto& c : t.api_calls)
    api.push_back({{"name", c.name}, {"start", c.start_ns}, {"end", c.end_ns}, {"correlation", c.correlation_id}});
  j["api_calls"] = std::move(api);
  json ext = json::array();
  for (const auto& e : t.externals) ext.push_back({{"correlation", e.correlation_id}, {"external", e.external_id}});
  j["externals"] = std::move(ext);
  json ranges = json::array();
  for (const auto& r : t.ranges) ranges.push_back({{"domain", r.domain}, {"name", r.name}, {"start", r.start_ns}, {"end", r.end_ns}});
  j["ranges"] = std::move(ranges);
  out << j.dump(1, ' ', false, json::error_handler_t::replace) << '\n';
}

Trace read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  try {
    json j = json::parse(in);
    if (j.value("trace_version", 0) != 1) throw InputError(fmt::format("{}: not a rooflens trace (trace_version 1)", path));
    Trace t;
    t.gpu = j.at("gpu").get<std::string>();
    t.sm_clock_mhz = j.at("sm_clock_mhz").get<double>();
    t.dropped = j.at("dropped").get<uint64_t>();
    for (const auto& a : j.at("activities"))
      t.activities.push_back({kind_from(a.at("kind").get<std::string>()), a.at("name").get<std::string>(),
                              a.at("start").get<uint64_t>(), a.at("end").get<uint64_t>(),
                              a.at("correlation").get<uint32_t>(), a.at("stream").get<uint32_t>(),
                              a.at("bytes").get<uint64_t>()});
    for (const auto& c : j.at("api_calls"))
      t.api_calls.push_back({c.at("name").get<std::string>(), c.at("start").get<uint64_t>(), c.at("end").get<uint64_t>(),
                             c.at("correlation").get<uint32_t>()});
    for (const auto& e : j.at("externals"))
      t.externals.push_back({e.at("correlation").get<uint32_t>(), e.at("external").get<uint64_t>()});
    for (const auto& r : j.at("ranges"))
      t.ranges.push_back({r.at("domain").get<std::string>(), r.at("name").get<std::string>(), r.at("start").get<uint64_t>(),
                          r.at("end").get<uint64_t>()});
    return t;
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not a rooflens trace: {}", path, e.what()));
  }
}

}  // namespace rooflens::profiler
