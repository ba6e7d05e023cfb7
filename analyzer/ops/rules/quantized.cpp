// Quantized ONNX ops: QuantizeLinear / DequantizeLinear (QDQ), DynamicQuantizeLinear,
// QLinearMatMul (QOperator), com.microsoft MatMulNBits (int4 weight-only) and
// GatherBlockQuantized (an int4 embedding table). Bytes come out in
// the stored precision (int8/uint8/packed int4 inputs as they are); an 8-bit first input puts a
// GEMM on the int8 tensor roof. ConvInteger and QLinearConv are in rules/conv.cpp.
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

// y = saturate(round(x / scale) + zero_point): the zero point's dtype, uint8 without one.
void infer_quantize(InferContext& ctx) {
  ctx.set_output(0, ctx.has_input(2) ? ctx.dtype(2) : DType::u8, ctx.shape(0));
}

// y = (x - zero_point) * scale, in the scale's float dtype.
void infer_dequantize(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
}

// Two FLOPs an element: the scale and the zero point.
NodeCost cost_affine(const CostContext& ctx) {
  return rules::elementwise_cost(ctx, 2);
}

// y, its scale and zero point from x's range: a reduction pass (min and max) and a quantizing pass.
void infer_dynamic_quantize(InferContext& ctx) {
  ctx.set_output(0, DType::u8, ctx.shape(0));
  if (ctx.has_output(1)) ctx.set_output(1, DType::f32, {});
  if (ctx.has_output(2)) ctx.set_output(2, DType::u8, {});
}

NodeCost cost_dynamic_quantize(const CostContext& ctx) {
  NodeCost c = rules::elementwise_cost(ctx, 4);  // min, max; scale, zero point
  ctx.read_input(c, 0);                          // x is read by both passes
  return c;
}

// The GEMM of an [..., K] input with a 2-D [K, N] weight: M rows.
NodeCost gemm_cost(const CostContext& ctx, int64_t k, int64_t n, int64_t extra_flops) {
  GemmDims d{1, ctx.in_elements(0) / std::max<int64_t>(k, 1), n, k};
  NodeCost c;
  c.macs = gemm_macs(d);
  c.flops = checked_add(gemm_flops(d), extra_flops, "GEMM FLOPs");
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.parallel_tiles = gemm_tiles(d);
  c.tensor_cores = true;
  c.kernel.gemm = d;
  c.kernel.gemm_b_shared = true;
  c.tiled = d.m > kGemvMaxRows;
  return c;
}

// QLinearMatMul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero): an int8 GEMM whose
// int32 result is requantized (a multiply and an add per output) to y_zero's dtype.
void infer_qlinear_matmul(InferContext& ctx) {
  const Shape &a = ctx.shape(0), &b = ctx.shape(3);
  if (a.empty()) ctx.fail("input a must have rank >= 1");
  if (b.size() != 2) throw NotInferable{"QLinearMatMul with a batched b is not costed"};
  if (a.back() != b[0]) ctx.fail(fmt::format("inner dims differ: {} vs {}", a.back(), b[0]));
  Shape out = a;
  out.back() = b[1];
  ctx.set_output(0, ctx.has_input(7) ? ctx.dtype(7) : ctx.dtype(0), out);
}

NodeCost cost_qlinear_matmul(const CostContext& ctx) {
  const Shape& b = ctx.in_shape(3);
  return gemm_cost(ctx, b[0], b[1], checked_mul(2, ctx.out_elements(0), "requantize FLOPs"));
}

// MatMulNBits(A, B, scales, zero_points, g_idx, bias): A [..., K] times an N x K weight stored
// in `bits`-bit blocks of `block_size` along K (B [N, K / block_size, block_size * bits / 8]),
// one scale per block; every weight dequantized once (a multiply), the GEMM in A's dtype.
void infer_matmul_nbits(InferContext& ctx) {
  const Node& n = ctx.node();
  int64_t k = n.attr_int("K", 0), cols = n.attr_int("N", 0), bits = n.attr_int("bits", 4),
          block = n.attr_int("block_size", 0);
  if (k <= 0 || cols <= 0) ctx.fail("attributes K and N must be positive");
  if (bits < 2 || bits > 8) ctx.fail(fmt::format("bits is {}; MatMulNBits stores 2 to 8", bits));
  if (block < 16 || (block & (block - 1)) != 0)
    ctx.fail(fmt::format("block_size {} is not a power of 2 of at least 16", block));
  const Shape& a = ctx.shape(0);
  if (a.empty() || a.back() != k) ctx.fail(fmt::format("input A's last dim must be K = {}", k));
  Shape out = a;
  out.back() = cols;
  ctx.set_output(0, ctx.dtype(0), out);
}

NodeCost cost_matmul_nbits(const CostContext& ctx) {
  const Node& n = ctx.node();
  int64_t k = n.attr_int("K", 0), cols = n.attr_int("N", 0);
  int64_t dequantize = checked_mul(k, cols, "MatMulNBits weights");
  if (ctx.has_input(5))
    dequantize = checked_add(dequantize, ctx.out_elements(0), "MatMulNBits bias");
  NodeCost c = gemm_cost(ctx, k, cols, dequantize);
  c.kernel.gemm_weight_only = true;
  return c;
}

// GatherBlockQuantized(data, indices, scales, zero_points): rows of a weight stored in `bits`-bit
// blocks of `block_size` along quantize_axis (int4/uint4, or two 4-bit values a uint8 along the
// last axis), gathered along gather_axis and dequantized to the scales' dtype: a quantized
// embedding table. Two FLOPs an output element (the scale and the zero point).
int64_t values_per_stored_element(const Node& n, DType data) {
  int64_t bits = n.attr_int("bits", 4);
  return data == DType::u8 ? 8 / bits : 1;
}

void infer_gather_block_quantized(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1);
  int64_t bits = n.attr_int("bits", 4);
  if (bits != 4 && bits != 8) ctx.fail(fmt::format("bits is {}; expected 4 or 8", bits));
  if (n.attr_int("block_size", 128) < 16)
    ctx.fail(fmt::format("block_size {} is below 16", n.attr_int("block_size", 128)));
  int64_t rank = static_cast<int64_t>(data.size());
  if (rank < 1) ctx.fail("data must have rank >= 1");
  int64_t g = ctx.axis(n.attr_int("gather_axis", 0), rank);
  Shape unpacked = data;
  unpacked.back() = checked_mul(unpacked.back(), values_per_stored_element(n, ctx.dtype(0)),
                                "GatherBlockQuantized data");
  Shape out(unpacked.begin(), unpacked.begin() + g);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), unpacked.begin() + g + 1, unpacked.end());
  ctx.set_output(0, ctx.dtype(2), out);
}

NodeCost cost_gather_block_quantized(const CostContext& ctx) {
  const Node& n = ctx.node();
  int64_t out = ctx.out_elements(0), block = n.attr_int("block_size", 128);
  NodeCost c;
  c.flops = checked_mul(out, 2, "GatherBlockQuantized FLOPs");
  // The gathered rows as stored, their blocks' scales and zero points, the indices.
  ctx.read_input_part(c, 0, ceil_div(out, values_per_stored_element(n, ctx.input(0).dtype)));
  ctx.read_input(c, 1);
  ctx.read_input_part(c, 2, ceil_div(out, block));
  if (ctx.has_input(3)) ctx.read_input_part(c, 3, ceil_div(out, block));
  ctx.write_all_outputs(c);
  c.parallel_tiles = elementwise_tiles(out);
  c.kernel.memory = MemoryKernel::gather;
  return c;
}

}  // namespace

void register_quantized_rules(RuleRegistry& r) {
  r.add({"", "QuantizeLinear", OpFamily::elementwise, infer_quantize, cost_affine});
  r.add({"", "DequantizeLinear", OpFamily::elementwise, infer_dequantize, cost_affine});
  r.add({"", "DynamicQuantizeLinear", OpFamily::elementwise, infer_dynamic_quantize,
         cost_dynamic_quantize});
  r.add({"", "QLinearMatMul", OpFamily::gemm, infer_qlinear_matmul, cost_qlinear_matmul});
  r.add({"com.microsoft", "MatMulNBits", OpFamily::gemm, infer_matmul_nbits, cost_matmul_nbits});
  r.add({"com.microsoft", "GatherBlockQuantized", OpFamily::data_movement,
         infer_gather_block_quantized, cost_gather_block_quantized});
}

}  // namespace rooflens
