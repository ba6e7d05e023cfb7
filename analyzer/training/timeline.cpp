// The training step in the order eager PyTorch issues it, and the GPU queued behind the host.
//
// Eager PyTorch launches a kernel only after Python, the dispatcher and autograd have done their
// work for it. Where that host time is longer than the kernels already queued take to run, the
// GPU waits: small models, small batches, MoE routing's many tiny kernels, checkpointing (which
// issues the forward again inside the backward). A device-to-host copy (.item(), .tolist(),
// torch._grouped_mm's fp32 fallback reading its offsets) makes the host wait for the GPU to
// drain, so the queue starts empty after it. docs/training.md gives the model and its checks.
#include <algorithm>

#include "analyzer/core/host_queue.hpp"
#include "analyzer/training/step.hpp"

namespace rooflens::training {
namespace {

// The training step's rows through the host queue.
class Queue : public HostQueue {
 public:
  void issue_all(const std::vector<Launch>& ls, double host_s) {
    for (const Launch& l : ls) issue(l.gpu_s, host_s, l.sync);
  }
  // A row outside the graph: `launches` equal kernels; host_total spread over them, or
  // host_per_kernel each.
  void issue_row(const StepRow& r, double host_per_kernel) {
    int64_t n = std::max<int64_t>(1, r.launches);
    double host = r.host_s > 0 ? r.host_s / static_cast<double>(n) : host_per_kernel;
    for (int64_t i = 0; i < n; ++i) issue(r.seconds / static_cast<double>(n), host);
  }
};

}  // namespace

void step_timeline(const StepContext& s, const SavedActivations& saved,
                   const std::vector<NodeLaunches>& nodes, const Device& device,
                   TrainingSummary& out) {
  bool full = s.train.recompute == Recompute::full;
  double hf = 0, hb = 0;
  if (device.eager_host) {
    const EagerHostCosts& e = *device.eager_host;
    hf = full ? e.checkpointed_forward_kernel_s : e.forward_kernel_s;
    hb = full ? e.checkpointed_backward_kernel_s : e.backward_kernel_s;
  }
  // ZeRO-3 as FSDP2 runs it: each layer's unit and the root add their hooks, gathers and copies
  // to the host's time (a unit's share before its first kernel), and its AdamW walks sharded
  // parameters. Measured for FSDP2; DeepSpeed's ZeRO-3 is taken at the same cost.
  const EagerHostCosts* fsdp = nullptr;
  if (device.eager_host && device.eager_host->fsdp_measured() && s.train.zero >= 3 &&
      s.train.dp > 1)
    fsdp = &*device.eager_host;
  Queue q;
  // Its gathers and reduce-scatters run on their own streams beside the compute, a unit's share
  // queued as the unit starts (the root and each layer, forward and backward), not at the end.
  double comm_s = 0;
  for (const StepRow& r : out.steps)
    if (r.phase == "communication") comm_s += r.seconds;
  int layers = 0;
  for (int l : s.layer_of) layers = std::max(layers, l + 1);
  double unit_comm_s = comm_s / static_cast<double>(2 * (layers + 1) * s.train.grad_accum);
  auto start_unit = [&](double host_s) {
    q.host_only(host_s);
    q.issue(unit_comm_s, 0);
  };
  auto unit = [&](int layer, int& current, double layer_s) {
    if (fsdp && layer >= 0 && layer != current) start_unit(layer_s);
    if (layer >= 0) current = layer;
  };
  size_t n = nodes.size();
  for (int64_t micro = 0; micro < s.train.grad_accum; ++micro) {
    if (fsdp) start_unit(fsdp->fsdp_forward_fixed_s);
    int forward_unit = -1;
    for (size_t i = 0; i < n; ++i) {
      unit(s.layer_of[i], forward_unit, fsdp ? fsdp->fsdp_forward_layer_s : 0);
      q.issue_all(nodes[i].forward, hf);
    }
    for (const StepRow& r : out.steps)
      if (r.phase == "forward") q.issue_row(r, hf);
    for (const StepRow& r : out.steps)
      if (r.phase == "backward") q.issue_row(r, hf);
    // Backward in reverse; a checkpointed layer runs its forward again when autograd first
    // reaches it (the first of its saved tensors unpacked).
    int recomputing = -1, backward_unit = -1;
    if (fsdp) start_unit(fsdp->fsdp_backward_fixed_s);
    for (size_t j = n; j-- > 0;) {
      int layer = s.layer_of[j];
      unit(layer, backward_unit, fsdp ? fsdp->fsdp_backward_layer_s : 0);
      if (full && layer >= 0 && layer != recomputing) {
        recomputing = layer;
        for (size_t i = 0; i < n; ++i)
          if (s.layer_of[i] == layer && saved.recomputed[i]) q.issue_all(nodes[i].forward, hb);
      }
      q.issue_all(nodes[j].backward, hb);
    }
  }
  if (!fsdp)
    for (const StepRow& r : out.steps)
      if (r.phase == "communication") q.issue_row(r, 0);
  if (fsdp) q.host_only(fsdp->fsdp_optimizer_s);
  for (const StepRow& r : out.steps)
    if (r.phase == "optimizer") q.issue_row(r, 0);
  out.host_modelled = device.eager_host.has_value();
  out.host_s = out.host_modelled ? q.host() : 0;
  out.gpu_busy_s = q.busy();
  out.step_time_s = q.gpu();
  out.gpu_wait_s = out.step_time_s - out.gpu_busy_s;
  out.kernels = q.kernels();
  out.host_syncs = q.syncs();
}

}  // namespace rooflens::training
