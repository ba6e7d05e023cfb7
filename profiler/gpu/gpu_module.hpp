#pragma once
// The GPU part of rooflens as a module loaded on demand: `rooflens` (analyze, report, devices)
// links no CUDA library; profile and calibrate load librooflens_gpu.so, built beside it, with
// dlopen. This header is the boundary, CUDA-free: the binary includes it, the module exports
// one table of entry points. No exception crosses it: each entry reports a Status.
#include <optional>
#include <string>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/gpu/calibrate.hpp"
#include "profiler/gpu/harness.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::gpu {

// Bumped whenever this table or anything it passes changes.
inline constexpr int kModuleAbi = 4;

struct Status {
  int code = 0;  // 0 ok, 2 bad input or missing hardware (one line), 1 GPU or internal failure
  std::string message;
};

struct ModuleApi {
  int abi = 0;
  const char* build_id = nullptr;  // the build that made the module; the binary must match it
  // Points NVTX at CUPTI's injection library; before the first NVTX call.
  void (*prepare_nvtx_injection)() = nullptr;
  // The GPU this process would run on, by the driver's name; Status 2 when there is none.
  void (*device_name)(std::string&, Status&) = nullptr;
  void (*calibrate)(const profiler::CalibrateOptions&, DeviceProfile&, Status&) = nullptr;
  // Replays the analysis by its plans (one per node); the measurements come back, the analysis
  // is only read.
  void (*profile)(const Analysis&, const std::vector<replay::ReplayDecision>&,
                  const profiler::ProfileOptions&, ProfileMeasurements&, profiler::Trace*,
                  Status&) = nullptr;
  // GPUs this process sees; Status 2 when there is none.
  void (*device_count)(int&, Status&) = nullptr;
  // A fresh NCCL unique id as hex (profile --tp N hands it to every rank); Status 2 without NCCL.
  void (*nccl_unique_id)(const std::string& nccl_dir, std::string&, Status&) = nullptr;
};

// The binary's side: finds the module ($ROOFLENS_GPU_MODULE, then beside the executable, then
// ../lib from it), loads it once and checks its ABI and build. InputError with one line naming
// what is missing (the module, the CUDA runtime, the driver) when it cannot.
const ModuleApi& load_gpu_module();

// The build id this binary was made with.
const char* build_id();

}  // namespace rooflens::gpu

extern "C" const rooflens::gpu::ModuleApi* rooflens_gpu_module();
