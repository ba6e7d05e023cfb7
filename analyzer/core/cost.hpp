#pragma once
// What one node costs. Filled by the op's rule; never recomputed downstream.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/core/collective.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens {

// Kernel classes: the roofline picks the compute unit from this, and reports group by it.
enum class OpFamily {
  gemm,
  conv,
  attention,
  elementwise,
  norm,
  softmax,
  reduce,
  pooling,
  data_movement,
  view,
  communication
};
std::string_view family_name(OpFamily f);

// The class of a memory-bound node's kernel, for the measured performance tables
// (analyzer/hw/perf_model.hpp): which of calibrate's memory sweeps predicts it.
enum class MemoryKernel {
  none,
  elementwise,
  broadcast,
  norm,
  softmax,
  reduce,
  transpose,
  copy,
  gather
};

// The dims of the kernel a rule priced, kept so the replay (replay/) runs exactly
// what was predicted instead of re-deriving shapes. Only the heavy families fill one.
struct KernelShape {
  std::optional<GemmDims> gemm;
  bool gemm_b_shared = false;  // the second operand is the same for every batch (weights)
  bool gemm_b_transposed = false;
  bool gemm_weight_only = false;  // 4- or 8-bit integer weights dequantized in the kernel
  std::optional<AttentionDims> attention;
  bool attention_fp8_cache = false;  // keys and values read from an fp8 (e4m3) cache
  std::optional<ConvDims> conv;
  std::optional<MoeDims> moe;
  MemoryKernel memory = MemoryKernel::none;
  int64_t rows = 0, cols = 0;  // row kernels (norm, softmax, reduce): rows of `cols` elements
  // A prefill over an fp8 cache runs the attention itself in fp8, its queries quantized too
  // (vLLM's FlashAttention-3); a decode step only reads the cache in fp8.
  bool fp8_attention() const { return attention && attention->q_len > 1 && attention_fp8_cache; }
};

struct NodeCost {
  int64_t flops = 0;
  std::optional<int64_t> macs;         // GEMM and conv only
  std::optional<int64_t> dense_flops;  // attention: the figure without the causal skip
  int64_t read_act = 0;                // bytes of activations read
  int64_t read_weight = 0;             // bytes of weights/constants read
  int64_t written = 0;                 // bytes written
  // Thread blocks a typical kernel for this node launches; below one wave the roofs are not
  // reachable. 0 means "derive from the bytes written".
  int64_t parallel_tiles = 0;
  bool tensor_cores = false;  // runs on the matrix units (GEMM, conv, attention)
  // A tiled GEMM-class kernel (more rows than a GEMV takes, implicit-GEMM conv, flash
  // attention): it pays the device's GEMM floor, not the plain launch floor.
  bool tiled = false;
  // Thread instructions the kernel issues where they are not about one per FLOP (issue-heavy
  // kernels: tanh GELU, strided splits, pooling windows, depthwise convolutions); 0: from the
  // FLOPs.
  double instructions = 0;
  Collective collective = Collective::all_reduce;  // a collective of this kind
  int64_t collective_bytes = 0;  // ... over this many bytes per rank (nccl-tests' size)
  int64_t collective_ranks = 0;  // ... among this many GPUs
  std::string note;              // e.g. "causal: executed half of the dense scores; fused traffic"
  KernelShape kernel;

  int64_t bytes() const { return read_act + read_weight + written; }
};

// A GEMM's compute side, assembled in this one place (ONNX rules, training's backward and
// attention math): FLOPs, MACs, thread blocks and the kernel class, up to kGemvMaxRows rows a
// GEMV that streams its weights, above a tiled matrix-unit kernel. Callers add the bytes.
inline NodeCost gemm_cost(const GemmDims& g, bool tensor_cores) {
  NodeCost c;
  c.macs = gemm_macs(g);
  c.flops = gemm_flops(g);
  c.parallel_tiles = gemm_tiles(g);
  c.tensor_cores = tensor_cores;
  c.tiled = g.m > kGemvMaxRows;
  c.kernel.gemm = g;
  return c;
}

}  // namespace rooflens
