#pragma once
// The boundary between the GPU module and its cuDNN plugin (librooflens_cudnn.so). The plugin is
// the only code that includes cuDNN's headers and links libcudnn; the module loads it with
// dlopen after it has found and loaded a cuDNN 9 (cudnn_runtime.hpp), so a machine without cuDNN
// still runs every other layer. No exception crosses this boundary: errors come back as text.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens::kernels::cudnn {

// Bumped whenever anything in this header changes: a plugin of another ABI is refused.
inline constexpr int kPluginAbi = 2;

// A 2-D forward convolution (a 1-D one has h = kh = 1). ONNX lays tensors out NCHW; deployments
// (TensorRT, PyTorch's channels_last) run convolutions NHWC, where cuDNN's tensor-core engines
// need no transposes. The replay builds both and keeps the faster, labelled.
struct ConvSpec {
  bool nhwc = false;  // activations and filters channels-last
  DType dtype = DType::bf16;
  bool tensor_cores = true;  // fp32 only: false keeps cuDNN off TF32 (strict fp32, as predicted)
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t k = 1, kh = 1, kw = 1;       // filters [k, c / groups, kh, kw]
  int64_t groups = 1;
  int64_t oh = 1, ow = 1;  // output [n, k, oh, ow]
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  bool bias = false;  // y += b[k] per output channel, fused into the convolution's epilogue
};

// Scaled dot-product attention, inference. q and o are [B, Sq, Hq, D] (the projection's layout),
// k and v [B, Hkv, Skv, D] (the KV cache's layout). v_in_k: V is the first Dv of each K row (MLA).
// fp8: q, k, v and o in e4m3 with per-tensor scales, cuDNN's fp8 flash attention (what engines
// run over an fp8 cache: FlashAttention-3 quantizes the queries too); `dtype` is then ignored.
struct SdpaSpec {
  DType dtype = DType::bf16;
  AttentionDims dims;
  bool v_in_k = false;
  bool fp8 = false;
};

// The fp8 graph's tensors after {q, k, v, o}: six fp32 scalars in, two out.
inline constexpr int kSdpaFp8Scalars = 8;

// One built cuDNN graph with every engine configuration cuDNN's heuristics offered that built.
class Operation {
 public:
  virtual ~Operation() = default;
  virtual int plan_count() const = 0;
  virtual std::string plan_name(int plan) const = 0;
  virtual int64_t workspace_bytes(int plan) const = 0;
  // conv: {x, w, y, b}; sdpa: {q, k, v, o} (v ignored with v_in_k), fp8 sdpa then {descale q,
  // k, v, s, scale s, o, amax s, o}, device fp32 scalars. Returns "" or the error.
  virtual std::string execute(int plan, const std::vector<void*>& tensors, void* workspace,
                              void* stream) const = 0;
};

struct Built {
  std::unique_ptr<Operation> op;  // null when cuDNN has no engine for the problem
  std::string error;              // then: why, in cuDNN's words
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual int abi() const = 0;
  virtual int64_t cudnn_version() const = 0;  // cudnnGetVersion(), e.g. 91900
  virtual Built conv(const ConvSpec& spec) = 0;
  virtual Built sdpa(const SdpaSpec& spec) = 0;
};

}  // namespace rooflens::kernels::cudnn

// The plugin's one exported symbol. `error` receives why it could not start (no handle, ...).
extern "C" rooflens::kernels::cudnn::Plugin* rooflens_cudnn_plugin_create(std::string* error);
