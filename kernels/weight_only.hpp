#pragma once
// Weight-only quantized GEMMs: y[m, n] = x[m, k] . W[n, k]^T (+ bias[n]), W in 4 or 8 bits, each
// row's `group` consecutive weights sharing one scale in x's dtype, unsigned around 2^(bits-1):
// w = (q - 2^(bits-1)) * scale, the symmetric schemes (GPTQ without zero points, int8 per channel,
// MatMulNBits' default zero point).
//
// Engines repack such weights at load time for their kernels (Marlin, tinygemm, TensorRT-LLM);
// the replay's packing is its own, of the same bytes: tiles of 16 rows by 64 (4-bit) or 32
// (8-bit) k, 512 bytes each, row tile by row tile along k, each lane's 16 bytes holding the
// weights of its mma.sync A fragments (tile_position). Two kernels run it, as deployments do:
//   - a tensor-core GEMV for a decode's rows (up to kWeightOnlyGemvMaxRows), dequantizing in
//     registers, each lane's 16-byte load straight into its fragments;
//   - for more rows, the weights dequantized to x's dtype once, then cuBLASLt's GEMM (ONNX
//     Runtime's CUDA MatMulNBits without its TensorRT-LLM kernels does the same).
#include <cuda_runtime.h>

#include <cstdint>

#include "analyzer/core/dtype.hpp"
#include "replay/ops.hpp"

namespace rooflens::kernels {

using replay::weight_only_layout_supported;
using replay::weight_only_tile_k;

inline constexpr int64_t kWeightOnlyGemvMaxRows = 64;

// Where the v-th weight of `lane`'s 16 bytes in a tile sits: `row` (0..15) and `kk` (0..tile k)
// in the tile, and `byte` (0..15) and `shift` (0 or 4 for 4 bits, else 0) in the lane's bytes.
// v = 8 s + i covers the 16 k of mma step s: i % 4 picks the A register (rows g or g + 8, k
// 2 (lane % 4) or 8 more), i / 4 the lower or upper k of its pair.
struct TilePosition {
  int row, kk, byte, shift;
};
inline __host__ __device__ TilePosition tile_position(int bits, int lane, int v) {
  int s = v / 8, i = v % 8, p = i % 4, h = i / 4, g = lane / 4, tq = lane % 4;
  TilePosition t{};
  t.row = g + 8 * (p & 1);
  t.kk = 16 * s + 2 * tq + 8 * (p >> 1) + h;
  t.byte = bits == 4 ? 4 * s + i / 2 : 8 * s + i;
  t.shift = bits == 4 ? 4 * (i % 2) : 0;
  return t;
}
// Bytes from the start of W to the tile holding row tile `row_tile`, k tile `k_tile`.
inline __host__ __device__ int64_t tile_offset(int bits, int64_t k, int64_t row_tile,
                                               int64_t k_tile) {
  return (row_tile * (k / weight_only_tile_k(bits)) + k_tile) * 512;
}

// Whether weight_only_gemv() takes this problem: the layout (replay/ops.hpp), fp16/bf16 x,
// m <= kWeightOnlyGemvMaxRows, n whole row tiles, 16-byte aligned operands.
bool weight_only_gemv_supported(DType d, int bits, int64_t m, int64_t n, int64_t k, int64_t group,
                                const void* x, const void* w);
void weight_only_gemv(const void* x, const void* wq, const void* scales, const void* bias, void* y,
                      DType d, int bits, int64_t m, int64_t n, int64_t k, int64_t group,
                      cudaStream_t s);
// The same product on the CUDA cores for a decode's few rows (up to kGemvMaxRows), W read
// row-major (each row's k weights in order, 4-bit two a byte, the low nibble first): at one or two
// rows it streams the weights faster than the tensor-core GEMV. An engine packs once, for the
// kernel it runs; the replay times both on the same bytes, each reading them in its own packing.
bool weight_only_gemv_rows_supported(DType d, int bits, int64_t m, int64_t k, int64_t group,
                                     const void* x, const void* w);
void weight_only_gemv_rows(const void* x, const void* wq, const void* scales, const void* bias,
                           void* y, DType d, int bits, int64_t m, int64_t n, int64_t k,
                           int64_t group, cudaStream_t s);
// W as dense [n, k] of dtype d (fp32, fp16 or bf16).
void dequantize_weights(const void* wq, const void* scales, void* w, DType d, int bits, int64_t n,
                        int64_t k, int64_t group, cudaStream_t s);

}  // namespace rooflens::kernels
