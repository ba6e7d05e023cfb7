// Decode attention over an fp8 (e4m3) KV cache under fp16/bf16 queries: the cache serving engines
// keep in fp8 (vLLM's kv_cache_dtype fp8, TensorRT-LLM's FP8 KV cache). The tensor-core split-KV
// decode of decode_attention.cu with the cache's own bytes in its cp.async ring, so half a 16-bit
// cache's bytes cross HBM; each warp turns its keys' bytes into fp16 fragments in registers.
//
// The fragments come from ldmatrix on the byte rows read as 16-bit pairs, so no shared-memory pass
// reorders them:
// - a K register holds dims 4t..4t+3 of one key, which the m16n8k16 B fragment takes as k = 2t,
// 2t+1
//   and 2t+8, 2t+9: Q's columns are staged in that order, and a dot product does not mind;
// - a transposed V register holds dims 2g, 2g+1 of keys 2t, 2t+1: a byte permute gives the pair of
//   keys for dim 2g and for 2g+1, so each n8 tile of the output holds every other dim, put back in
//   place when the warps' results are stored.
// e4m3 -> fp16 is exact for every e4m3 value; the math is fp16 whatever the query's type (queries
// are rounded to fp16 once: far inside its range; P lies in [0, 1]).
#include <cuda_fp8.h>

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "kernels/async_copy.cuh"
#include "kernels/attention.hpp"
#include "kernels/decode_grid.hpp"
#include "kernels/decode_merge.cuh"
#include "kernels/mma.cuh"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

using namespace decode;

// Cache rows in the ring: D bytes and 16 of padding, an odd number of 16-byte chunks, so that
// ldmatrix's eight row reads fall in distinct banks.
template <int D>
constexpr int fp8_row() {
  return D + 16;
}
// About 40-55 KB of ring: two blocks an SM at D 128 (mma_grid's assumption; three, or four with a
// two-stage ring, measured no faster on the H100), four at D 64.
template <int D>
constexpr int fp8_stages() {
  return D <= 64 ? 4 : 3;
}
template <int D>
constexpr size_t fp8_smem_bytes() {
  return static_cast<size_t>(16 * (D + 8) * 2 + 2 * fp8_stages<D>() * kMmaTileKeys * fp8_row<D>());
}

// Two e4m3 values (the first in the low byte) as an fp16 pair (the first in the low half).
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t pair) {
  __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair & 0xffffu), __NV_E4M3);
  uint32_t r;
  memcpy(&r, &h, 4);
  return r;
}

// Q's column for dim p: within each 16 dims, 4t + e -> 2t + e and 4t + 2 + e -> 8 + 2t + e.
__device__ __forceinline__ int fp8_q_column(int p) {
  int w = p % 16, t = w / 4, e = w % 4;
  return p - w + (e < 2 ? 2 * t + e : 8 + 2 * t + e - 2);
}

// Kept whole: as decode_mma_kernel (decode_attention.cu), its fragments live in registers across
// the tile loop.
template <class T, int D>
__global__ void __launch_bounds__(kGroupWarps * 32)
    decode_fp8_kernel(const T* __restrict__ Q, const uint8_t* __restrict__ K,
                      const uint8_t* __restrict__ V, float* __restrict__ part,
                      unsigned* __restrict__ done, T* __restrict__ out, int64_t skv, int64_t first,
                      int hq, int hkv, int64_t chunk, int64_t splits, float scale_log2,
                      float v_scale) {
  constexpr int LQ = D + 8, LB = fp8_row<D>(), S = fp8_stages<D>(), TK = kMmaTileKeys;
  extern __shared__ __align__(16) unsigned char ring[];
  __half* qs = reinterpret_cast<__half*>(ring);  // [16][LQ]: the group's heads, zero from G on
  uint8_t* ks = ring + 16 * LQ * 2;              // [S][TK][LB]
  uint8_t* vs = ks + S * TK * LB;
  __shared__ float red_o[kGroupWarps][kMmaMaxG][D];
  __shared__ float red_m[kGroupWarps][kMmaMaxG], red_l[kGroupWarps][kMmaMaxG];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, mi = lane / 8;
  int64_t split = blockIdx.x;
  int kvh = blockIdx.y % hkv, b = blockIdx.y / hkv, G = hq / hkv;
  const uint8_t* kb = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  const uint8_t* vb = V + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  int64_t begin = first + split * chunk, end = std::min<int64_t>(skv, begin + chunk);
  int tiles = static_cast<int>((end - begin + TK - 1) / TK);
  auto request = [&](int tile) {  // a group per tile, empty past the end
    if (tile < tiles)
      cp_async_kv_rows<uint8_t, D>(ks + (tile % S) * TK * LB, vs + (tile % S) * TK * LB, LB, kb, vb,
                                   begin + static_cast<int64_t>(tile) * TK, TK, end);
    cp_async_commit();
  };
  for (int i = 0; i < S - 1; ++i) request(i);
  // Q in 16-byte loads, all of a thread's issued before any is stored (one trip to memory, behind
  // the ring's); rows from G on are zero.
  constexpr int kQLoads = 16 * D / 8 / (kGroupWarps * 32);
  static_assert(kQLoads * kGroupWarps * 32 * 8 == 16 * D, "whole 16-byte loads per thread");
  Vec<T> qv[kQLoads];
#pragma unroll
  for (int j = 0; j < kQLoads; ++j) {
    int i = threadIdx.x + j * kGroupWarps * 32, r = i / (D / 8);
    qv[j] =
        r < G ? Vec<T>::load(Q + (static_cast<int64_t>(b) * hq + kvh * G + r) * D + i % (D / 8) * 8)
              : Vec<T>{};
  }
#pragma unroll
  for (int j = 0; j < kQLoads; ++j) {
    int i = threadIdx.x + j * kGroupWarps * 32, r = i / (D / 8), p = i % (D / 8) * 8;
#pragma unroll
    for (int e = 0; e < 8; ++e) qs[r * LQ + fp8_q_column(p + e)] = __float2half(to_f(qv[j][e]));
  }
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldsm_x4(qf[kk], qs + (mi % 2 * 8 + lane % 8) * LQ + kk * 16 + mi / 2 * 8);

  float m = -FLT_MAX, l = 0.f;
  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  for (int it = 0; it < tiles; ++it) {
    cp_async_wait<S - 2>();
    __syncthreads();
    request(it + S - 1);
    const uint8_t* kt = ks + ((it % S) * TK + warp * 16) * LB;
    const uint8_t* vt = vs + ((it % S) * TK + warp * 16) * LB;
    int64_t k0 = begin + static_cast<int64_t>(it) * TK + warp * 16;  // this warp's 16 keys
    float sc[2][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2) {
      // Matrix mi: keys (mi / 2) * 8 .. +7, dims of slice kk + mi % 2.
      uint32_t kf[4];
      ldsm_x4(kf, kt + (mi / 2 * 8 + lane % 8) * LB + (kk + mi % 2) * 16);
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          uint32_t r = kf[2 * j + s];
          mma16816<__half>(sc[j], qf[kk + s], e4m3x2_to_f16x2(r), e4m3x2_to_f16x2(r >> 16));
        }
    }
    float alpha = mma_softmax_step(sc, m, l, k0 + 2 * t, end, scale_log2);
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] *= alpha, o[j][1] *= alpha;
    uint32_t pa[4] = {pack2<__half>(sc[0][0], sc[0][1]), 0u, pack2<__half>(sc[1][0], sc[1][1]), 0u};
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      // Matrix mi, transposed: keys (mi % 2) * 8 .. +7, dims 16 (2c + mi / 2) .. +15. Register
      // bytes: key 2t at dims 2g, 2g+1, then key 2t+1 at the same dims.
      uint32_t vf[4];
      ldsm_x4_trans(vf, vt + (mi % 2 * 8 + lane % 8) * LB + (2 * c + mi / 2) * 16);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {  // dim 2g + e: bytes e and 2 + e
          uint32_t sel = e == 0 ? 0x4420u : 0x4431u;
          mma16816<__half>(o[4 * c + 2 * h + e], pa,
                           e4m3x2_to_f16x2(__byte_perm(vf[2 * h], 0, sel)),
                           e4m3x2_to_f16x2(__byte_perm(vf[2 * h + 1], 0, sel)));
        }
    }
  }
  cp_async_wait<0>();
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (g < G) {
    constexpr float kLn2 = 0.6931471805599453f;  // the merge works in natural-log units
    if (t == 0) red_m[warp][g] = m == -FLT_MAX ? -FLT_MAX : m * kLn2, red_l[warp][g] = l;
      // o[4c + 2h + e][i] is output column 2t + i of an n8 tile that holds dims 32c + 16h + 2n + e.
#pragma unroll
    for (int c = 0; c < D / 32; ++c)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            red_o[warp][g][32 * c + 16 * h + 2 * (2 * t + i) + e] =
                o[4 * c + 2 * h + e][i] * v_scale;
  }
  merge_warps_and_splits<T, D, kMmaMaxG>(red_o, red_m, red_l, part, done, out, b, hq, kvh, G, split,
                                         splits);
}

template <class T, int D>
void launch_fp8(const void* q, const void* k, const void* v, void* out, float* part, unsigned* done,
                const AttentionDims& d, int sm_count, float k_scale, float v_scale,
                cudaStream_t s) {
  constexpr size_t smem = fp8_smem_bytes<D>();
  auto kernel = decode_fp8_kernel<T, D>;
  allow_dynamic_smem(kernel, smem);
  DecodeGrid g = mma_grid(d, sm_count);
  dim3 grid(static_cast<unsigned>(g.splits), static_cast<unsigned>(d.batch * d.kv_heads));
  kernel<<<grid, kGroupWarps * 32, smem, s>>>(
      static_cast<const T*>(q), static_cast<const uint8_t*>(k), static_cast<const uint8_t*>(v),
      part, done, static_cast<T*>(out), d.kv_len, first_visible_key(d), static_cast<int>(d.q_heads),
      static_cast<int>(d.kv_heads), g.chunk, g.splits,
      k_scale * rsqrtf(static_cast<float>(D)) * 1.4426950408889634f, v_scale);
}

}  // namespace

void decode_attention_fp8_cache(const void* q, const void* k, const void* v, void* out,
                                void* workspace, DType dt, const AttentionDims& d, int sm_count,
                                cudaStream_t s, float k_scale, float v_scale) {
  if (!decode::group_kernel_takes(d, v != nullptr))
    throw CudaError("the fp8-cache decode takes groups of up to 8 heads of dim 64 or 128, V apart");
  auto* part = static_cast<float*>(workspace);
  auto* done = reinterpret_cast<unsigned*>(static_cast<char*>(workspace) +
                                           decode::partial_bytes(d, sm_count));
  dispatch_half(dt, [&](auto t) {
    using T = decltype(t);
    if (d.head_dim_qk == 64)
      launch_fp8<T, 64>(q, k, v, out, part, done, d, sm_count, k_scale, v_scale, s);
    else
      launch_fp8<T, 128>(q, k, v, out, part, done, d, sm_count, k_scale, v_scale, s);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
