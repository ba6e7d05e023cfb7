#pragma once
// Plain records of one profiled run, as CUPTI's Activity API reports them but owned by us: the
// CUDA side (cupti_session, the `rooflens record` injection library) fills them, everything else
// (attribution, statistics, `compare`, tests on recorded traces) reads them without a GPU. A
// PyTorch profiler trace is read into the same records (pytorch_trace.hpp).
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
  uint64_t bytes = 0;  // memcpy/memset
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t graph_id = 0;  // non-zero: a node of a CUDA graph (launched by cudaGraphLaunch)
};

// A runtime or driver API call on the host (cudaLaunchKernel, cuLaunchKernelEx...).
struct ApiCall {
  std::string name;
  uint64_t start_ns = 0, end_ns = 0;  // host timestamps, same clock as the NVTX markers
  uint32_t correlation_id = 0;
  uint64_t pid = 0, tid = 0;  // the calling process and thread (0: not recorded)
};

// CUPTI external correlation: the id we pushed around a launch, per CUPTI correlation id.
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// A host range, start and end paired: an NVTX push/pop or start/end range (domain: the NVTX
// domain, "" for the default one), or from a PyTorch trace a module call (domain "nn.Module",
// name "LlamaDecoderLayer_3") or a record_function (domain "record_function").
struct NvtxRange {
  std::string domain, name;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t pid = 0, tid = 0;  // tid 0: not tied to one thread (an NVTX start/end range)
};

// A GPU the run used, by CUPTI's device id.
struct TraceDevice {
  uint32_t id = 0;
  std::string name;
};

// The input shapes of a host op, where the trace records them (a PyTorch trace taken with
// record_shapes=True: "Input Dims" of its cpu_op events). Only the ops the trust checks read.
struct OpShapes {
  std::string op;  // "aten::scaled_dot_product_attention"
  std::vector<std::vector<int64_t>> inputs;
};

struct Trace {
  std::string gpu;  // the first device's name
  double sm_clock_mhz = 0;
  std::vector<GpuActivity> activities;
  std::vector<ApiCall> api_calls;
  std::vector<ExternalCorrelation> externals;
  std::vector<NvtxRange> ranges;
  uint64_t dropped = 0;  // records CUPTI could not store
  // What recorded it and how the run ended (`rooflens record`; a PyTorch trace says "pytorch").
  std::string source;
  std::vector<std::string> command;
  std::vector<TraceDevice> devices;
  bool complete = true;  // false: the program failed or was killed; records may be missing
  std::string incomplete_reason;
  int exit_code = 0;
  std::vector<std::string> notes;   // what the reader or recorder wants the user to know
  std::vector<OpShapes> op_shapes;  // PyTorch traces with record_shapes: attention ops' inputs
  // PyTorch traces with with_stack: the Python frames of the model's code ("transformers/
  // cache_utils.py(129): update"), PyTorch's own left out; what launched a kernel, for hints.
  std::vector<NvtxRange> python_frames;
};

// The id pushed around layer `layer`, sample `sample`: both recoverable from the id.
uint64_t external_id(int layer, int sample);
int layer_of(uint64_t external_id);
int sample_of(uint64_t external_id);
// NVTX range name of one sample of a layer: the layer path, then "#sample".
std::string range_name(const std::string& layer_path, int sample);

// Duration of a record in seconds; one place for the ns -> s conversion.
inline double seconds(uint64_t start_ns, uint64_t end_ns) {
  return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) * 1e-9 : 0.0;
}

}  // namespace rooflens::profiler
