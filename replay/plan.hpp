#pragma once
// What the harness runs for each node, decided on the CPU from the analysis and the shape-bound
// graph: the buffers and one typed plan per kernel kind. kernels/ executes these plans (picking
// the vendor library or our kernel by measuring); a node kind without a plan gets a reason here
// and is reported as not replayed, never timed as zero.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/hw/collective_curves.hpp"
#include "analyzer/ir/graph.hpp"
#include "replay/ops.hpp"

namespace rooflens::replay {

struct BufferSpec {
  DType dtype = DType::undefined;
  Shape shape;
  int64_t bytes = 0;
  int64_t index_bound = 0;  // > 0: integer indices, filled in [0, index_bound)
};

// A GEMM, batched or not. A: [batch or 1, m, k]; B: weights [n, k] (nn.Linear's layout), or
// [k, n] when b_kn; D: [batch, m, n]. Leading dims that share one weight are already folded
// into m by the analyzer, so a [8, 1, 4096] x [4096, 11008] product arrives as m = 8.
struct GemmPlan {
  GemmDims dims;
  bool a_shared = false, b_shared = true;  // operand identical across the batch
  bool b_kn = false;
  bool bias = false;  // a length-n bias (Gemm's C) added in the epilogue
};
// A weight-only quantized GEMM (kernels/weight_only.hpp): A [m, k] floats; W [n, k] in `bits` bits,
// packed (n * k * bits / 8 bytes); one scale in A's dtype per `group` weights of a row
// ([n, k / group]); a length-n bias when `bias`. The buffers are the replay's own layout of the
// graph's (GPTQ, AWQ, MatMulNBits, ... each pack differently): the same weight bytes.
struct WeightOnlyGemmPlan {
  GemmDims dims;
  int bits = 4;
  int64_t group = 128;
  bool bias = false;
};
// A 1-D or 2-D convolution on NCHW tensors.
struct ConvPlan {
  ConvDims conv;
  bool pointwise = false;  // 1x1, stride 1, unpadded: a GEMM on the input as it lies
  bool bias = false;       // a per-output-channel bias (the third input)
};
// q [B, Sq, Hq, Dqk], k [B, Hkv, Skv, Dqk], v [B, Hkv, Skv, Dv], out [B, Sq, Hq, Dv]. v_in_k: V is
// the first Dv of each K row (MLA's shared latent) and has no buffer of its own.
struct AttentionPlan {
  AttentionDims dims;
  bool v_in_k = false;
  bool decode() const { return dims.q_len == 1; }
};
// Top-k routing, then the experts' GEMMs on their rows (uniform routing, as the prediction).
struct MoePlan {
  MoeDims dims;
};
struct ElementwisePlan {
  EwOp op = EwOp::identity;
};
struct SoftmaxPlan {
  int64_t rows = 0, cols = 0;
  bool log = false;
};
// Layer norm or RMS norm over the trailing `cols`; residual: the second input is added first.
struct NormPlan {
  int64_t rows = 0, cols = 0;
  bool rms = false, residual = false, beta = false;
};
struct BatchNormPlan {
  int64_t channels = 0, spatial = 0;
};
// Each of `rows` rows reduces `cols` values; inner > 1: a middle axis, the values `inner` apart
// and `inner` results a row (a [rows, cols, inner] tensor reduced over its middle dim).
struct ReducePlan {
  int64_t rows = 0, cols = 0;
  RowReduce op = RowReduce::sum;
  int64_t inner = 1;
};
struct TopKPlan {
  int64_t rows = 0, cols = 0, k = 0;
};
struct PoolPlan {
  Pool2d pool{};
};
// One strided copy: dst[i] = src[src_offset + sum(idx_d * src_strides[d])] over `extent`, written
// at dst_offset + sum(idx_d * dst_strides[d]). Offsets and strides in elements.
struct CopyPart {
  int src = 0, dst = 0;  // buffer indices (inputs first, then outputs)
  std::vector<int64_t> extent, src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};
struct CopyPlan {
  std::vector<CopyPart> parts;
  int elem_bytes = 0;
};
// Concat (split = false) or Split along one axis in one launch: the whole is [outer, sum of
// part_cols], part j is [outer, part_cols[j]].
struct ConcatSplitPlan {
  bool split = false;
  std::vector<int64_t> part_cols;
  int64_t outer = 1;
  int elem_bytes = 0;
};
// out[o, j, i] = data[o, idx[j], i]; data is [outer, axis_len, inner].
struct GatherPlan {
  int64_t outer = 1, axis_len = 0, n_indices = 0, inner = 1;
  int elem_bytes = 0;
};
// Rotary embedding of the first rotary_dim of each head; bhsd: x is (B, H, S, D), else (B, S, H*D).
struct RopePlan {
  int64_t rows = 0, heads = 0, seq = 0, head_dim = 0, rotary_dim = 0;
  bool bhsd = false;
};

// A collective among the replay's GPUs, through NCCL, of nccl-tests' size (the whole tensor): the
// input reduced into the output (a tensor-parallel all-reduce), or its rows exchanged with every
// peer (expert parallelism's all-to-all).
struct CollectivePlan {
  Collective op = Collective::all_reduce;
  int64_t bytes = 0, ranks = 0;
};

using KernelPlan =
    std::variant<GemmPlan, WeightOnlyGemmPlan, ConvPlan, AttentionPlan, MoePlan, ElementwisePlan,
                 SoftmaxPlan, NormPlan, BatchNormPlan, ReducePlan, TopKPlan, PoolPlan, CopyPlan,
                 ConcatSplitPlan, GatherPlan, RopePlan, CollectivePlan>;
// "gemm", "conv", ... for reports and tests.
std::string_view kind_name(const KernelPlan& k);

struct ReplayPlan {
  int node = -1;
  std::string path;  // the layer path: NodeResult name
  Precision precision = Precision::fp32;
  std::vector<BufferSpec> inputs, outputs;  // omitted optional inputs are left out
  KernelPlan kernel;
  std::string description;  // what the plan asks for, before a library is picked
  int64_t buffer_bytes() const;
  template <class T>
  const T& as() const {
    return std::get<T>(kernel);
  }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(kernel);
  }
};

struct ReplayDecision {
  ReplayStatus status = ReplayStatus::not_replayed;
  std::string reason;
  std::optional<ReplayPlan> plan;
};

// One decision per analysis node, in node order. `forced` is the run's --dtype, which sets the
// storage of every float tensor as it did for the prediction. `gpus`: the GPUs the replay runs
// on together (profile --tp N); a collective over exactly that many is replayed through NCCL.
std::vector<ReplayDecision> plan_replay(const Analysis& a, const Graph& inferred,
                                        std::optional<Precision> forced, int gpus = 1);

}  // namespace rooflens::replay
