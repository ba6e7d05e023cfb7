#pragma once
// The one place each cost formula lives. ONNX rules, config lowering, the roofline and the
// harness all call these; nothing else multiplies dims into FLOPs.
#include <cstdint>
#include <vector>

namespace rooflens {

// FLOP convention: one multiply or one add. A multiply-accumulate is 2 FLOPs.
struct GemmDims {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
};
int64_t gemm_macs(const GemmDims& d);
int64_t gemm_flops(const GemmDims& d);  // 2 * macs
// Thread blocks a GEMM library launches: 64x64 output tiles, and split-K (one block per 512
// of K, up to 8) when the output alone is too small to fill the chip.
int64_t gemm_tiles(const GemmDims& d);
// Up to this many rows a GEMM is a GEMV that streams its weights (the decode step); above it a
// tiled matrix-unit kernel. The replay picks its kernel by the same threshold.
constexpr int64_t kGemvMaxRows = 8;

// Direct convolution counted as its implicit GEMM: every output element of every output
// channel takes (in_channels / groups) * kernel_elements MACs.
int64_t conv_macs(int64_t batch, int64_t out_channels, int64_t out_spatial,
                  int64_t in_channels_per_group, int64_t kernel_elements);

// Convolution as the rule saw it (2-D spatial, or 1-D with width 1), for the replay harness.
struct ConvDims {
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  std::vector<int64_t> in_spatial, kernel, out_spatial, strides, pads, dilations;
  bool transpose = false;
};
// One image of a (non-transposed) convolution as the GEMM an im2col lowering runs, batched over
// groups: out[oc/g, out_spatial] = W[oc/g, ic/g * kernel] . columns[ic/g * kernel, out_spatial].
GemmDims conv_image_gemm(const ConvDims& c);
// One filter per channel (groups = channels in = channels out, more than one): the CUDA cores'
// window work, priced by the depthwise tables and replayed on the depthwise kernels.
inline bool is_depthwise(const ConvDims& c) {
  return !c.transpose && c.groups > 1 && c.groups == c.in_channels &&
         c.out_channels == c.in_channels;
}

// A mixture-of-experts FFN as its rule priced it: `tokens` rows routed to `k` of `experts`.
struct MoeDims {
  int64_t tokens = 0, hidden = 0, inter = 0, experts = 0, k = 1;
  bool gated = false;
  bool fp8_weights = false;    // experts stored in fp8: their GEMMs run in fp8
  bool mxfp4_weights = false;  // experts stored in MXFP4 (e2m1, e8m0 scales): upcast to bf16
};

// Softmax over one element: max, subtract, exp, sum, divide.
inline constexpr int64_t kSoftmaxFlopsPerElement = 5;

struct AttentionDims {
  int64_t batch = 1;
  int64_t q_heads = 1;
  int64_t kv_heads = 1;  // GQA/MQA when < q_heads; does not change FLOPs, only K/V bytes
  int64_t q_len = 1;
  int64_t kv_len = 1;  // past + new keys
  int64_t head_dim_qk = 1;
  int64_t head_dim_v = 1;
  bool causal = false;
  int64_t window = 0;  // sliding/local window: each query sees at most this many keys (0 = all)
  int64_t chunk = 0;   // chunked attention: a query sees the keys of its own chunk only (0 = none)
  bool softcap = false;  // tanh soft-capping of every score: divide, tanh, multiply
  bool alibi = false;    // a linear position bias per score: slope times distance, added
  bool sinks = false;    // a learned sink logit per head joins every softmax row
};
// Per executed score beyond QK^T, scale, softmax and PV: soft-capping 3, ALiBi 2.
inline constexpr int64_t kSoftcapFlopsPerScore = 3;
inline constexpr int64_t kAlibiFlopsPerScore = 2;

struct AttentionWork {
  int64_t scores_dense = 0;     // batch*heads*q_len*kv_len
  int64_t scores_executed = 0;  // causal: only the unmasked (query, key) pairs
  int64_t flops = 0;            // executed: QK^T, scale, softmax, PV over executed scores
  int64_t dense_flops = 0;      // the same over every score (what FlopCounterMode reports)
};

// Causal pairs when the q_len queries are the last q_len positions of kv_len keys:
// q_len*(kv_len-q_len) + q_len*(q_len+1)/2. Equals q_len*kv_len when not causal.
// With a window W > 0 (causal only), a query sees min(visible, W) keys.
int64_t attention_pairs(int64_t q_len, int64_t kv_len, bool causal, int64_t window = 0);
// Chunked causal attention: positions are split in chunks of `chunk` from position 0; a query
// sees the keys from its chunk's start to itself. The q_len queries are the last of kv_len.
int64_t chunked_attention_pairs(int64_t q_len, int64_t kv_len, int64_t chunk);
AttentionWork attention_core(const AttentionDims& d);
// The matrix products alone (QK^T and PV: 2 FLOPs per MAC), executed and dense: what a FLOP
// counter that sees only matrix products (PyTorch's FlopCounterMode) compares with.
int64_t attention_matmul_flops(const AttentionDims& d, bool dense);

// Selective scan (Mamba), per token and channel: softplus of the step (3), per state element
// exp(dt*A) (2), dt*B*x (2), the state update (2) and C's contraction (2), then the D skip (2) and
// the SiLU gate (6).
inline constexpr int64_t kScanFlopsPerState = 8;
inline constexpr int64_t kScanFlopsPerChannel = 11;
int64_t selective_scan_flops(int64_t tokens, int64_t channels, int64_t state);

// Lightning (linear) attention, per head of dim d over a sequence in blocks of `block`: inside a
// block the decayed QK^T and its product with V (quadratic in the block), across blocks q times
// the d x d state, and the state update K^T V. One token at a time (decode): the state update
// and q times the state.
struct LinearAttentionWork {
  int64_t flops = 0;
  int64_t matmul_flops = 0;  // the matrix products alone
};
LinearAttentionWork linear_attention_work(int64_t batch, int64_t heads, int64_t tokens,
                                          int64_t head_dim, int64_t block, bool recurrent);

// Expected number of distinct experts that `tokens` tokens touch when each picks `k` of `experts`
// uniformly: E * (1 - (1 - k/E)^T). Decode reads only these experts' weights.
double expected_distinct_experts(int64_t experts, int64_t k, int64_t tokens);

// Ring all-reduce of `bytes` per rank among `ranks` GPUs over links of `link_bandwidth` bytes/s
// per direction: 2(N-1)/N of the data crosses each link, in 2(N-1) steps of fixed latency.
inline constexpr double kCollectiveStepLatency = 1.0e-6;  // seconds per ring step (NVLink order)
double ring_allreduce_seconds(int64_t bytes, int64_t ranks, double link_bandwidth);

// The roofline's time: the slower of computing `flops` at `compute_roof` FLOP/s (on a fraction
// `wave_fraction` of the SMs: below one wave the compute roof shrinks) and moving `bytes` at
// `bandwidth` bytes/s.
double roofline_seconds(double flops, double bytes, double compute_roof, double bandwidth,
                        double wave_fraction = 1);

// ---- what Nsight Compute sees (the bound class, hw/roofline classify) -------------------------
// Counts read off Nsight Compute's SpeedOfLight of the replay on the H100
// (tests/data/reference/ncu, docs/profile.md); instruction counts are the kernels', not the GPU's.
// Thread instructions per output element: tanh GELU (32.5 measured), a split copying strided parts
// (30 per element written), a window kernel (max pool: 200 + 18 per window element fits 3x3 pools
// at 367-376, and cuDNN's NCHW depthwise engines at 386 / 657 for 3x3 / 5x5).
inline constexpr double kTanhGeluInstructions = 32;
inline constexpr double kStridedSplitInstructions = 30;
inline constexpr double kWindowKernelInstructions = 200, kWindowInstructionsPerElement = 18;
// A depthwise convolution as frameworks run it (a thread per output pixel, the window unrolled,
// its weights in registers): 148 + 12.4 per window element, fitted to PyTorch's NCHW depthwise
// kernels on MobileNetV3-small (b64 bf16, H100, 1.9% time-weighted) and checked on
// EfficientNet-B0's sixteen (3.5%; tests/data/reference/h100-depthwise-torch.json). It prices
// time where no table does; the replay's fastest (cuDNN's NHWC kernels) issue 33-144 an output,
// so classify takes one per FLOP where a table's time cannot issue this count.
inline constexpr double kDepthwiseKernelInstructions = 148, kDepthwiseInstructionsPerElement = 12.4;
// Elsewhere on the CUDA cores about one instruction per FLOP (an FFMA is two FLOPs, plus its loads
// and address arithmetic: cuDNN's FFMA convolutions issue 1.2-2.7x the FLOP fraction).
inline constexpr double kInstructionsPerCudaCoreFlop = 1.0;
// A tensor-core kernel's SM throughput: the tensor FLOP fraction and the loads and epilogue the SM
// issues beside it (GPT-2 and Llama GEMMs: 1.07-1.12x).
inline constexpr double kTensorIssueOverhead = 1.1;
// The share of L2 that holds a kernel's writes until it ends (write-back): DRAM sees only the
// writes beyond it while the kernel runs (element-wise layers of every case: 0.3-0.4 of 50 MB).
inline constexpr double kL2WriteBackShare = 0.35;
// Nsight Compute's Duration (gpu__time_duration) of a kernel runs longer than CUPTI's record of the
// same kernel by a fixed amount, and its throughputs are averaged over that window: on the H100,
// llama-4l's decode (batch 1) and prefill (2,048 tokens) replays, the element-wise, norm, gather
// and rotary layers measured 1.06-1.67 us longer under ncu (median 1.38 us), with its cache
// control on or off (tests/data/reference/ncu, docs/profile.md). Layers that take a few
// microseconds read latency-bound there.
inline constexpr double kNsightDurationOverhead = 1.38e-6;
// A fraction this close to the latency line (or two roofs this close to each other above it)
// does not decide the class: the report says so.
inline constexpr double kClassMargin = 0.05;

// Thread blocks of an element-wise style kernel: 2048 elements (256 threads x 8) per block.
int64_t elementwise_tiles(int64_t elements);

// ---- training (docs/training.md) ----------------------------------------------------------------

// Backward of y = x W: dX = dY W^T and dW = X^T dY, each as many FLOPs as the forward.
inline constexpr int64_t kBackwardGemmFactor = 2;
// Backward of a memory-bound op (element-wise, norm, batch norm): it reads the output's gradient
// and the saved input and writes the input's gradient, about twice the forward's work.
inline constexpr int64_t kBackwardMemoryFactor = 2;
// A fused attention's backward (flash, memory-efficient) runs five matrix products (S = QK^T
// again, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q) against the forward's two: 2.5x the
// forward's matrix FLOPs (FlopCounterMode's sdpa backward counts the same five, dense). The math
// path keeps the probabilities and runs four: 2x.
inline constexpr double kFusedAttentionBackwardFactor = 2.5;
inline constexpr double kMathAttentionBackwardFactor = 2.0;

// Time, not FLOPs: SDPA's backward over its forward, and what dropout inside attention costs,
// as PyTorch 2.11 runs them on an H100 (causal; the medians over five shapes of
// tests/data/reference/training/h100-attention.json, scripts/gpu/training_attention.py). The
// backward recomputes the scores and reads and writes more than the forward: its time ratio is
// above the FLOP ratio. Dropout draws its mask in the forward (Philox) and again in the backward.
struct AttentionTrainingTime {
  double backward_over_forward;  // without dropout
  double dropout_forward;        // forward with dropout over forward without
  double dropout_backward;       // backward with dropout over backward without
};
// 16-bit inputs: cuDNN's / flash attention.
inline constexpr AttentionTrainingTime kFusedAttention16Time{4.00, 1.88, 1.00};
// fp32: the memory-efficient kernel.
inline constexpr AttentionTrainingTime kEfficientAttention32Time{2.73, 1.26, 1.09};

// An optimizer step per parameter: FLOPs, bytes moved (state dtype `state_bytes`, parameter and
// gradient dtype `param_bytes`), and the state it keeps. `rows`/`cols` give Adafactor its
// factored second moment (a matrix keeps one value per row and per column; a vector a full one).
enum class OptimizerKind { adamw, sgd, adafactor };
struct OptimizerWork {
  int64_t flops = 0, bytes = 0, state_bytes = 0, temporary_bytes = 0;
  int launches = 0;  // foreach kernels per step (one per list operation)
};
OptimizerWork optimizer_work(OptimizerKind kind, int64_t elements, int64_t rows, int64_t cols,
                             int64_t param_bytes, int64_t state_bytes);

// ZeRO (Rajbhandari et al. 2020) per GPU among `ranks` data-parallel GPUs: stage 1 partitions the
// optimizer states, stage 2 also the gradients, stage 3 also the weights.
struct ModelState {
  int64_t weights = 0, grads = 0, optimizer = 0;
  int64_t total() const { return weights + grads + optimizer; }
};
ModelState zero_partition(const ModelState& whole, int stage, int64_t ranks);

// Korthikanti et al. 2022 (Reducing Activation Recomputation in Large Transformer Models), bytes
// of activations one GPT layer keeps in 16-bit training without recomputation: s*b*h*(34 +
// 5*a*s/h); with tensor parallelism t: s*b*h*(10 + 24/t + 5*a*s/(h*t)); with sequence parallelism
// too: s*b*h/t*(34 + 5*a*s/h); with selective recomputation the 5*a*s/h term is gone.
int64_t korthikanti_layer_bytes(int64_t seq, int64_t batch, int64_t hidden, int64_t heads,
                                int64_t tp, bool sp, bool selective);

}  // namespace rooflens
