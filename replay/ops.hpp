#pragma once
// The operations the replay kernels implement, as enums resolved once from ONNX op names by the
// planner: kernels/ switches on these and never compares op-type strings. No CUDA here.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/core/formulas.hpp"

namespace rooflens::replay {

inline constexpr size_t kMaxReplayRank = 6;

// Weight-only quantized GEMMs (kernels/weight_only.hpp) read their packed weights in tiles of 16
// rows by this many k (each lane's 16 bytes: 32 four-bit or 16 eight-bit weights), one scale per
// group over at least one mma step of 16 k: the layouts they take.
constexpr int64_t weight_only_tile_k(int bits) {
  return bits == 4 ? 64 : 32;
}
constexpr bool weight_only_layout_supported(int bits, int64_t k, int64_t group) {
  if (bits != 4 && bits != 8) return false;
  return k > 0 && group > 0 && k % weight_only_tile_k(bits) == 0 && group % 16 == 0 &&
         k % group == 0;
}

enum class EwOp : int {
  // unary
  relu,
  gelu,
  gelu_tanh,
  sigmoid,
  swish,
  tanh_,
  exp_,
  erf_,
  sqrt_,
  neg,
  abs_,
  reciprocal,
  log_,
  softplus,
  leaky_relu,
  hard_sigmoid,
  hard_swish,
  identity,
  cast,
  // binary
  add,
  sub,
  mul,
  div,
  pow_,
  max_,
  min_,
  // ternary
  where,
  clip,
};
// The functor for an ONNX (or com.microsoft) element-wise op; nullopt when the replay has none.
std::optional<EwOp> elementwise_op_from(std::string_view op);

enum class RowReduce { sum, mean, max, min, sum_square, l2 };
std::optional<RowReduce> row_reduce_from(std::string_view op);

// A 2-D pooling window over NCHW.
struct Pool2d {
  int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  bool max;
};

// [rows, cols] of a shape with cols the product of the dims from `axis` on.
std::pair<int64_t, int64_t> rows_cols(const std::vector<int64_t>& shape, int64_t axis);

// A decode step's attention that the group kernels take (kernels/decode_attention*.cu): groups of
// 1-8 query heads per KV head, head dim 64 or 128, V apart from K. The only shapes the fp8-cache
// kernel takes.
bool decode_group_shape(const AttentionDims& d, bool separate_v);

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// Strides that read `in` broadcast to `out` (numpy rules): 0 along broadcast dims.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out);

}  // namespace rooflens::replay
