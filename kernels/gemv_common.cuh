#pragma once
// What the GEMV kernels (gemv.cu, weight_only.cu's CUDA-core one) share: how a column's k is split
// among warps, which instantiation a problem runs, and the end of a block.
#include <cstdint>
#include <type_traits>

#include "kernels/dtypes.cuh"

namespace rooflens::kernels {

// Warps per column: enough that a lane's share of a row is one round of `unroll` loads, no more.
// On the H100 (bf16, k 4096, cold weights) 1024 columns took 5.23 / 4.83 / 5.60 / 6.66 us at
// 1 / 2 / 4 / 8 warps per column and 4096 columns 13.82 / 13.82 / 14.67 / 20.34 us: splitting
// further to fill the chip with warps did not pay.
inline int gemv_warps_per_column(int64_t loads_per_row, int unroll, int max_warps) {
  int split = 1;
  while (split < max_warps && loads_per_row > int64_t{32} * unroll * split) split *= 2;
  return split;
}

// f(rows, warps) with the row capacity (1, 2, 4 or 8) that holds m and the warps per column
// (1, 2, 4 or 8) as compile-time constants.
template <class F>
void dispatch_gemv(int64_t m, int warps, F&& f) {
  auto by_warps = [&](auto rows) {
    switch (warps) {
      case 1:
        f(rows, std::integral_constant<int, 1>{});
        break;
      case 2:
        f(rows, std::integral_constant<int, 2>{});
        break;
      case 4:
        f(rows, std::integral_constant<int, 4>{});
        break;
      default:
        f(rows, std::integral_constant<int, 8>{});
        break;
    }
  };
  if (m == 1)
    by_warps(std::integral_constant<int, 1>{});
  else if (m == 2)
    by_warps(std::integral_constant<int, 2>{});
  else if (m <= 4)
    by_warps(std::integral_constant<int, 4>{});
  else
    by_warps(std::integral_constant<int, 8>{});
}

// The end of a GEMV block: each warp's sums of its rows reduced over its lanes, the S warps of a
// column (consecutive, slice 0 first) summed through shared memory, written with the bias.
template <class T, int MaxM, int S, int Warps>
__device__ __forceinline__ void gemv_store(const float (&acc)[MaxM], float (&partial)[Warps][MaxM],
                                           int m, int64_t col, int64_t n, const T* bias, T* y) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int r = 0; r < MaxM; ++r) {
    if (r >= m) break;
    float a = acc[r];
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    if (lane == 0) partial[warp][r] = a;
  }
  if constexpr (S > 1) __syncthreads();
  if (warp % S == 0 && lane < m && col < n) {
    float a = 0.f;
#pragma unroll
    for (int s = 0; s < S; ++s) a += partial[warp + s][lane];
    y[lane * n + col] = from_f<T>(a + (bias ? to_f(bias[col]) : 0.f));
  }
}

}  // namespace rooflens::kernels
