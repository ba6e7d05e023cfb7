#include "reports/saved_result.hpp"

#include <fmt/format.h>

#include <fstream>

#include "analyzer/errors.hpp"
#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {

using nlohmann::json;

SavedResult read_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_string() || !j.contains("nodes"))
    throw InputError(fmt::format("{}: not a rooflens result (no schema_version and nodes)", path));
  std::string v = j["schema_version"], mine = kJsonSchemaVersion;
  std::string major = v.substr(0, v.find('.')), my_major = mine.substr(0, mine.find('.'));
  if (major != my_major)
    throw InputError(fmt::format("{}: schema version {} has major {}; this rooflens reads major {} ({})", path, v, major, my_major, mine));
  for (const char* key : {"model", "device", "totals", "memory", "coverage", "by_op", "by_block", "dtype", "tool"})
    if (!j.contains(key)) throw InputError(fmt::format("{}: rooflens result without '{}'", path, key));
  if (!j["nodes"].is_array()) throw InputError(fmt::format("{}: 'nodes' is not an array", path));
  return {std::move(j)};
}

std::string summary_from_json(const json& r, int top_n) {
  try {
    std::string s = fmt::format("model    {}\ndevice   {} ({} roofs)\ndtype    {}\n", r.at("model").at("path").get<std::string>(),
                                r.at("device").at("id").get<std::string>(), r.at("device").at("roofs").get<std::string>(),
                                r.at("dtype").get<std::string>());
    const json& t = r.at("totals");
    s += fmt::format("FLOPs    {}   params {}   predicted {}\n", human_count(t.at("flops").get<double>()),
                     with_commas(t.at("params").get<int64_t>()), human_time(t.at("predicted_s").get<double>()));
    if (r.contains("profile") && r["profile"].at("measured").get<int>() > 0) {
      const json& p = r["profile"];
      s += fmt::format("measured {} on {} over {} layers; per-layer |error| median {:.1f}%, p90 {:.1f}%{}\n",
                       human_time(p.at("measured_s").get<double>()), p.at("gpu").get<std::string>(), p.at("measured").get<int>(),
                       100 * p.at("median_abs_error").get<double>(), 100 * p.at("p90_abs_error").get<double>(),
                       p.at("valid").get<bool>() ? "" : " (INVALID run)");
    }
    s += "top ops by predicted time:\n";
    int shown = 0;
    for (const json& o : r.at("by_op")) {
      if (shown++ >= top_n) break;
      s += fmt::format("  {:<28} x{:<5} {}\n", fit(o.at("op").get<std::string>(), 28), o.at("count").get<int>(),
                       human_time(o.at("predicted_s").get<double>()));
    }
    s += fmt::format("coverage: {}\n", r.at("coverage").at("line").get<std::string>());
    return s;
  } catch (const json::exception& e) {
    throw InputError(fmt::format("result is missing a field: {}", e.what()));
  }
}

}  // namespace rooflens::reports
