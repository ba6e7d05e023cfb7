#pragma once
// The device database (data/devices.json, compiled in): spec roofs with a source per number.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/dtype.hpp"

namespace rooflens {

struct Device {
  std::string id, name;
  std::vector<std::string> aliases;
  int64_t sm_count = 0;
  int64_t memory_bytes = 0;
  double hbm_bandwidth = 0;             // bytes/s
  std::optional<int64_t> l2_bytes;      // nullopt: not published
  std::optional<double> nvlink_bandwidth;  // both directions together, as NVIDIA quotes it
  std::optional<double> pcie_bandwidth;    // per direction
  double launch_floor_s = 0;
  std::map<std::string, double> tensor_flops;     // tf32, bf16, fp16, fp8, int8
  std::map<std::string, double> cuda_core_flops;  // fp64, fp32, fp16, bf16
  std::map<std::string, std::string> sources;
  std::string roofs = "spec";  // "spec" or "calibrated"
};

const std::vector<Device>& builtin_devices();
// By id or alias, case-insensitive; InputError listing the known ids otherwise.
const Device& find_device(const std::string& name);

}  // namespace rooflens
