#include "reports/saved_result.hpp"

#include <fmt/format.h>

#include <fstream>

#include "analyzer/core/errors.hpp"
#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {

using nlohmann::json;

json read_json_file(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", name));
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", name, e.what()));
  }
}

SavedResult read_result(const std::string& path) {
  json j = read_json_file(path, path);
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_string() ||
      !j.contains("nodes"))
    throw InputError(fmt::format("{}: not a rooflens result (no schema_version and nodes)", path));
  std::string v = j["schema_version"], mine = kJsonSchemaVersion;
  std::string major = v.substr(0, v.find('.')), my_major = mine.substr(0, mine.find('.'));
  if (major != my_major)
    throw InputError(
        fmt::format("{}: schema version {} has major {}; this rooflens reads major {} ({})", path,
                    v, major, my_major, mine));
  for (const char* key :
       {"model", "device", "totals", "memory", "coverage", "by_op", "by_block", "dtype", "tool"})
    if (!j.contains(key))
      throw InputError(fmt::format("{}: rooflens result without '{}'", path, key));
  if (!j["nodes"].is_array()) throw InputError(fmt::format("{}: 'nodes' is not an array", path));
  try {
    upgrade_older_minor(j);
  } catch (const json::exception& e) {
    throw InputError(
        fmt::format("{}: rooflens result with a missing or mistyped field: {}", path, e.what()));
  }
  return {std::move(j)};
}

void upgrade_older_minor(json& j) {
  json& model = j.at("model");
  if (!model.contains("name"))
    model["name"] = model_display_name(model.at("path").get<std::string>());
  for (json& in : model.at("inputs"))
    if (!in.contains("kv_cache")) in["kv_cache"] = false;
  if (!j.at("device").contains("requested")) j["device"]["requested"] = nullptr;
  json& totals = j.at("totals");
  if (!totals.contains("throughput_unit"))
    totals["throughput_unit"] = j.contains("transformer") ? "tokens/s" : "samples/s";
  json& memory = j.at("memory");
  const json* fit = j.contains("transformer") ? &j["transformer"].at("memory") : nullptr;
  if (!memory.contains("kv_cache_bytes"))
    memory["kv_cache_bytes"] = fit ? fit->at("kv_cache_bytes") : json(0);
  if (!memory.contains("activation_bytes"))
    memory["activation_bytes"] =
        fit ? fit->at("activation_bytes") : memory.at("peak_activation_bytes");
  if (!memory.contains("peak_node_index")) {
    int64_t index = -1;
    for (const json& n : j.at("nodes"))
      if (n.at("name") == memory.at("peak_node")) index = n.at("index").get<int64_t>();
    memory["peak_node_index"] = index;
  }
  if (j.contains("transformer")) {
    json& t = j["transformer"];
    for (const char* key : {"experts", "experts_per_token", "shared_experts"})
      if (!t.contains(key)) t[key] = 0;  // 1.2 did not say: no experts line
    if (!t.contains("mla")) t["mla"] = false;
    if (!t.contains("group_size")) t["group_size"] = 128;
  }
  for (json& n : j.at("nodes"))
    if (n.contains("measured") && n["measured"].contains("median_s") &&
        !n["measured"].contains("relative_iqr")) {
      json& m = n["measured"];
      double median = m.at("median_s").get<double>();
      m["relative_iqr"] =
          median > 0 ? (m.at("q3_s").get<double>() - m.at("q1_s").get<double>()) / median : 0.0;
    }
}

}  // namespace rooflens::reports
