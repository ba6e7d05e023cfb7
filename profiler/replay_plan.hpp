#pragma once
// What the harness runs for each node: the replay kernel, its buffers and dims, decided on the
// CPU from the analysis and the shape-inferred graph. A node kind without a replay kernel gets
// a reason here and is reported as not replayed, never timed as zero.
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analysis.hpp"
#include "analyzer/graph.hpp"

namespace rooflens::profiler {

enum class ReplayKind {
  gemm,         // cuBLASLt, batched/broadcast
  conv,         // im2col + cuBLASLt GEMM (1x1 stride-1 convolutions skip the im2col)
  attention,    // fused flash-style prefill, or split-KV decode when one query per sequence
  moe,          // top-k routing, then one cuBLASLt GEMM per expert on its share of the tokens
  elementwise,  // unary/binary/ternary with broadcast
  softmax,      // over the last axis
  layer_norm,   // over the trailing axes (also rms_norm via `op`)
  batch_norm,   // inference: per-channel scale and shift
  reduce_rows,  // reductions over trailing axes, global pooling, TopK
  pool2d,       // MaxPool / AveragePool windows
  strided_copy, // transpose, concat, split, slice, expand: one strided copy per part
  gather,       // embedding lookup and Gather along any axis
  rope,         // rotary embedding
};
std::string_view replay_kind_name(ReplayKind k);

struct BufferSpec {
  DType dtype = DType::undefined;
  Shape shape;
  int64_t bytes = 0;
  int64_t index_bound = 0;  // > 0: integer indices, filled in [0, index_bound)
};

// One strided copy: dst[i] = src[src_offset + sum(idx_d * src_strides[d])] over `extent`, written
// at dst_offset + sum(idx_d * dst_strides[d]). Offsets and strides in elements.
struct CopyPart {
  int src = 0, dst = 0;  // buffer indices (inputs first, then outputs)
  std::vector<int64_t> extent, src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};

struct ReplayPlan {
  int node = -1;
  std::string path;  // the layer path: NodeResult name
  ReplayKind kind = ReplayKind::elementwise;
  std::string op;    // ONNX op, picks the functor (Add, Gelu, ReduceMean, MaxPool, ...)
  Precision precision = Precision::fp32;
  std::vector<BufferSpec> inputs, outputs;  // omitted optional inputs are left out
  KernelShape shape;                        // gemm, conv, attention, moe
  int64_t rows = 0, cols = 0;               // row kernels; batch_norm: channels x spatial
  int64_t k = 0;                            // TopK
  bool residual = false;                    // Skip*LayerNorm: add the second input first
  std::vector<CopyPart> copies;             // strided_copy
  std::vector<int64_t> part_cols;           // Concat/Split as one launch: [outer, part_cols[j]] parts
  int64_t axis = 0, outer = 1, inner = 1;   // gather: data [outer, axis_len, inner]; Concat/Split: outer
  std::vector<int64_t> window, strides, pads;  // pool2d (h, w); pads (top, left, bottom, right)
  int64_t rotary_dim = 0, head_dim = 0;     // rope
  std::string description;                  // what runs, for the report
  int64_t buffer_bytes() const;
};

struct ReplayDecision {
  ReplayStatus status = ReplayStatus::not_replayed;
  std::string reason;
  std::optional<ReplayPlan> plan;
};

// A 1x1, stride-1, unpadded convolution is a GEMM on the input as it lies: no im2col.
bool conv_is_pointwise(const ConvDims& c);

// One decision per analysis node, in node order. `forced` is the run's --dtype, which sets the
// storage of every float tensor as it did for the prediction.
std::vector<ReplayDecision> plan_replay(const Analysis& a, const Graph& inferred, std::optional<Precision> forced);

}  // namespace rooflens::profiler
