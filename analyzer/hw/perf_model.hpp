#pragma once
// Which measured table predicts a node and at which coordinates, and the grids `rooflens
// calibrate` measures: one place for both, so that a node's coordinates and the shapes calibrate
// times mean the same thing.
//
// Tables and their axes (all coordinates > 0; times are the harness's: L2 cold, CUPTI kernel time):
//   gemm.<precision>            align, m, n, k         align: largest of 128..1 dividing n and k
//   moe.<bf16|fp8>              experts, rows, n, k    one projection of a MoE layer: `experts`
//                                                      GEMMs of `rows` rows each, one batched
//                                                      kernel, weights [experts, n, k]
//   moe_grouped.<bf16|fp8>      the same               the CUTLASS grouped GEMMs TensorRT-LLM
//                                                      runs (a row count per expert), through
//                                                      PyTorch's torch._grouped_mm
//                                                      (scripts/gpu/moe_grouped_gemm.py --table)
//   moe_fused.<bf16|fp8>        the same               the Triton fused-MoE kernel vLLM and
//                                                      SGLang run (rows sorted by expert, padded
//                                                      to the tile), tuned a point
//                                                      (scripts/gpu/fused_moe_triton.py --table)
//   moe_fused.mxfp4             the same               that kernel over MXFP4 experts (e2m1
//                                                      weights, an e8m0 scale per 32) and bf16
//                                                      rows, upcast in the kernel (gpt-oss)
//   woq.<int4|int8>             m, n, k                a weight-only quantized GEMM, bf16
//                                                      activations, weights in groups of 128
//   attn_prefill.<dtype>.causal d, heads, seq          heads = batch * q_heads; seq: the square
//   attn_prefill.<dtype>.full                          self-attention with the same executed scores
//   attn_prefill.fp8.causal     the same                 q, k, v in e4m3 (over an fp8 cache)
//   attn_decode.<dtype>         d, group, kv_heads, context   kv_heads = batch * kv heads
//   attn_decode.<dtype>.kv_fp8  the same                 over an fp8 (e4m3) KV cache
//   conv.<precision>.<k1s1|k1s2|k3s1|k3s2|k7s2|k14s14|k16s16>  pixels, out, in
//                                                      pixels = batch * output pixels
//   conv.<precision>.<g3s1|g3s2>  pixels, channels, width   grouped: width channels a group
//   mem.<elementwise|broadcast|transpose|copy|gather>  bytes
//   mem.<norm|softmax|reduce>   align, rows, cols      cols in bf16 elements (wider dtypes scaled);
//                                                      align 8: rows of whole 16-byte vectors, else
//                                                      1
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/core/cost.hpp"
#include "analyzer/core/dtype.hpp"
#include "analyzer/hw/device.hpp"

namespace rooflens {

// The woq tables' quantization group: a bf16 scale per 128 weights (GPTQ's and AWQ's default).
inline constexpr int64_t kWeightOnlyTableGroup = 128;

struct PerfQuery {
  std::string table;
  std::vector<double> x;
};
// nullopt: no table models this node's kernel; it is predicted from the roofline.
std::optional<PerfQuery> perf_query(const NodeCost& c, Precision p);

// One projection of a MoE layer, `experts` experts with `rows` rows each against their own
// [n, k] weights; nullopt for a precision without expert tables (the dense GEMM table's then).
std::optional<PerfQuery> expert_gemm_query(Precision p, int64_t experts, int64_t rows, int64_t n,
                                           int64_t k);
// The same over MXFP4 experts and bf16 rows (moe.mxfp4).
std::optional<PerfQuery> mxfp4_expert_query(int64_t experts, int64_t rows, int64_t n, int64_t k);

// The kernel an MoE layer's expert projections run on: the replay's batched GEMM (moe.*), the
// CUTLASS grouped GEMM (moe_grouped.*) or the Triton fused-MoE kernel (moe_fused.*).
enum class ExpertKernel { batched, grouped, fused };
const char* expert_kernel_name(ExpertKernel k);  // "batched", "grouped", "fused"
std::optional<ExpertKernel> expert_kernel_from_name(const std::string& name);

struct ExpertTables {
  std::shared_ptr<const PerfDatabase> db;
  ExpertKernel priced = ExpertKernel::batched;  // whose tables `db` prices experts from
};
// `db` with the moe.* tables replaced by those of `wanted`, for `serve`. A profile without any
// table of `wanted` falls back to the next kernel (fused, then grouped, then batched), the
// nearest in how it runs; `priced` says which one it got.
ExpertTables with_expert_kernel(std::shared_ptr<const PerfDatabase> db, ExpertKernel wanted);

// The largest of 128, 64, 16, 8, 4, 2, 1 that divides both n and k: the leading dims of the
// product as deployments lay it out ([m, k] activations, [n, k] weights, [m, n] output).
int64_t gemm_alignment(int64_t n, int64_t k);

// "k3s2" -> {3, 2}, a depthwise class "dw5s1" -> {5, 1}, a grouped one "g3s2" -> {3, 2}; nullopt
// for a name that is not a convolution class.
std::optional<std::pair<int64_t, int64_t>> conv_kernel_stride(const std::string& cls);
// Depthwise classes ("dw3s1") have the axes pixels and channels, the dense ones pixels, out, in.
bool is_depthwise_class(const std::string& cls);
// Grouped classes ("g3s1": ResNeXt's and RegNet's 3x3 convolutions, 1 < groups < channels, as
// many channels out as in) have the axes pixels, channels and width (channels a group).
bool is_grouped_class(const std::string& cls);
// The output image side a grouped layer with this many channels has in ResNeXt-50: 128 at 56,
// 256 at 28, 512 at 14, 1,024 and more at 7 (calibrate times each point on images of that side).
int64_t grouped_image_side(int64_t channels);
// The output image side a depthwise layer with this many channels has in the networks built of
// them (MobileNetV2/V3, EfficientNet, ConvNeXt): 16-32 channels at 112, 72-144 at 56, 192-240 at
// 28, 384-672 at 14, 960 and more at 7. A depthwise kernel's speed depends on the image's shape,
// not only on the pixels and channels, so calibrate times each point on images of that side.
int64_t depthwise_image_side(int64_t channels);

// FLOPs and bytes of one table point, to scale a time beyond the grid by the roofline.
struct GridWork {
  double flops = 0, bytes = 0;
  bool tensor_cores = false;
  Precision precision = Precision::bf16;
};
GridWork grid_work(const std::string& table, const std::vector<double>& x);
// The roofline's time of that work on `d`'s roofs: how a time beyond the grid is scaled.
double ideal_seconds(const GridWork& w, const Device& d);

// What calibrate measures.
struct TableGrid {
  std::string key;
  std::vector<std::string> axes;
  std::vector<std::vector<double>> grid;
};
std::vector<TableGrid> calibration_grids(bool quick);
// Those whose names start with one of `prefixes` (all when empty); InputError naming a prefix
// that matches no table.
std::vector<TableGrid> selected_grids(bool quick, const std::vector<std::string>& prefixes);
// Whether calibrate times this point: its estimated run on `d` fits the budget (seconds per run)
// and its buffers fit in `memory_bytes`.
bool grid_point_wanted(const std::string& table, const std::vector<double>& x, const Device& d,
                       double budget_s, int64_t memory_bytes);

}  // namespace rooflens
