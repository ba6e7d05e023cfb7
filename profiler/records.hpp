#pragma once
// Plain records of one profiled run, as CUPTI's Activity API reports them but owned by us: the
// CUDA side (cupti_session) fills them, everything else (attribution, statistics, tests on
// recorded traces) reads them without a GPU.
#include <cstdint>
#include <string>
#include <vector>

namespace rooflens::profiler {

struct GpuActivity {
  enum class Kind { kernel, memcpy, memset };
  Kind kind = Kind::kernel;
  std::string name;  // kernel name (mangled as the driver reports it); "memset"/"memcpy HtoD"...
  uint64_t start_ns = 0, end_ns = 0;  // GPU timestamps
  uint32_t correlation_id = 0;        // ties the activity to the API call that launched it
  uint32_t stream = 0;
  uint64_t bytes = 0;                 // memcpy/memset
};

// A runtime or driver API call on the host (cudaLaunchKernel, cuLaunchKernelEx...).
struct ApiCall {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;  // host timestamps, same clock as the NVTX markers
  uint32_t correlation_id = 0;
};

// CUPTI external correlation: the id we pushed around a launch, per CUPTI correlation id.
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// An NVTX push/pop range, start and end paired.
struct NvtxRange {
  std::string domain, name;
  uint64_t start_ns = 0, end_ns = 0;
};

struct Trace {
  std::string gpu;
  double sm_clock_mhz = 0;
  std::vector<GpuActivity> activities;
  std::vector<ApiCall> api_calls;
  std::vector<ExternalCorrelation> externals;
  std::vector<NvtxRange> ranges;
  uint64_t dropped = 0;  // records CUPTI could not store
};

// The id pushed around layer `layer`, sample `sample`: both recoverable from the id.
uint64_t external_id(int layer, int sample);
int layer_of(uint64_t external_id);
int sample_of(uint64_t external_id);
// NVTX range name of one sample of a layer: the layer path, then "#sample".
std::string range_name(const std::string& layer_path, int sample);

}  // namespace rooflens::profiler
