#pragma once
// The device database (data/devices.json, compiled in): spec roofs with a source per number.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/hw/collective_curves.hpp"
#include "analyzer/hw/perf_table.hpp"

namespace rooflens {

// The host's time in eager PyTorch training, measured on the machine a profile was calibrated on
// (scripts/gpu/eager_host_per_kernel.py; docs/training.md): per kernel a phase launches, and per
// optimizer step. The training step's timeline queues the GPU behind it.
struct EagerHostCosts {
  double forward_kernel_s = 0, backward_kernel_s = 0;
  // Under gradient checkpointing (the backward includes the recomputed forward's kernels).
  double checkpointed_forward_kernel_s = 0, checkpointed_backward_kernel_s = 0;
  double adamw_fixed_s = 0, adamw_tensor_s = 0;  // foreach AdamW: per step, per parameter tensor
  double sgd_fixed_s = 0, sgd_tensor_s = 0;
  std::string source;
  // Inference under no_grad (scripts/gpu/eager_inference_wall.py): the host's time per forward
  // call and per kernel it launches, per phase, and what generate()'s loop adds per new token.
  // Absent (zero) in profiles measured before them.
  double inference_prefill_fixed_s = 0, inference_prefill_kernel_s = 0;
  double inference_decode_fixed_s = 0, inference_decode_kernel_s = 0;
  double inference_generate_token_s = 0;
  std::string inference_source;
  bool inference_measured() const { return inference_decode_kernel_s > 0; }
  // What FSDP2 (fully_shard per decoder layer and the root) adds to the training step's host time
  // beside the kernels' own (scripts/dev/fit_fsdp_host.py): per forward and per backward a fixed
  // part and a part per layer unit, and its AdamW over sharded parameters. Zero: not measured.
  double fsdp_forward_fixed_s = 0, fsdp_forward_layer_s = 0;
  double fsdp_backward_fixed_s = 0, fsdp_backward_layer_s = 0;
  double fsdp_optimizer_s = 0;
  std::string fsdp_source;
  bool fsdp_measured() const { return fsdp_backward_layer_s > 0; }
};

struct Device {
  std::string id, name;
  std::vector<std::string> aliases;
  int64_t sm_count = 0;
  int64_t memory_bytes = 0;
  double hbm_bandwidth = 0;                // bytes/s
  std::optional<int64_t> l2_bytes;         // nullopt: not published
  std::optional<double> nvlink_bandwidth;  // both directions together, as NVIDIA quotes it
  std::optional<double> pcie_bandwidth;    // per direction
  double launch_floor_s = 0;
  // The shortest tiled matrix-unit GEMM: the launch plus the first tiles' loads before any MMA
  // and the epilogue after the last. 0: not measured, tiled kernels use launch_floor_s.
  double gemm_floor_s = 0;
  std::map<std::string, double> tensor_flops;     // tf32, bf16, fp16, fp8, int8
  std::map<std::string, double> cuda_core_flops;  // fp64, fp32, fp16, bf16
  std::map<std::string, std::string> sources;
  std::string roofs = "spec";  // "spec", "calibrated" (measured) or "derived" (derived_profile.hpp)
  std::optional<double> boost_clock_hz;  // the spec's max boost clock, where published
  std::optional<double> l2_bandwidth;    // measured by `rooflens calibrate`; no spec figure exists
  std::shared_ptr<const Device> spec;    // calibrated devices: the spec roofs they replace
  std::string profile_gpu;               // calibrated: the GPU name the driver reported
  std::string profile_source;       // calibrated: the profile's file, or the shipped one's name
  double profile_sm_clock_mhz = 0;  // calibrated: SM clock while measuring
  // Calibrated: kernel times measured over shape grids (perf_model.hpp); predictions use them
  // where a node's shape lies inside one.
  std::shared_ptr<const PerfDatabase> perf;
  std::optional<EagerHostCosts> eager_host;  // calibrated profiles that measured it
  // `serve`: all-reduces may take the one-shot/two-shot peer-memory kernels serving engines run
  // for small messages (analyzer/hw/link_model.hpp); otherwise NCCL's ring or tree.
  bool engine_collectives = false;
  // `serve`: a MoE layer's tokens go to the experts a random top-k routing touches (its expected
  // distinct experts, several rows each at a few tokens), not round-robin as the replay sends
  // them (every expert with rows once assignments reach the experts), and a gated layer's gate
  // and up projections run as one of twice the width.
  bool engine_routing = false;
  // Calibrated with --gpus N: collectives measured through NCCL; the link model prices from them.
  std::shared_ptr<const std::vector<CollectiveCurveSet>> collective_curves;
};

// The unit and rate a node computes at; InputError when the device lacks that precision.
struct ComputeUnit {
  std::string name;
  double flops;
};
ComputeUnit compute_unit(const Device& d, Precision p, bool tensor_cores);

const std::vector<Device>& builtin_devices();
// By id or alias, case-insensitive; InputError listing the known ids otherwise.
const Device& find_device(const std::string& name);
// The device database entry for a driver-reported name ("NVIDIA H100 80GB HBM3"); nullopt
// when none matches.
std::optional<Device> device_for_gpu_name(const std::string& gpu_name, int64_t sm_count);

// A measured device profile (`rooflens calibrate`): achievable roofs of one GPU.
struct DeviceProfile {
  std::string base_device;  // id in the database
  std::string gpu;
  double sm_clock_mhz = 0;
  double hbm_bandwidth = 0, l2_bandwidth = 0;
  std::map<std::string, double> tensor_flops, cuda_core_flops;  // only what was measured
  double launch_floor_s = 0;                                    // shortest kernel on the timeline
  double gemm_floor_s = 0;  // shortest tiled GEMM; 0 in profiles written before it was measured
  double launch_interval_s = 0;               // back-to-back launches, per launch
  std::map<std::string, std::string> method;  // how each figure was measured
  std::string provenance;  // the JSON object saying how the file was made (scripts, machine,
                           // dates), kept verbatim
  PerfDatabase tables;     // empty in profiles written before schema 2
  std::optional<EagerHostCosts> eager_host;  // scripts/gpu/eager_host_per_kernel.py --pool adds it
  std::vector<CollectiveCurveSet> collectives;  // calibrate --gpus N; one set per GPU count
  std::string source;                           // the file it was read from
  bool shipped = false;                         // one of data/profiles/, compiled in
  std::string derived_from;                     // derive_profile: the measured device's id
};
std::string device_profile_json(const DeviceProfile& p);     // schema "rooflens-device-profile" 1
DeviceProfile read_device_profile(const std::string& path);  // InputError on a bad file
// The measured profile rooflens ships for a device id (data/profiles/), nullopt when none: the
// default for that device, because measured roofs and tables beat the spec sheet.
std::optional<DeviceProfile> shipped_profile(const std::string& device_id);
// The spec device with the measured roofs in place; unmeasured roofs stay spec.
Device calibrated_device(const DeviceProfile& p);

}  // namespace rooflens
