#pragma once
// One layer, ready to run: its buffers allocated and filled, its GEMMs planned. launch() enqueues
// exactly the kernels a timed sample consists of.
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gemm.hpp"
#include "profiler/replay_plan.hpp"

namespace rooflens::kernels {

struct ReplayContext {
  const CublasLt* lt = nullptr;
  int sm_count = 132;
};

class LayerReplay {
 public:
  // Allocates and fills; CudaError on failure (out of memory included).
  LayerReplay(const profiler::ReplayPlan& plan, const ReplayContext& ctx, cudaStream_t s);
  ~LayerReplay();
  void launch(cudaStream_t s);
  const profiler::ReplayPlan& plan() const { return plan_; }
  // Device buffers: inputs first, then outputs (for the correctness tests).
  const std::vector<DeviceBuffer>& buffers() const { return buffers_; }

 private:
  profiler::ReplayPlan plan_;
  ReplayContext ctx_;
  std::vector<DeviceBuffer> buffers_;
  DeviceBuffer workspace_;
  std::vector<std::unique_ptr<Gemm>> gemms_;
  std::vector<int64_t> expert_tokens_;  // MoE: rows each expert receives
  int64_t gemv_rows_ = 0;               // > 0: this GEMM runs as a GEMV over that many rows
  void* in(size_t i) const { return buffers_[i].get(); }
  void* out(size_t i) const { return buffers_[plan_.inputs.size() + i].get(); }
  void launch_conv(cudaStream_t s);
  void launch_moe(cudaStream_t s);
  void prepare_moe();
};

}  // namespace rooflens::kernels
