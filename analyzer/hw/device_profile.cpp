// Device profiles: what `rooflens calibrate` measured, as JSON, and the calibrated Device.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/hw/shipped_profiles.hpp"

namespace rooflens {

namespace {
std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
// Current schema: 2 adds the measured tables; 1 (roofs and floors only) still loads.
constexpr int kProfileSchema = 2;

nlohmann::json tables_json(const PerfDatabase& db) {
  nlohmann::json tables = nlohmann::json::object();
  for (const auto& [key, t] : db.tables) {
    nlohmann::json seconds = nlohmann::json::array();
    // Four significant digits: below the run-to-run spread of any kernel, and short in JSON.
    for (double v : t.seconds)
      seconds.push_back(v > 0 ? nlohmann::json(std::stod(fmt::format("{:.4g}", v)))
                              : nlohmann::json());
    tables[key] = {{"axes", t.axes}, {"grid", t.grid}, {"seconds", seconds}};
  }
  return tables;
}

// A table as stored; InputError naming the table and what is wrong with it.
PerfTable table_from_json(const std::string& path, const std::string& key,
                          const nlohmann::json& j) {
  PerfTable t;
  t.axes = j.at("axes").get<std::vector<std::string>>();
  t.grid = j.at("grid").get<std::vector<std::vector<double>>>();
  auto bad = [&](const std::string& what) {
    return InputError(fmt::format("{}: table {}: {}", path, key, what));
  };
  if (t.axes.empty() || t.axes.size() != t.grid.size() || t.axes.size() > 6)
    throw bad("axes and grid disagree");
  for (const auto& g : t.grid) {
    if (g.empty()) throw bad("an axis without values");
    for (size_t i = 0; i < g.size(); ++i)
      if (!(g[i] > 0) || !std::isfinite(g[i]) || (i > 0 && !(g[i] > g[i - 1])))
        throw bad("axis values must be positive and ascending");
  }
  const nlohmann::json& s = j.at("seconds");
  if (!s.is_array() || s.size() != t.size())
    throw bad(fmt::format("{} times for a grid of {}", s.size(), t.size()));
  t.seconds.reserve(s.size());
  for (const auto& v : s) {
    if (v.is_null()) {
      t.seconds.push_back(std::numeric_limits<double>::quiet_NaN());  // not measured
      continue;
    }
    double x = v.get<double>();
    if (!(x > 0) || !std::isfinite(x) || x > 100)
      throw bad(fmt::format("time {} is not a measured kernel time", x));
    t.seconds.push_back(x);
  }
  return t;
}
}  // namespace

std::optional<Device> device_for_gpu_name(const std::string& gpu_name, int64_t sm_count) {
  std::string n = lowered(gpu_name);
  // Driver names: "NVIDIA H100 80GB HBM3" (SXM, 132 SMs), "NVIDIA H100 PCIe" (114 SMs),
  // "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA GeForce RTX 4090".
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  const char* id = nullptr;
  if (has("h200"))
    id = "H200";
  else if (has("h100"))
    id = has("pcie") || sm_count == 114 ? "H100-PCIe" : "H100-SXM";
  else if (has(" h20"))
    id = "H20";
  else if (has("a100"))
    id = has("40gb") || has("pcie") ? "A100-PCIe-40GB" : "A100-SXM-80GB";
  else if (has(" a30"))
    id = "A30";
  else if (has("l40s"))
    id = "L40S";
  else if (has(" l4"))
    id = "L4";
  else if (has("4090"))
    id = "RTX4090";
  else if (has("gb200"))
    id = "GB200";
  else if (has("b200"))
    id = "B200";
  else if (has("b300"))
    id = "B300";
  else if (has("rtx pro 6000"))
    id = has("server") ? "RTXPRO6000-SE" : "RTXPRO6000-WS";
  if (!id) return std::nullopt;
  return find_device(id);
}

namespace {

// The "eager_host" keys: the training step's (every profile that has the object), then
// inference's (profiles measured since scripts/gpu/eager_inference_wall.py).
using HostField = std::pair<double EagerHostCosts::*, const char*>;
const HostField kEagerHostFields[] = {
    {&EagerHostCosts::forward_kernel_s, "forward_kernel_s"},
    {&EagerHostCosts::backward_kernel_s, "backward_kernel_s"},
    {&EagerHostCosts::checkpointed_forward_kernel_s, "checkpointed_forward_kernel_s"},
    {&EagerHostCosts::checkpointed_backward_kernel_s, "checkpointed_backward_kernel_s"},
    {&EagerHostCosts::adamw_fixed_s, "adamw_fixed_s"},
    {&EagerHostCosts::adamw_tensor_s, "adamw_tensor_s"},
    {&EagerHostCosts::sgd_fixed_s, "sgd_fixed_s"},
    {&EagerHostCosts::sgd_tensor_s, "sgd_tensor_s"}};
const HostField kInferenceFields[] = {
    {&EagerHostCosts::inference_prefill_fixed_s, "inference_prefill_fixed_s"},
    {&EagerHostCosts::inference_prefill_kernel_s, "inference_prefill_kernel_s"},
    {&EagerHostCosts::inference_decode_fixed_s, "inference_decode_fixed_s"},
    {&EagerHostCosts::inference_decode_kernel_s, "inference_decode_kernel_s"},
    {&EagerHostCosts::inference_generate_token_s, "inference_generate_token_s"}};
const HostField kFsdpFields[] = {{&EagerHostCosts::fsdp_forward_fixed_s, "fsdp_forward_fixed_s"},
                                 {&EagerHostCosts::fsdp_forward_layer_s, "fsdp_forward_layer_s"},
                                 {&EagerHostCosts::fsdp_backward_fixed_s, "fsdp_backward_fixed_s"},
                                 {&EagerHostCosts::fsdp_backward_layer_s, "fsdp_backward_layer_s"},
                                 {&EagerHostCosts::fsdp_optimizer_s, "fsdp_optimizer_s"}};

}  // namespace

std::string device_profile_json(const DeviceProfile& p) {
  nlohmann::json j;
  j["schema"] = "rooflens-device-profile";
  j["schema_version"] = kProfileSchema;
  j["base_device"] = p.base_device;
  j["gpu"] = p.gpu;
  j["sm_clock_mhz"] = p.sm_clock_mhz;
  j["hbm_bandwidth"] = p.hbm_bandwidth;
  j["l2_bandwidth"] = p.l2_bandwidth;
  j["tensor_flops"] = p.tensor_flops;
  j["cuda_core_flops"] = p.cuda_core_flops;
  j["launch_floor_s"] = p.launch_floor_s;
  if (p.gemm_floor_s > 0) j["gemm_floor_s"] = p.gemm_floor_s;
  j["launch_interval_s"] = p.launch_interval_s;
  j["method"] = p.method;
  if (!p.provenance.empty()) j["provenance"] = nlohmann::json::parse(p.provenance);
  if (!p.derived_from.empty())
    j["derived_from"] = p.derived_from;  // its roofs stay labelled derived
  if (!p.tables.empty()) {
    j["tables"] = tables_json(p.tables);
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [k, val] : p.tables.validation)
      v[k] = {{"shapes", val.shapes},
              {"median_abs_error", val.median_abs},
              {"p90_abs_error", val.p90_abs}};
    j["validation"] = v;
  }
  if (p.eager_host) {
    const EagerHostCosts& e = *p.eager_host;
    nlohmann::json& h = j["eager_host"];
    for (auto [field, key] : kEagerHostFields) h[key] = e.*field;
    h["source"] = e.source;
    if (e.inference_measured()) {
      for (auto [field, key] : kInferenceFields) h[key] = e.*field;
      h["inference_source"] = e.inference_source;
    }
    if (e.fsdp_measured()) {
      for (auto [field, key] : kFsdpFields) h[key] = e.*field;
      h["fsdp_source"] = e.fsdp_source;
    }
  }
  if (!p.collectives.empty()) j["collectives"] = collective_curves_json(p.collectives);
  // Compact: the tables hold thousands of numbers.
  return j.dump(-1) + "\n";
}

namespace {

// The profile's "eager_host" object: the host's cost per kernel eager PyTorch launches.
EagerHostCosts eager_host_from_json(const nlohmann::json& e, const std::string& path) {
  EagerHostCosts h;
  auto seconds = [&](double EagerHostCosts::*field, const char* key) {
    h.*field = e.at(key).get<double>();
    if (!(h.*field >= 0) || h.*field > 1)
      throw InputError(fmt::format("{}: eager_host.{} must be seconds between 0 and 1", path, key));
  };
  for (auto [field, key] : kEagerHostFields) seconds(field, key);
  h.source = e.value("source", "");
  if (e.contains("inference_decode_kernel_s")) {
    for (auto [field, key] : kInferenceFields) seconds(field, key);
    h.inference_source = e.value("inference_source", "");
  }
  if (e.contains("fsdp_backward_layer_s")) {  // profiles since scripts/dev/fit_fsdp_host.py
    for (auto [field, key] : kFsdpFields) seconds(field, key);
    h.fsdp_source = e.value("fsdp_source", "");
  }
  return h;
}

// `path` names the profile in errors: the file given, or the shipped profile's name.
DeviceProfile parse_device_profile(std::istream& in, const std::string& path) {
  try {
    auto j = nlohmann::json::parse(in);
    if (j.value("schema", "") != "rooflens-device-profile")
      throw InputError(fmt::format(
          "{}: not a rooflens device profile (schema \"rooflens-device-profile\")", path));
    int version = j.at("schema_version").get<int>();
    if (version < 1 || version > kProfileSchema)
      throw InputError(
          fmt::format("{}: device profile schema version {} (this rooflens reads 1 to {})", path,
                      version, kProfileSchema));
    DeviceProfile p;
    p.base_device = j.at("base_device").get<std::string>();
    p.gpu = j.at("gpu").get<std::string>();
    p.sm_clock_mhz = j.at("sm_clock_mhz").get<double>();
    p.hbm_bandwidth = j.at("hbm_bandwidth").get<double>();
    p.l2_bandwidth = j.at("l2_bandwidth").get<double>();
    p.tensor_flops = j.at("tensor_flops").get<std::map<std::string, double>>();
    p.cuda_core_flops = j.at("cuda_core_flops").get<std::map<std::string, double>>();
    p.launch_floor_s = j.at("launch_floor_s").get<double>();
    p.launch_interval_s = j.value("launch_interval_s", 0.0);
    p.gemm_floor_s = j.value("gemm_floor_s", 0.0);
    if (!(p.gemm_floor_s >= 0) || p.gemm_floor_s > 1)
      throw InputError(fmt::format("{}: gemm_floor_s must be a positive figure", path));
    p.method = j.value("method", std::map<std::string, std::string>{});
    if (j.contains("provenance"))
      p.provenance = j.at("provenance").dump();  // calibrate --add-to keeps it
    p.derived_from = j.value("derived_from", "");
    auto positive = [&](double v, const char* what) {
      if (!(v > 0) || v > 1e18)
        throw InputError(fmt::format("{}: {} must be a positive figure", path, what));
    };
    positive(p.hbm_bandwidth, "hbm_bandwidth");
    positive(p.launch_floor_s, "launch_floor_s");
    for (const auto* m : {&p.tensor_flops, &p.cuda_core_flops})
      for (const auto& [k, v] : *m) positive(v, k.c_str());
    if (j.contains("tables"))
      for (const auto& [key, t] : j.at("tables").items())
        p.tables.tables[key] = table_from_json(path, key, t);
    if (j.contains("validation"))
      for (const auto& [key, v] : j.at("validation").items())
        p.tables.validation[key] = {v.at("shapes").get<int>(),
                                    v.at("median_abs_error").get<double>(),
                                    v.at("p90_abs_error").get<double>()};
    if (j.contains("eager_host")) p.eager_host = eager_host_from_json(j.at("eager_host"), path);
    if (j.contains("collectives"))
      p.collectives = collective_curves_from_json(j.at("collectives"), path);
    find_device(p.base_device);  // must exist
    p.source = path;
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a device profile: {}", path, e.what()));
  }
}

}  // namespace

DeviceProfile read_device_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open device profile", path));
  return parse_device_profile(in, path);
}

std::optional<DeviceProfile> shipped_profile(const std::string& device_id) {
  // Parsed once a process: a device without its own profile asks again for the H100's to derive
  // from, and the Python package analyzes many models in one process.
  static const std::vector<DeviceProfile> shipped = [] {
    std::vector<DeviceProfile> all;
    for (const auto& [name, text] : kShippedProfiles) {
      if (!name) break;
      std::istringstream in(text);
      all.push_back(parse_device_profile(in, name));
      all.back().shipped = true;
    }
    return all;
  }();
  for (const DeviceProfile& p : shipped)
    if (lowered(p.base_device) == lowered(device_id)) return p;
  return std::nullopt;
}

Device calibrated_device(const DeviceProfile& p) {
  Device spec = find_device(p.base_device);
  Device d = spec;
  d.spec = std::make_shared<const Device>(spec);
  d.roofs = p.derived_from.empty() ? "calibrated" : "derived";
  d.hbm_bandwidth = p.hbm_bandwidth;
  if (p.l2_bandwidth > 0) d.l2_bandwidth = p.l2_bandwidth;
  for (const auto& [k, v] : p.tensor_flops) d.tensor_flops[k] = v;
  for (const auto& [k, v] : p.cuda_core_flops) d.cuda_core_flops[k] = v;
  d.launch_floor_s = p.launch_floor_s;
  d.gemm_floor_s = p.gemm_floor_s;
  d.profile_gpu = p.gpu;
  d.profile_source = !p.derived_from.empty() ? p.source
                     : p.shipped             ? "measured profile " + p.source + ", shipped"
                                             : "measured profile " + p.source;
  d.profile_sm_clock_mhz = p.sm_clock_mhz;
  for (const auto& [k, v] : p.method) d.sources[k] = "measured: " + v;
  if (!p.tables.empty()) d.perf = std::make_shared<const PerfDatabase>(p.tables);
  d.eager_host = p.eager_host;
  if (!p.collectives.empty())
    d.collective_curves = std::make_shared<const std::vector<CollectiveCurveSet>>(p.collectives);
  return d;
}

}  // namespace rooflens
