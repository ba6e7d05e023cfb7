#include "kernels/gemv.hpp"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kWarps = 8;   // output columns per block, one per warp
constexpr int kUnroll = 8;  // 16-byte loads of W in flight per lane: a 4096-wide bf16 row in two rounds

template <class T, int MaxM>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                           const T* __restrict__ bias, T* __restrict__ y, int m, int64_t n,
                                                           int64_t k) {
  constexpr int V = Vec<T>::n;
  int lane = threadIdx.x % 32;
  int64_t col = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32;
  if (col >= n) return;
  const T* wr = w + col * k;
  int64_t nvec = k / V;
  float acc[MaxM] = {};
  for (int64_t v0 = lane; v0 < nvec; v0 += 32 * kUnroll) {
    Vec<T> wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (v0 + 32 * u < nvec) wv[u] = Vec<T>::load(wr + (v0 + 32 * u) * V);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int64_t v = v0 + 32 * u;
      if (v >= nvec) break;
#pragma unroll
      for (int r = 0; r < MaxM; ++r) {
        if (r >= m) break;
        Vec<T> xv = Vec<T>::load(x + r * k + v * V);  // x is small and stays in L1/L2
#pragma unroll
        for (int j = 0; j < V; ++j) acc[r] += to_f(xv[j]) * to_f(wv[u][j]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < MaxM; ++r) {
    if (r >= m) break;
    float a = acc[r];
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    if (lane == 0) y[r * n + col] = from_f<T>(a + (bias ? to_f(bias[col]) : 0.f));
  }
}

}  // namespace

bool gemv_supported(DType d, int64_t m, int64_t k, const void* x, const void* w) {
  if (d != DType::f32 && d != DType::f16 && d != DType::bf16) return false;
  int64_t vec = 16 / (dtype_bits(d) / 8);
  return m >= 1 && m <= kGemvMaxRows && k % vec == 0 && aligned16(x) && aligned16(w);
}

void gemv(const void* x, const void* w, const void* bias, void* y, DType d, int64_t m, int64_t n, int64_t k, cudaStream_t s) {
  if (!gemv_supported(d, m, k, x, w)) throw CudaError("gemv: unsupported shape, dtype or alignment");
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    auto go = [&](auto kernel) {
      kernel<<<blocks_for(n, kWarps, INT32_MAX), kWarps * 32, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                                                      static_cast<const T*>(bias), static_cast<T*>(y),
                                                                      static_cast<int>(m), n, k);
    };
    if (m == 1) go(gemv_kernel<T, 1>);
    else if (m == 2) go(gemv_kernel<T, 2>);
    else if (m <= 4) go(gemv_kernel<T, 4>);
    else go(gemv_kernel<T, 8>);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
