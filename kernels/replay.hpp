#pragma once
// One layer, ready to run: its buffers allocated and filled, its kernel chosen (the vendor
// library or ours, by measuring; runner.hpp). launch() enqueues exactly the kernels a timed
// sample consists of.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/runner.hpp"
#include "replay/plan.hpp"

namespace rooflens::kernels {

class LayerReplay {
 public:
  // Allocates and fills; CudaError on failure (out of memory included), ReplayUnsupported when
  // no kernel takes the layer.
  LayerReplay(const replay::ReplayPlan& plan, const ReplayContext& ctx, cudaStream_t s);
  ~LayerReplay();
  void launch(cudaStream_t s) const { runner_->launch(s); }
  const replay::ReplayPlan& plan() const { return plan_; }
  const ReplayLabel& label() const { return runner_->label(); }
  // Device buffers: inputs first, then outputs (for the correctness tests).
  const std::vector<DeviceBuffer>& buffers() const { return buffers_; }

 private:
  replay::ReplayPlan plan_;
  std::vector<DeviceBuffer> buffers_;
  std::optional<Runner> runner_;
};

}  // namespace rooflens::kernels
