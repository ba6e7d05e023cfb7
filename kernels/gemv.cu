#include <algorithm>

#include "kernels/gemv.hpp"
#include "kernels/gemv_common.cuh"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kWarps = 8;   // warps per block
constexpr int kUnroll = 8;  // 16-byte loads of W in flight per lane per round

// Each output column is shared by S warps of a block, each summing a contiguous slice of k;
// the block covers kWarps / S columns. S is picked so that a lane's slice of a row fits in one
// round of loads (all of them in flight at once, no load-wait-load chain per warp). Partial sums
// meet in shared memory.
template <class T, int MaxM, int S>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                T* __restrict__ y, int m, int64_t n, int64_t k) {
  constexpr int V = Vec<T>::n;
  __shared__ float partial[kWarps][MaxM];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, slice = warp % S;
  int64_t col = blockIdx.x * int64_t(kWarps / S) + warp / S;
  int64_t nvec = k / V, per_slice = (nvec + S - 1) / S;
  int64_t lo = slice * per_slice, hi = std::min(nvec, lo + per_slice);
  float acc[MaxM] = {};
  if (col < n) {
    const T* wr = w + col * k;
    for (int64_t v0 = lo + lane; v0 < hi; v0 += 32 * kUnroll) {
      Vec<T> wv[kUnroll], xv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (v0 + 32 * u < hi) wv[u] = Vec<T>::load(wr + (v0 + 32 * u) * V);
#pragma unroll
      for (int r = 0; r < MaxM; ++r) {
        if (r >= m) break;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)  // x is small and stays in L1/L2
          if (v0 + 32 * u < hi) xv[u] = Vec<T>::load(x + r * k + (v0 + 32 * u) * V);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (v0 + 32 * u >= hi) break;
#pragma unroll
          for (int j = 0; j < V; ++j) acc[r] += to_f(xv[u][j]) * to_f(wv[u][j]);
        }
      }
    }
  }
  gemv_store<T, MaxM, S, kWarps>(acc, partial, m, col, n, bias, y);
}

}  // namespace

bool gemv_supported(DType d, int64_t m, int64_t k, const void* x, const void* w) {
  if (d != DType::f32 && d != DType::f16 && d != DType::bf16) return false;
  int64_t vec = 16 / (dtype_bits(d) / 8);
  return m >= 1 && m <= kGemvMaxRows && k % vec == 0 && aligned16(x) && aligned16(w);
}

void gemv(const void* x, const void* w, const void* bias, void* y, DType d, int64_t m, int64_t n,
          int64_t k, cudaStream_t s, int warps_per_column) {
  if (!gemv_supported(d, m, k, x, w))
    throw CudaError("gemv: unsupported shape, dtype or alignment");
  int64_t nvec = k / (16 / (dtype_bits(d) / 8));
  int split =
      warps_per_column > 0 ? warps_per_column : gemv_warps_per_column(nvec, kUnroll, kWarps);
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    dispatch_gemv(m, split, [&](auto rows, auto warps) {
      constexpr int M = decltype(rows)::value, S = decltype(warps)::value;
      gemv_kernel<T, M, S><<<blocks_for(n, kWarps / S, INT32_MAX), kWarps * 32, 0, s>>>(
          static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
          static_cast<T*>(y), static_cast<int>(m), n, k);
    });
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
