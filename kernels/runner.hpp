#pragma once
// A layer's launch, as the vendor library or our kernel runs it, with a label that says which.
// Where several candidates exist (cuBLASLt's algorithms and our GEMV, cuDNN's engines and our
// attention kernels), each is timed as the harness will time the layer and the fastest kept.
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gemm.hpp"
#include "replay/kernel_choice.hpp"
#include "replay/plan.hpp"

namespace rooflens::kernels {

namespace cudnn {
class Plugin;
}
namespace nccl {
struct Api;
class Communicator;
}  // namespace nccl

// Seconds one run of `launch` takes on the GPU, measured as the harness measures a layer
// (L2 state included).
using CandidateTimer = std::function<double(const std::function<void(cudaStream_t)>& launch)>;

struct ReplayContext {
  const CublasLt* lt = nullptr;
  int sm_count = 0;                // the device's
  cudnn::Plugin* cudnn = nullptr;  // null: no cuDNN here
  std::string cudnn_status;        // its version, or why there is none
  CandidateTimer time;             // null: the first candidate is taken untimed
  // Candidate picked per problem key, so identical layers are tuned once per run; entries read
  // from a tuning cache are taken without timing when the same kernel is among the candidates.
  replay::KernelChoices* choices = nullptr;
  // profile --tp N: this rank's communicator among the replay's GPUs (null on one GPU).
  const nccl::Api* nccl = nullptr;
  const nccl::Communicator* comm = nullptr;
};

// What ran for a layer.
struct ReplayLabel {
  std::string library;  // "cuBLASLt", "cuDNN", "rooflens" (our kernels), or "cuBLASLt + rooflens"
  std::string detail;   // the algorithm, engine or kernel
  std::string note;     // how it was chosen, or why the vendor library did not run it
  std::string text() const;
  std::string kernel() const;  // library and detail: what a tuning cache matches on
};

class Runner {
 public:
  Runner(ReplayLabel label, std::function<void(cudaStream_t)> launch,
         std::shared_ptr<void> state = nullptr)
      : label_(std::move(label)), launch_(std::move(launch)), state_(std::move(state)) {}
  void launch(cudaStream_t s) const { launch_(s); }
  const ReplayLabel& label() const { return label_; }
  ReplayLabel& label() { return label_; }

 private:
  ReplayLabel label_;
  std::function<void(cudaStream_t)> launch_;
  std::shared_ptr<void> state_;  // what the launch uses: a Gemm, a cuDNN graph, a workspace
};

// The fastest candidate (timed with ctx.time), remembered under `key` for identical layers.
// A candidate whose launch fails is dropped; ReplayUnsupported when none runs. The winner's
// note says of how many it was the fastest.
Runner pick_fastest(std::vector<Runner> candidates, const ReplayContext& ctx,
                    const std::string& key, cudaStream_t s);

// The layer's buffers, inputs first, then outputs.
struct LayerBuffers {
  const replay::ReplayPlan& plan;
  const std::vector<DeviceBuffer>& buffers;
  void* in(size_t i) const { return buffers[i].get(); }
  void* out(size_t i) const { return buffers[plan.inputs.size() + i].get(); }
};

Runner gemm_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                   cudaStream_t s);
Runner weight_only_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                          const ReplayContext& ctx, cudaStream_t s);
Runner moe_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                  cudaStream_t s);
Runner conv_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                   cudaStream_t s);
Runner attention_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                        const ReplayContext& ctx, cudaStream_t s);
// A collective through NCCL among the replay's GPUs (ctx.comm); ReplayUnsupported without one.
Runner collective_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                         const ReplayContext& ctx);
// Element-wise, row kernels, pooling, copies, gathers, rope: our kernels, one candidate.
Runner memory_runner(const replay::ReplayPlan& p, const LayerBuffers& b);

}  // namespace rooflens::kernels
