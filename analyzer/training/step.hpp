#pragma once
// Shared by training.cpp (rows, time, the summary) and memory.cpp (what autograd saves,
// the memory timeline): the forward as lowered and analyzed, and the dtypes the step runs in.
#include <map>
#include <string>
#include <vector>

#include "analyzer/training/training.hpp"

namespace rooflens::training {

struct StepContext {
  const TransformerConfig& config;
  const TrainingOptions& train;
  const LoweringOptions& lowering;
  const Graph& graph;         // the forward, shapes bound
  const Analysis& forward;    // its analysis (nodes index like graph.nodes)
  std::vector<int> layer_of;  // per node: decoder layer, -1 outside the layers
  int64_t param_bytes = 4;    // bytes per element of weights and gradients
  int64_t state_bytes = 4;    // of optimizer states
  int64_t stream_bytes = 4;   // the residual stream (fp32 unless the model is cast to bf16)
  int64_t gemm_bytes = 4;     // a GEMM's inputs as it runs (autocast's dtype; fp8: 1)
  int64_t output_bytes = 4;   // a GEMM's output
  bool autocast = false;
  AttentionBackend attention_backend = AttentionBackend::none;
  // Per tensor: a weight the optimizer updates (float, learnable; not RoPE's tables nor batch
  // norm's running statistics).
  std::vector<bool> trainable;
};
std::vector<bool> trainable_weights(const Graph& g);
// The step's context for a forward graph and its analysis (the dtypes `t.precision` runs in).
StepContext step_context(const TransformerConfig& c, const TrainingOptions& t,
                         const LoweringOptions& l, const Graph& graph, const Analysis& forward);

// Per node: bytes autograd saves (tensors shared by several ops once) and in words what.
struct SavedActivations {
  std::vector<int64_t> node_bytes;
  std::vector<std::string> node_what;
  // Full recomputation stops early (PyTorch's non-reentrant checkpoint) once every tensor the
  // layer saved is saved again: a GEMM that only saves its input is not run again when it is
  // the layer's last saver. Per node: whether the recomputed forward runs it.
  std::vector<bool> recomputed;
  std::vector<int64_t> layer_bytes;           // per decoder layer
  std::vector<int64_t> layer_input_bytes;     // what a checkpointed layer keeps: its input
  std::vector<int64_t> layer_recompute_only;  // selective recompute: bytes it drops per layer
  std::vector<int64_t> layer_transient;       // the backward's transient buffers in that layer
  std::vector<int64_t> layer_copy_bytes;      // autocast weight copies its GEMMs use
  std::vector<int64_t> layer_param_bytes;     // its weights' gradients
  // Per node: its weights' gradients, and the gradients of its output and activation input (the
  // backward's transients while it runs); the timeline of a graph without layers walks them.
  std::vector<int64_t> node_param_bytes, node_grad_bytes;
  int64_t before_layers = 0, after_layers = 0;  // embeddings; final norm and lm_head input
  int64_t head_copy_bytes = 0, head_param_bytes = 0, embed_param_bytes = 0;
  int64_t logits_elements = 0;             // B*S*V (this GPU's vocabulary shard)
  std::map<std::string, int> generic_ops;  // ops whose saved tensors came from the generic rule
  int64_t params = 0;
};

SavedActivations saved_activations(const StepContext& s);

// Bytes per element of every tensor as the step runs it (autocast's dtypes, promotion), and the
// storage each tensor is a view of.
struct RuntimeDtypes {
  std::vector<int64_t> bytes;
  std::vector<int> base;
  int64_t storage_bytes(int t) const { return bytes[base[t]]; }  // of the storage t views
};
RuntimeDtypes runtime_dtypes(const StepContext& s);

// One element-wise kernel eager PyTorch launches: `elements` elements, bytes read and written per
// element.
struct Pass {
  int64_t elements = 0, read = 0, write = 0;
};
// The kernels Hugging Face's eager code launches for a node where the graph's one fused node
// would understate them (written-out GELU and RMSNorm, autocast's casts, dropout, the residual's
// gradient accumulation), forward and backward. `replaces`: the node's own cost is not used.
// `*_syncs`: device-to-host copies among them (the host waits for the GPU to drain there).
struct EagerKernels {
  bool replaces = false;
  std::vector<Pass> forward, backward;
  int forward_syncs = 0, backward_syncs = 0;
};
std::vector<EagerKernels> eager_kernels(const StepContext& s);

// PyTorch's multi_tensor_apply (the foreach optimizers): a launch takes at most 110 tensors
// (depth 1) and 320 blocks of 65536 elements.
inline constexpr int64_t kForeachChunkElements = 65536;
inline constexpr int64_t kForeachChunksPerLaunch = 320;
inline constexpr int64_t kForeachTensorsPerLaunch = 110;

// One kernel as eager PyTorch issues it: its predicted GPU time, and whether the host waits for
// the GPU to drain before issuing it (a device-to-host copy: .item(), .tolist(), .cpu()).
struct Launch {
  double gpu_s = 0;
  bool sync = false;
};
// Per forward node, its kernels in the forward (also what a recomputation runs) and in the
// backward, in the order they are issued.
struct NodeLaunches {
  std::vector<Launch> forward, backward;
};

// Per forward node, its training row (forward, backward and recomputed FLOPs, bytes and time,
// what it saves) and its kernels in issue order (backward.cpp).
void cost_rows(const StepContext& s, const Device& device, const SavedActivations& saved,
               TrainingSummary& out, std::vector<NodeLaunches>& launches);

// The step in issue order: the host spends the device profile's eager cost per kernel (per
// optimizer tensor in the optimizer), the GPU runs each kernel once it is issued and the one
// before it is done. Fills the summary's step_time_s, host_s, gpu_busy_s, gpu_wait_s, kernels
// and host_syncs; forward_s .. communication_s must be filled first.
void step_timeline(const StepContext& s, const SavedActivations& saved,
                   const std::vector<NodeLaunches>& nodes, const Device& device,
                   TrainingSummary& out);

// The timeline of one step from the saved activations; fills the summary's memory fields.
void memory_timeline(const StepContext& s, const SavedActivations& saved, TrainingSummary& out);

}  // namespace rooflens::training
