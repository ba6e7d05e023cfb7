#pragma once
// Times one replay plan as the harness times a layer, outside a model: its kernel chosen among
// the candidates (cuBLASLt's algorithms, cuDNN's engines, ours) as `profile` chooses it, then the
// median CUPTI kernel time of its samples, L2 emptied before each. calibrate's tables and the
// vendor benchmark are measured with it, so they describe the kernels `profile` runs.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>

#include "kernels/gemm.hpp"
#include "kernels/runner.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_info.hpp"
#include "replay/plan.hpp"

namespace rooflens::profiler {

class LayerTimer {
 public:
  // Loads cuDNN (`cudnn_dir`, else the usual places) and opens a CUPTI session: the process's one.
  explicit LayerTimer(const std::string& cudnn_dir = "");
  ~LayerTimer();
  LayerTimer(const LayerTimer&) = delete;
  LayerTimer& operator=(const LayerTimer&) = delete;

  struct Result {
    double cold_s = 0;  // L2 emptied before each sample
    double hot_s = 0;   // back to back; 0 unless asked for
    kernels::ReplayLabel label;
  };
  // kernels::CudaError (ReplayUnsupported included) when the plan cannot run here.
  Result time(const replay::ReplayPlan& plan, int samples = 10, bool hot = false);

  const GpuInfo& gpu() const { return gpu_; }
  const std::string& cudnn_status() const { return cudnn_status_; }
  bool cupti_ok() const;

 private:
  GpuInfo gpu_;
  cudaStream_t stream_ = nullptr;
  kernels::CublasLt lt_;
  L2Flush flush_;
  CuptiSession cupti_;
  replay::KernelChoices choices_;
  std::string cudnn_status_;
  kernels::ReplayContext ctx_;
};

}  // namespace rooflens::profiler
