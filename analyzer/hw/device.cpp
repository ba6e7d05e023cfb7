#include "analyzer/hw/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/devices_json.hpp"

namespace rooflens {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<Device> parse_devices() {
  auto root = nlohmann::json::parse(kDevicesJson);
  std::vector<Device> out;
  for (const auto& j : root.at("devices")) {
    Device d;
    d.id = j.at("id");
    d.name = j.at("name");
    d.aliases = j.value("aliases", std::vector<std::string>{});
    d.sm_count = j.at("sm_count");
    d.memory_bytes = j.at("memory_bytes");
    d.hbm_bandwidth = j.at("hbm_bandwidth");
    if (!j.at("l2_bytes").is_null()) d.l2_bytes = j.at("l2_bytes").get<int64_t>();
    if (!j.at("nvlink_bandwidth").is_null())
      d.nvlink_bandwidth = j.at("nvlink_bandwidth").get<double>();
    if (!j.at("pcie_bandwidth").is_null()) d.pcie_bandwidth = j.at("pcie_bandwidth").get<double>();
    d.launch_floor_s = j.at("launch_floor_s");
    if (j.contains("boost_clock_hz")) d.boost_clock_hz = j.at("boost_clock_hz").get<double>();
    d.tensor_flops = j.at("tensor_flops").get<std::map<std::string, double>>();
    d.cuda_core_flops = j.at("cuda_core_flops").get<std::map<std::string, double>>();
    d.sources = j.at("sources").get<std::map<std::string, std::string>>();
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

const std::vector<Device>& builtin_devices() {
  static const std::vector<Device> devices = parse_devices();
  return devices;
}

const Device& find_device(const std::string& name) {
  std::string want = lower(name);
  std::vector<std::string> ids;
  for (const Device& d : builtin_devices()) {
    ids.push_back(d.id);
    if (lower(d.id) == want) return d;
    for (const auto& a : d.aliases)
      if (lower(a) == want) return d;
  }
  throw InputError(fmt::format("unknown device '{}'; known: {} (see `rooflens devices`)", name,
                               fmt::join(ids, ", ")));
}

ComputeUnit compute_unit(const Device& d, Precision p, bool tensor_cores) {
  std::string key(precision_name(p));
  if (tensor_cores && p != Precision::fp32) {
    auto it = d.tensor_flops.find(key);
    if (it == d.tensor_flops.end())
      throw InputError(fmt::format(
          "device {} has no {} tensor-core rate; choose another --dtype or device", d.id, key));
    return {"tensor " + key, it->second};
  }
  // CUDA cores: half types at their own rate where published; fp8/int8 element-wise work runs
  // after conversion, at the fp16 rate; anything unpublished falls back to the fp32 rate.
  std::string k = key == "tf32" ? "fp32" : (key == "fp8" || key == "int8") ? "fp16" : key;
  auto it = d.cuda_core_flops.find(k);
  if (it == d.cuda_core_flops.end()) it = d.cuda_core_flops.find("fp32");
  if (it != d.cuda_core_flops.end()) return {"cuda " + it->first, it->second};
  throw InputError(fmt::format("device {} lists no CUDA-core rate", d.id));
}

}  // namespace rooflens
