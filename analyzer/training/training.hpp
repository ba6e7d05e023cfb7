#pragma once
// `--phase train`: one whole training step of a transformer config (forward, loss, backward,
// optimizer) as PyTorch and Hugging Face run it: per forward node its backward and recomputed
// FLOPs, bytes and time; the optimizer's rows; and the memory of the step as a timeline from
// liveness (weights, gradients, optimizer states, autocast's weight copies, what autograd saves
// per op, the loss's fp32 logits, the backward's transients), its peak and the moment of it.
// docs/training.md gives every formula and its source.
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/core/formulas.hpp"
#include "analyzer/onnx/loader.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens {

// fp32: weights, gradients, states and math in fp32 (TF32 off). bf16: the model cast to bf16,
// its optimizer states too. bf16-mixed: fp32 weights (the master copy), forward and backward
// under torch.autocast(bf16). fp8-mixed: as bf16-mixed with the GEMMs in fp8 (Transformer
// Engine's recipe: fp8 copies of weights and of the GEMM inputs it saves).
enum class TrainPrecision { fp32, bf16, bf16_mixed, fp8_mixed };
// none: autograd keeps what each op saves. full: each decoder layer checkpointed (HF's
// gradient_checkpointing_enable, use_reentrant=False): only its input is kept and the layer's
// forward runs again in the backward. selective: Korthikanti et al.'s, the attention core only
// (what a fused attention kernel already does: it changes nothing unless the math path runs).
enum class Recompute { none, selective, full };

struct TrainingOptions {
  TrainPrecision precision = TrainPrecision::bf16_mixed;
  OptimizerKind optimizer = OptimizerKind::adamw;
  Recompute recompute = Recompute::none;
  int64_t grad_accum = 1;  // micro-batches of --batch sequences per optimizer step
  int zero = 0;            // ZeRO stage
  int64_t dp = 1;          // data-parallel GPUs (ZeRO partitions among them; gradients all-reduced)
  bool sp = false;         // sequence parallelism beside --tp (Korthikanti et al.)
};

std::string_view train_precision_name(TrainPrecision p);
std::string_view recompute_name(Recompute r);
std::string_view optimizer_name(OptimizerKind k);
// InputError (one line) on an unknown name.
TrainPrecision parse_train_precision(const std::string& name);
Recompute parse_recompute(const std::string& name);
OptimizerKind parse_optimizer(const std::string& name);

// One forward node's share of the step.
struct TrainingRow {
  int node = -1;  // index in Analysis::nodes (the forward)
  int layer = -1;
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  int64_t forward_flops = 0, backward_flops = 0, recompute_flops = 0;
  int64_t forward_bytes = 0, backward_bytes = 0;
  int64_t gemm_dense_flops = 0;  // forward + backward + recompute, FlopCounterMode's convention
  int64_t saved_bytes = 0;       // what autograd keeps from this node for the backward
  std::string saved;             // which tensors, in words
};

// Work outside the lowered graph: the loss and the optimizer step.
struct StepRow {
  std::string name, phase;  // phase: forward, backward, optimizer, communication
  int64_t flops = 0, bytes = 0;
  double seconds = 0;
  std::string note;
  int64_t launches = 1;  // kernels it takes
  double host_s = 0;     // the host's own cost when not charged per kernel (the optimizer's)
};

// PyTorch's cuBLAS and cuBLASLt workspaces on Hopper, allocated through the caching allocator
// (so in max_memory_allocated) from the first GEMM on: 4096 KiB x 8 each (the default of
// CUBLAS_WORKSPACE_CONFIG on sm90). Every reference step holds 67-92 MB beyond its weights and
// states at rest.
inline constexpr int64_t kCublasWorkspaceBytes = 2 * 8 * 4096 * 1024LL;

// One moment of the step and what is resident then.
struct MemoryMoment {
  std::string moment;
  int64_t weights = 0, grads = 0, optimizer = 0, autocast_copies = 0, saved = 0, transient = 0,
          workspace = 0;
  int64_t total() const {
    return weights + grads + optimizer + autocast_copies + saved + transient + workspace;
  }
};

// The kernel SDPA runs for training on this precision: cuDNN's / flash attention (16-bit), the
// memory-efficient kernel (fp32 without GQA), the math path (fp32 with GQA, --attention naive);
// none when the graph carries its attention in its own ops (an ONNX graph).
enum class AttentionBackend { none, flash, efficient, math };
std::string_view attention_backend_name(AttentionBackend b);  // "flash", ...; "" for none

struct TrainingSummary {
  TrainingOptions options;
  int64_t batch = 1, seq = 1, tp = 1, tokens_per_step = 0;
  AttentionBackend attention_backend =
      AttentionBackend::none;  // as SDPA would pick on this precision
  std::vector<TrainingRow> rows;
  std::vector<StepRow> steps;  // loss and optimizer rows
  int64_t params = 0;          // learnable, this GPU's shard before ZeRO
  ModelState model_state;      // per GPU after ZeRO
  int64_t master_weight_bytes =
      0;  // fp32 copies beside 16-bit weights (0 when the weights are the master)
  int64_t autocast_copy_bytes = 0;     // 16/8-bit weight copies autocast caches for the step
  int64_t saved_activation_bytes = 0;  // everything autograd holds when the loss's backward starts
  int64_t logits_bytes = 0;            // fp32 logits of the loss (B*S*V floats)
  int64_t activation_peak_bytes = 0;   // the most activations (saved + transient) at any moment
  int64_t peak_memory_bytes = 0;
  std::string peak_moment;
  std::vector<MemoryMoment> timeline;
  int64_t device_bytes = 0;
  bool fits = false;
  int64_t max_batch = 0, max_seq = 0;   // largest that fit (0: none)
  int64_t korthikanti_layer_bytes = 0;  // the published per-layer figure, for comparison
  int64_t flops = 0;                    // executed, whole step (all micro-batches)
  int64_t gemm_dense_flops =
      0;  // matrix FLOPs of forward, backward and recomputation (dense attention)
  double forward_s = 0, backward_s = 0, recompute_s = 0, loss_s = 0, optimizer_s = 0,
         communication_s = 0;
  // The step as eager PyTorch runs it (timeline.cpp): the host issues each kernel after
  // its Python, dispatch and autograd work (the device profile's eager_host costs); the GPU runs
  // the kernels in order and waits where the host is behind or synchronizes.
  double gpu_busy_s = 0;  // the kernels back to back: forward_s + ... + communication_s
  double host_s = 0;      // the host's time to issue the step (0: no eager_host in the profile)
  double gpu_wait_s = 0;  // the GPU idle inside the step
  int64_t kernels = 0;
  int64_t host_syncs = 0;
  bool host_modelled = false;
  double step_time_s = 0;  // gpu_busy_s + gpu_wait_s
  double tokens_per_s = 0;
  std::vector<std::string> notes;
};

// The forward of `options.lowering` (batch, seq, tp) is analyzed as a prefill; `train` says how
// it is trained. The Analysis keeps the forward's nodes and gains `training`.
Analysis analyze_training(const TransformerConfig& config, const TransformerOptions& options,
                          const TrainingOptions& train);
// An ONNX forward graph trained as exported (fp32, or bf16-mixed: autocast's convolutions and
// GEMMs in bf16), a cross-entropy over its first output, no recomputation (it needs layers).
// InputError for what such a graph cannot express (--precision bf16, --recompute, --sp).
Analysis analyze_training_onnx(const std::string& path, const LoadOptions& load,
                               const AnalysisOptions& options, const TrainingOptions& train);

}  // namespace rooflens
