#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "analyzer/core/formulas.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gemv_common.cuh"
#include "kernels/mma.cuh"
#include "kernels/strided.cuh"
#include "kernels/weight_only.hpp"

namespace rooflens::kernels {
namespace {

constexpr int kWarps = 8;   // warps per block, taking turns along k
constexpr int kUnroll = 4;  // tile loads per row tile in flight per lane

template <class T>
using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

template <class T>
__device__ __forceinline__ uint32_t as_u32(Pair<T> v) {
  uint32_t r;
  memcpy(&r, &v, 4);
  return r;
}
template <class T>
__device__ __forceinline__ Pair<T> as_pair(uint32_t r) {
  Pair<T> v;
  memcpy(&v, &r, 4);
  return v;
}

// The four A registers of mma step s from a lane's 16 bytes of a tile, dequantized against the
// scales of its rows g (sc0) and g + 8 (sc1). 4-bit: a nibble or-ed into the mantissa of a 16-bit
// float of ulp 1 (bf16 128, fp16 1024) is that value plus the constant, no conversion
// instruction; 8-bit: the same in fp32 (2^23), then converted.
template <class T, int Bits>
__device__ __forceinline__ void dequantize_step(const uint4& raw, int s, float sc0, float sc1,
                                                uint32_t (&a)[4]) {
  const auto* w = reinterpret_cast<const uint32_t*>(&raw);
  if constexpr (Bits == 4) {
    constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
    constexpr uint32_t magic = bf ? 0x43004300u : 0x64006400u;
    const Pair<T> bias = bf ? as_pair<T>(0x43084308u) : as_pair<T>(0x64086408u);  // 128+8, 1024+8
    Pair<T> s0, s1;
    if constexpr (bf) {
      s0 = __float2bfloat162_rn(sc0);
      s1 = __float2bfloat162_rn(sc1);
    } else {
      s0 = __float2half2_rn(sc0);
      s1 = __float2half2_rn(sc1);
    }
    uint32_t word = w[s];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      Pair<T> v = as_pair<T>(((word >> (4 * p)) & 0x000F000Fu) | magic);
      a[p] = as_u32<T>(__hmul2(__hsub2(v, bias), p & 1 ? s1 : s0));
    }
  } else {
    uint32_t lo = w[2 * s], hi = w[2 * s + 1];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      float l = __int_as_float(0x4B000000 | ((lo >> (8 * p)) & 0xFF)) - 8388736.f;  // 2^23 + 128
      float h = __int_as_float(0x4B000000 | ((hi >> (8 * p)) & 0xFF)) - 8388736.f;
      float sc = p & 1 ? sc1 : sc0;
      a[p] = pack2<T>(l * sc, h * sc);
    }
  }
}

// Each block: TPW row tiles (16 rows each), its 8 warps taking turns along k; each warp loads x's B
// fragments (8 rows a fragment, NT of them) once per mma step and multiplies them with the
// dequantized A fragments of its row tiles. Partial sums meet in shared memory.
template <class T, int Bits, int NT, int TPW>
__global__ void __launch_bounds__(kWarps * 32)
    weight_only_gemv_kernel(const T* __restrict__ x, const uint8_t* __restrict__ w,
                            const T* __restrict__ scales, const T* __restrict__ bias,
                            T* __restrict__ y, int m, int64_t n, int64_t k, int64_t group) {
  constexpr int Kt = Bits == 4 ? 64 : 32, Steps = Kt / 16, Rows = 16 * TPW;
  __shared__ float sum[Rows][NT * 8];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, tq = lane % 4;
  for (int i = threadIdx.x; i < Rows * NT * 8; i += blockDim.x) (&sum[0][0])[i] = 0.f;
  __syncthreads();
  int64_t tiles = n / 16, chunks = k / Kt, groups = k / group;
  int64_t first_tile = blockIdx.x * int64_t(TPW);
  float acc[TPW][NT][4] = {};
  for (int64_t c0 = warp; c0 < chunks; c0 += kWarps * kUnroll) {
    uint4 wv[kUnroll][TPW];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int t = 0; t < TPW; ++t)
        if (c0 + u * kWarps < chunks && first_tile + t < tiles)
          wv[u][t] = reinterpret_cast<const uint4*>(
              w + tile_offset(Bits, k, first_tile + t, c0 + u * kWarps))[lane];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int64_t c = c0 + u * kWarps;
      if (c >= chunks) break;
      // A group of a whole chunk or more (GPTQ's 128, per channel): its scales read once.
      float chunk_sc[TPW][2];
      if (group >= Kt)
#pragma unroll
        for (int t = 0; t < TPW; ++t) {
          int64_t r0 = (first_tile + t) * 16 + g, gi = c * Kt / group;
          bool in = first_tile + t < tiles;
          chunk_sc[t][0] = in ? to_f(scales[r0 * groups + gi]) : 0.f;
          chunk_sc[t][1] = in ? to_f(scales[(r0 + 8) * groups + gi]) : 0.f;
        }
#pragma unroll
      for (int s = 0; s < Steps; ++s) {
        int64_t kb = c * Kt + 16 * s;
        uint32_t b[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          int row = 8 * nt + g;
          const T* xr = x + row * k + kb + 2 * tq;
          b[nt][0] = row < m ? *reinterpret_cast<const uint32_t*>(xr) : 0u;
          b[nt][1] = row < m ? *reinterpret_cast<const uint32_t*>(xr + 8) : 0u;
        }
#pragma unroll
        for (int t = 0; t < TPW; ++t) {
          if (first_tile + t >= tiles) break;
          int64_t r0 = (first_tile + t) * 16 + g;
          float sc0 = group >= Kt ? chunk_sc[t][0] : to_f(scales[r0 * groups + kb / group]),
                sc1 = group >= Kt ? chunk_sc[t][1] : to_f(scales[(r0 + 8) * groups + kb / group]);
          uint32_t a[4];
          dequantize_step<T, Bits>(wv[u][t], s, sc0, sc1, a);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma16816<T>(acc[t][nt], a, b[nt][0], b[nt][1]);
        }
      }
    }
  }
  // C fragment: rows g and g + 8 of the tile, x rows 2 tq and 2 tq + 1 of the fragment.
#pragma unroll
  for (int t = 0; t < TPW; ++t)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        atomicAdd(&sum[16 * t + g + 8 * (e / 2)][8 * nt + 2 * tq + e % 2], acc[t][nt][e]);
  __syncthreads();
  for (int i = threadIdx.x; i < Rows * m; i += blockDim.x) {
    int r = i % Rows, row = i / Rows;
    int64_t col = first_tile * 16 + r;
    if (col < n) y[row * n + col] = from_f<T>(sum[r][row] + (bias ? to_f(bias[col]) : 0.f));
  }
}

// The CUDA-core GEMV: gemv.cu's layout of the work (S warps per output column, each a contiguous
// slice of k, all its loads of a round in flight), reading row-major packed weights. A lane's
// 16-byte load brings 32 (4-bit) or 16 (8-bit) weights of one group; each becomes a float by the
// same mantissa trick (no conversion instruction), and the group's scale multiplies the load's
// partial sum once.
constexpr int kRowUnroll = 4;

template <class T, int Bits, int MaxM, int S>
__global__ void __launch_bounds__(kWarps * 32)
    weight_only_rows_kernel(const T* __restrict__ x, const uint8_t* __restrict__ w,
                            const T* __restrict__ scales, const T* __restrict__ bias,
                            T* __restrict__ y, int m, int64_t n, int64_t k, int64_t group) {
  constexpr int Q = 128 / Bits, V = Vec<T>::n;
  constexpr float offset = 8388608.f + (1 << (Bits - 1));  // 2^23 + the zero point
  __shared__ float partial[kWarps][MaxM];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, slice = warp % S;
  int64_t col = blockIdx.x * int64_t(kWarps / S) + warp / S;
  int64_t loads = k / Q, per_slice = (loads + S - 1) / S, groups = k / group;
  int64_t lo = slice * per_slice, hi = std::min(loads, lo + per_slice);
  float acc[MaxM] = {};
  if (col < n) {
    const auto* wr = reinterpret_cast<const uint4*>(w + col * (k * Bits / 8));
    const T* sr = scales + col * groups;
    for (int64_t v0 = lo + lane; v0 < hi; v0 += 32 * kRowUnroll) {
      uint4 wv[kRowUnroll];
      float sc[kRowUnroll];
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u)
        if (v0 + 32 * u < hi) {
          wv[u] = wr[v0 + 32 * u];
          sc[u] = to_f(sr[(v0 + 32 * u) * Q / group]);
        }
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        if (v0 + 32 * u >= hi) break;
        const auto* words = reinterpret_cast<const uint32_t*>(&wv[u]);
        float wf[Q];
#pragma unroll
        for (int i = 0; i < Q; ++i) {
          uint32_t q = (words[i * Bits / 32] >> ((i * Bits) % 32)) & ((1u << Bits) - 1);
          wf[i] = __int_as_float(0x4B000000 | q) - offset;
        }
        const T* xk = x + (v0 + 32 * u) * Q;
#pragma unroll
        for (int r = 0; r < MaxM; ++r) {
          if (r >= m) break;
          float part = 0.f;
#pragma unroll
          for (int j = 0; j < Q / V; ++j) {  // x is small and stays in L1/L2
            Vec<T> xv = Vec<T>::load(xk + r * k + j * V);
#pragma unroll
            for (int e = 0; e < V; ++e) part += to_f(xv[e]) * wf[j * V + e];
          }
          acc[r] += part * sc[u];
        }
      }
    }
  }
  gemv_store<T, MaxM, S, kWarps>(acc, partial, m, col, n, bias, y);
}

// One warp a tile: each lane's 16 bytes dequantized into a shared copy of the tile, then written
// row by row in 16-byte stores (the dense rows are 128 or 64 bytes of the tile each).
template <class T, int Bits>
__global__ void __launch_bounds__(256)
    dequantize_kernel(const uint8_t* __restrict__ w, const T* __restrict__ scales,
                      T* __restrict__ out, int64_t n, int64_t k, int64_t group) {
  constexpr int Kt = Bits == 4 ? 64 : 32, Values = 128 / Bits, Mask = (1 << Bits) - 1,
                V = 16 / sizeof(T);
  constexpr float zero = 1 << (Bits - 1);
  __shared__ __align__(16) T tile[8][16][Kt];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t chunks = k / Kt, groups = k / group, tiles = n / 16 * chunks;
  for (int64_t t = blockIdx.x * 8 + warp; t < tiles; t += int64_t(gridDim.x) * 8) {
    int64_t row_tile = t / chunks, k_tile = t % chunks;
    uint4 raw = reinterpret_cast<const uint4*>(w)[t * 32 + lane];
    const auto* bytes = reinterpret_cast<const uint8_t*>(&raw);
#pragma unroll
    for (int v = 0; v < Values; ++v) {
      TilePosition p = tile_position(Bits, lane, v);
      int64_t row = row_tile * 16 + p.row, kk = k_tile * Kt + p.kk;
      float q = static_cast<float>((bytes[p.byte] >> p.shift) & Mask);
      tile[warp][p.row][p.kk] = from_f<T>((q - zero) * to_f(scales[row * groups + kk / group]));
    }
    __syncwarp();
    for (int i = lane; i < 16 * Kt / V; i += 32) {
      int r = i / (Kt / V), c = i % (Kt / V);
      *reinterpret_cast<uint4*>(out + (row_tile * 16 + r) * k + k_tile * Kt + c * V) =
          *reinterpret_cast<const uint4*>(&tile[warp][r][c * V]);
    }
    __syncwarp();
  }
}

template <class F>
void by_bits(int bits, F&& f) {
  if (bits == 4)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 8>{});
}

}  // namespace

bool weight_only_gemv_supported(DType d, int bits, int64_t m, int64_t n, int64_t k, int64_t group,
                                const void* x, const void* w) {
  if (d != DType::f16 && d != DType::bf16) return false;
  return weight_only_layout_supported(bits, k, group) && m >= 1 && m <= kWeightOnlyGemvMaxRows &&
         n % 16 == 0 && aligned16(x) && aligned16(w);
}

void weight_only_gemv(const void* x, const void* wq, const void* scales, const void* bias, void* y,
                      DType d, int bits, int64_t m, int64_t n, int64_t k, int64_t group,
                      cudaStream_t s) {
  if (!weight_only_gemv_supported(d, bits, m, n, k, group, x, wq))
    throw CudaError("weight-only GEMV: unsupported shape, dtype, group or alignment");
  auto run = [&](auto t, auto b, auto nt) {
    using T = decltype(t);
    // Beyond 8 rows each x fragment serves two row tiles; up to 8, one tile a block gives the
    // chip twice the blocks to stream the weights with.
    constexpr int NT = decltype(nt)::value, TPW = NT > 1 ? 2 : 1;
    auto blocks = static_cast<unsigned>((n / 16 + TPW - 1) / TPW);
    weight_only_gemv_kernel<T, decltype(b)::value, NT, TPW><<<blocks, kWarps * 32, 0, s>>>(
        static_cast<const T*>(x), static_cast<const uint8_t*>(wq), static_cast<const T*>(scales),
        static_cast<const T*>(bias), static_cast<T*>(y), static_cast<int>(m), n, k, group);
  };
  auto by_rows = [&](auto t, auto b) {
    if (m <= 8)
      run(t, b, std::integral_constant<int, 1>{});
    else if (m <= 16)
      run(t, b, std::integral_constant<int, 2>{});
    else if (m <= 32)
      run(t, b, std::integral_constant<int, 4>{});
    else
      run(t, b, std::integral_constant<int, 8>{});
  };
  by_bits(bits, [&](auto b) {
    if (d == DType::bf16)
      by_rows(__nv_bfloat16{}, b);
    else
      by_rows(__half{}, b);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

bool weight_only_gemv_rows_supported(DType d, int bits, int64_t m, int64_t k, int64_t group,
                                     const void* x, const void* w) {
  if (d != DType::f32 && d != DType::f16 && d != DType::bf16) return false;
  int64_t q = 128 / bits;
  return weight_only_layout_supported(bits, k, group) && group % q == 0 && m >= 1 &&
         m <= kGemvMaxRows && aligned16(x) && aligned16(w);
}

void weight_only_gemv_rows(const void* x, const void* wq, const void* scales, const void* bias,
                           void* y, DType d, int bits, int64_t m, int64_t n, int64_t k,
                           int64_t group, cudaStream_t s) {
  if (!weight_only_gemv_rows_supported(d, bits, m, k, group, x, wq))
    throw CudaError("weight-only GEMV (CUDA cores): unsupported shape, dtype, group or alignment");
  int split = gemv_warps_per_column(k / (128 / bits), kRowUnroll, kWarps);
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    by_bits(bits, [&](auto b) {
      dispatch_gemv(m, split, [&](auto rows, auto warps) {
        constexpr int M = decltype(rows)::value, S = decltype(warps)::value;
        weight_only_rows_kernel<T, decltype(b)::value, M, S>
            <<<blocks_for(n, kWarps / S, INT32_MAX), kWarps * 32, 0, s>>>(
                static_cast<const T*>(x), static_cast<const uint8_t*>(wq),
                static_cast<const T*>(scales), static_cast<const T*>(bias), static_cast<T*>(y),
                static_cast<int>(m), n, k, group);
      });
    });
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void dequantize_weights(const void* wq, const void* scales, void* w, DType d, int bits, int64_t n,
                        int64_t k, int64_t group, cudaStream_t s) {
  if (!weight_only_layout_supported(bits, k, group) || n % 16 != 0)
    throw CudaError("dequantize: unsupported layout");
  int64_t tiles = n / 16 * (k / weight_only_tile_k(bits));
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    by_bits(bits, [&](auto b) {
      dequantize_kernel<T, decltype(b)::value><<<blocks_for(tiles, 8, 132 * 8), 256, 0, s>>>(
          static_cast<const uint8_t*>(wq), static_cast<const T*>(scales), static_cast<T*>(w), n, k,
          group);
    });
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
