// Multi-GPU collectives in a replay: NCCL on the communicator `profile --tp N` / `--ep N` made.
#include <fmt/format.h>

#include "kernels/nccl_runtime.hpp"
#include "kernels/runner.hpp"

namespace rooflens::kernels {

Runner collective_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                         const ReplayContext& ctx) {
  const auto& plan = p.as<replay::CollectivePlan>();
  if (!ctx.comm || !ctx.nccl || ctx.comm->ranks() != plan.ranks)
    throw ReplayUnsupported(
        fmt::format("a collective over {} GPUs needs a communicator of that size", plan.ranks));
  const nccl::Api* api = ctx.nccl;
  const nccl::Communicator* comm = ctx.comm;
  Collective op = plan.op;
  int64_t bytes = plan.bytes;
  DType dtype = p.inputs[0].dtype;
  const void* in = b.in(0);
  void* out = b.out(0);
  ReplayLabel label{"NCCL", fmt::format("{} over {} GPUs", collective_name(op), plan.ranks), ""};
  return Runner(label,
                [=](cudaStream_t s) { nccl::launch(*api, op, in, out, bytes, dtype, *comm, s); });
}

}  // namespace rooflens::kernels
