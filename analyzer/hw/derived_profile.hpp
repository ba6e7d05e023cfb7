#pragma once
// A device profile for a GPU that nobody measured here, derived from one that was measured: the
// measured GPU's efficiencies carried to the target through the target's own spec numbers.
//   roofs    each measured roof's fraction of its spec figure (HBM 3.04 of 3.35 TB/s on the H100)
//            times the target's spec figure; L2 bandwidth per SM per clock times the target's SM
//            count and boost clock;
//   tables   each measured point's time above the launch floor scaled by the ratio of the
//            roofline times of its work on the two GPUs: the target reaches the same fraction of
//            its roofs, shape by shape;
//   floors   the measured launch and GEMM floors and host costs, in seconds (the driver and the
//            GPU's front end set them, not its roofs).
// What it cannot carry: wave quantization at the target's SM count, another memory technology
// (GDDR) or cache size, and kernels the target's libraries pick differently (docs/profile.md gives
// the error against published measurements).
#include <optional>
#include <string>

#include "analyzer/hw/device.hpp"

namespace rooflens {

DeviceProfile derive_profile(const DeviceProfile& measured, const Device& target);
// The profile a device is predicted with by default: the measured one rooflens ships for it, else
// one derived from the shipped H100 profile (the only GPU measured here).
std::optional<DeviceProfile> default_profile(const std::string& device_id);

}  // namespace rooflens
