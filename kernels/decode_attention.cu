// Decode attention (one query per sequence), split-KV: each block works through one slice of
// the cache and writes a partial (max, sum, unnormalized output); the slices are merged by the
// last block to finish, or by a combine kernel. Groups of up to 8 query heads per KV head (MHA,
// GQA) with head dim 64 or 128 go through either of two kernels fed by a cp.async ring: one on
// the CUDA cores (lanes per key, every head's math per lane), one on the tensor cores (the heads
// as the rows of an mma tile); the replay times both. Wider groups and MLA's latent (V a prefix
// of K) go through one that stages keys in shared memory.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/async_copy.cuh"
#include "kernels/attention.hpp"
#include "kernels/decode_grid.hpp"
#include "kernels/decode_merge.cuh"
#include "kernels/mma.cuh"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

using namespace decode;

// ---- groups of up to 8 heads: a few lanes per key, K and V tiles in a cp.async ring
// --------------

// A block takes one tile of keys per step (each warp 32 / L of them). Every K and V element feeds
// G heads' math, so at G 4-8 a warp's step is long; the tiles therefore come through a ring of
// shared-memory stages filled by cp.async (about 40 KB a block: four blocks an SM at G 4), which
// keeps HBM busy however long the math takes (loads into registers, one step ahead, reached half of
// HBM's rate at G 4).
template <int L>
constexpr int group_tile_keys() {
  return kGroupWarps * (32 / L);
}
// Rows of a tile in shared memory: with 4 lanes per key a quarter-warp's 16-byte loads span two
// rows, which the 64-byte pad puts in different banks.
template <int D, int L>
constexpr int group_row() {
  return D + (L < 8 ? 32 : 0);
}
template <int D, int L>
constexpr int group_stages() {
  int tile = 2 * group_tile_keys<L>() * group_row<D, L>() * 2;  // K and V, 16-bit
  int s = 40960 / tile;
  return s < 2 ? 2 : s > 8 ? 8 : s;
}
template <int D, int L>
constexpr size_t group_smem_bytes() {
  return static_cast<size_t>(2 * group_stages<D, L>() * group_tile_keys<L>() * group_row<D, L>()) *
         2;
}

// L lanes share one key, each holding E = D / L of its elements (in 16-byte chunks interleaved so
// that the L lanes read one contiguous run); a warp takes 32 / L keys per step. Every lane group
// keeps its own running max, sum and output for each of the MaxG heads (an online softmax per
// group), merged across groups and warps at the end.
// Kept whole: a kernel's main loop keeps its fragments in registers across the tile loop;
// split into device functions the compiler's allocation and schedule move, and the replay's
// figures (docs/profile.md) were measured on this body.
template <class T, int D, int MaxG, int L>
__global__ void __launch_bounds__(kGroupWarps * 32)
    decode_group_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                        float* __restrict__ part, unsigned* __restrict__ done, T* __restrict__ out,
                        int64_t skv, int64_t first, int hq, int hkv, int64_t chunk, int64_t splits,
                        float scale) {
  constexpr int KPW = 32 / L, E = D / L, C = E / 8, TK = group_tile_keys<L>(),
                LD = group_row<D, L>(), S = group_stages<D, L>();
  static_assert(C >= 1 && sizeof(T) == 2, "16-bit types, at least one 16-byte chunk per lane");
  extern __shared__ __align__(16) unsigned char ring[];
  T* ks = reinterpret_cast<T*>(ring);  // [S][TK][LD]
  T* vs = ks + S * TK * LD;
  __shared__ __align__(16) float qs[MaxG][D];
  __shared__ float red_o[kGroupWarps][MaxG][D];
  __shared__ float red_m[kGroupWarps][MaxG], red_l[kGroupWarps][MaxG];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gl = lane % L, kg = lane / L;
  int64_t split = blockIdx.x;
  int kvh = blockIdx.y % hkv, b = blockIdx.y / hkv, G = hq / hkv;
  const T* kb = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  const T* vb = V + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  float m[MaxG], l[MaxG], o[MaxG][E];
#pragma unroll
  for (int g = 0; g < MaxG; ++g) {
    m[g] = -FLT_MAX, l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) o[g][e] = 0.f;
  }
  int64_t begin = first + split * chunk, end = std::min<int64_t>(skv, begin + chunk);
  int tiles = static_cast<int>((end - begin + TK - 1) / TK);
  // Tile i into stage i % S; every thread commits a group per tile, empty past the end, so that
  // the count waited on stays the same.
  auto request = [&](int tile) {
    if (tile < tiles)
      cp_async_kv_rows<T, D>(ks + (tile % S) * TK * LD, vs + (tile % S) * TK * LD, LD, kb, vb,
                             begin + static_cast<int64_t>(tile) * TK, TK, end);
    cp_async_commit();
  };
  // The first tiles are requested before q, so the trips to memory overlap.
  for (int i = 0; i < S - 1; ++i) request(i);
  for (int i = threadIdx.x; i < MaxG * D; i += blockDim.x) {
    int g = i / D, e = i % D;
    qs[g][e] = g < G ? to_f(Q[(static_cast<int64_t>(b) * hq + kvh * G + g) * D + e]) * scale : 0.f;
  }
  int row = warp * KPW + kg;  // this lane group's key within a tile
  for (int it = 0; it < tiles; ++it) {
    cp_async_wait<S - 2>();  // tile it has landed (this thread's copies) ...
    __syncthreads();         // ... everyone's; and the stage refilled next was used one step ago
    request(it + S - 1);
    const T* kr = ks + ((it % S) * TK + row) * LD;
    const T* vr = vs + ((it % S) * TK + row) * LD;
    Vec<T> kv[C], vv[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      kv[c] = Vec<T>::load(kr + (c * L + gl) * 8);
      vv[c] = Vec<T>::load(vr + (c * L + gl) * 8);
    }
    float sc[MaxG];
#pragma unroll
    for (int g = 0; g < MaxG; ++g) {
      float acc = 0.f;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float4* q4 = reinterpret_cast<const float4*>(&qs[g][(c * L + gl) * 8]);
        float4 a = q4[0], bq = q4[1];
        acc += a.x * to_f(kv[c][0]) + a.y * to_f(kv[c][1]) + a.z * to_f(kv[c][2]) +
               a.w * to_f(kv[c][3]) + bq.x * to_f(kv[c][4]) + bq.y * to_f(kv[c][5]) +
               bq.z * to_f(kv[c][6]) + bq.w * to_f(kv[c][7]);
      }
#pragma unroll
      for (int off = L / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
      sc[g] = acc;
    }
    if (begin + static_cast<int64_t>(it) * TK + row < end) {
#pragma unroll
      for (int g = 0; g < MaxG; ++g) {
        float m_new = fmaxf(m[g], sc[g]);
        float alpha = __expf(m[g] - m_new), p = __expf(sc[g] - m_new);
        l[g] = l[g] * alpha + p;
        m[g] = m_new;
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            o[g][c * 8 + j] = o[g][c * 8 + j] * alpha + p * to_f(vv[c][j]);
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the block (the last groups are empty)
  // Merge the warp's lane groups, then the block's warps.
#pragma unroll
  for (int g = 0; g < MaxG; ++g) {
    float mg = m[g];
    for (int off = L; off < 32; off <<= 1) mg = fmaxf(mg, __shfl_xor_sync(0xffffffffu, mg, off));
    float f = __expf(m[g] - mg);
    float lg = l[g] * f;
    for (int off = L; off < 32; off <<= 1) lg += __shfl_xor_sync(0xffffffffu, lg, off);
#pragma unroll
    for (int e = 0; e < E; ++e) {
      float x = o[g][e] * f;
      for (int off = L; off < 32; off <<= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
      o[g][e] = x;
    }
    if (kg == 0) {
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int j = 0; j < 8; ++j) red_o[warp][g][(c * L + gl) * 8 + j] = o[g][c * 8 + j];
      if (gl == 0) red_m[warp][g] = mg, red_l[warp][g] = lg;
    }
  }
  merge_warps_and_splits<T, D, MaxG>(red_o, red_m, red_l, part, done, out, b, hq, kvh, G, split,
                                     splits);
}

// ---- groups of up to 8 heads on the tensor cores ------------------------------------------------
// The group's G query heads are the rows of one m16 tile (FlashAttention's decode for GQA folds
// them into query rows the same way), so Q K^T and P V are mma.sync m16n8k16 whatever G is: the
// CUDA cores' cost per key grows with G, this one's does not. A block takes one 64-key tile per
// step from a cp.async ring, 16 keys a warp, each warp with its own online softmax in base 2.

template <int D>
constexpr int mma_stages() {
  return D <= 64 ? 4 : 2;
}  // two blocks an SM either way
template <int D>
constexpr size_t mma_smem_bytes() {
  return static_cast<size_t>(16 + 2 * mma_stages<D>() * kMmaTileKeys) * (D + 8) * 2;
}

// Kept whole: a kernel's main loop keeps its fragments in registers across the tile loop;
// split into device functions the compiler's allocation and schedule move, and the replay's
// figures (docs/profile.md) were measured on this body.
template <class T, int D>
__global__ void __launch_bounds__(kGroupWarps * 32)
    decode_mma_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                      float* __restrict__ part, unsigned* __restrict__ done, T* __restrict__ out,
                      int64_t skv, int64_t first, int hq, int hkv, int64_t chunk, int64_t splits,
                      float scale_log2) {
  constexpr int LD = D + 8, kChunks = D / 8, S = mma_stages<D>(),
                TK = kMmaTileKeys;  // rows padded 16 bytes: ldmatrix without conflicts
  extern __shared__ __align__(16) unsigned char ring[];
  T* qs = reinterpret_cast<T*>(ring);  // [16][LD]: the group's heads, zero rows from G on
  T* ks = qs + 16 * LD;                // [S][TK][LD]
  T* vs = ks + S * TK * LD;
  __shared__ float red_o[kGroupWarps][kMmaMaxG][D];
  __shared__ float red_m[kGroupWarps][kMmaMaxG], red_l[kGroupWarps][kMmaMaxG];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  int64_t split = blockIdx.x;
  int kvh = blockIdx.y % hkv, b = blockIdx.y / hkv, G = hq / hkv;
  const T* kb = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  const T* vb = V + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  for (int i = threadIdx.x; i < 16 * kChunks; i += blockDim.x) {
    int r = i / kChunks, c = (i % kChunks) * 8;
    bool valid = r < G;
    cp_async16(qs + r * LD + c,
               valid ? Q + (static_cast<int64_t>(b) * hq + kvh * G + r) * D + c : Q, valid);
  }
  cp_async_commit();
  int64_t begin = first + split * chunk, end = std::min<int64_t>(skv, begin + chunk);
  int tiles = static_cast<int>((end - begin + TK - 1) / TK);
  auto request = [&](int tile) {  // as the CUDA-core kernel's: a group per tile, empty past the end
    if (tile < tiles)
      cp_async_kv_rows<T, D>(ks + (tile % S) * TK * LD, vs + (tile % S) * TK * LD, LD, kb, vb,
                             begin + static_cast<int64_t>(tile) * TK, TK, end);
    cp_async_commit();
  };
  for (int i = 0; i < S - 1; ++i) request(i);
  cp_async_wait<S - 1>();  // Q has landed
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldsm_x4(qf[kk], qs + ((lane / 8) % 2 * 8 + lane % 8) * LD + kk * 16 + lane / 16 * 8);

  // Row g of the tile is head g: its running max (base-2 scaled), this lane's partial sum, and
  // the output columns 8j + 2t, 8j + 2t + 1 (the fragments' rows g + 8 stay zero).
  float m = -FLT_MAX, l = 0.f;
  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  for (int it = 0; it < tiles; ++it) {
    cp_async_wait<S - 2>();
    __syncthreads();
    request(it + S - 1);
    const T* kt = ks + ((it % S) * TK + warp * 16) * LD;
    const T* vt = vs + ((it % S) * TK + warp * 16) * LD;
    int64_t k0 = begin + static_cast<int64_t>(it) * TK + warp * 16;  // this warp's 16 keys
    float sc[2][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t kf[4];
      ldsm_x4(kf, kt + (lane / 16 * 8 + lane % 8) * LD + kk * 16 + (lane / 8) % 2 * 8);
      mma16816<T>(sc[0], qf[kk], kf[0], kf[1]);
      mma16816<T>(sc[1], qf[kk], kf[2], kf[3]);
    }
    float alpha = mma_softmax_step(sc, m, l, k0 + 2 * t, end, scale_log2);
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] *= alpha, o[j][1] *= alpha;
    // P as the A fragment of 16 keys: rows g + 8 are zero.
    uint32_t pa[4] = {pack2<T>(sc[0][0], sc[0][1]), 0u, pack2<T>(sc[1][0], sc[1][1]), 0u};
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t vf[4];
      ldsm_x4_trans(vf, vt + ((lane / 8) % 2 * 8 + lane % 8) * LD + dp * 16 + lane / 16 * 8);
      mma16816<T>(o[2 * dp], pa, vf[0], vf[1]);
      mma16816<T>(o[2 * dp + 1], pa, vf[2], vf[3]);
    }
  }
  cp_async_wait<0>();
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (g < G) {
    constexpr float kLn2 = 0.6931471805599453f;  // the merge works in natural-log units
    if (t == 0) red_m[warp][g] = m == -FLT_MAX ? -FLT_MAX : m * kLn2, red_l[warp][g] = l;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      red_o[warp][g][j * 8 + 2 * t] = o[j][0], red_o[warp][g][j * 8 + 2 * t + 1] = o[j][1];
  }
  merge_warps_and_splits<T, D, kMmaMaxG>(red_o, red_m, red_l, part, done, out, b, hq, kvh, G, split,
                                         splits);
}

// Lanes per key: the most keys per step that keeps MaxG * E accumulators within 64 registers.
template <int D, int MaxG>
constexpr int lanes_per_key() {
  int l = D * MaxG / 64;
  return l < 4 ? 4 : l;
}

// ---- wide groups and MLA: one warp per query head, keys staged in shared memory --------------

constexpr int kMaxDv = 512;

struct GroupArgs {
  const void *q, *k, *v;
  void* out;
  float* part;
  unsigned* done;
};

template <class T, int D, int MaxG>
void launch_group(const GroupArgs& a, const AttentionDims& d, const DecodeGrid& g, cudaStream_t s) {
  constexpr int L = lanes_per_key<D, MaxG>();
  constexpr size_t smem = group_smem_bytes<D, L>();
  auto kernel = decode_group_kernel<T, D, MaxG, L>;
  allow_dynamic_smem(kernel, smem);
  dim3 grid(static_cast<unsigned>(g.splits), static_cast<unsigned>(d.batch * d.kv_heads));
  kernel<<<grid, kGroupWarps * 32, smem, s>>>(
      static_cast<const T*>(a.q), static_cast<const T*>(a.k), static_cast<const T*>(a.v), a.part,
      a.done, static_cast<T*>(a.out), d.kv_len, first_visible_key(d), static_cast<int>(d.q_heads),
      static_cast<int>(d.kv_heads), g.chunk, g.splits, rsqrtf(static_cast<float>(D)));
}

template <class T, int D>
void launch_group_d(const GroupArgs& a, const AttentionDims& d, const DecodeGrid& g,
                    cudaStream_t s) {
  int64_t G = d.q_heads / d.kv_heads;
  if (G == 1)
    launch_group<T, D, 1>(a, d, g, s);
  else if (G == 2)
    launch_group<T, D, 2>(a, d, g, s);
  else if (G <= 4)
    launch_group<T, D, 4>(a, d, g, s);
  else
    launch_group<T, D, 8>(a, d, g, s);
}

template <class T, int D>
void launch_mma(const GroupArgs& a, const AttentionDims& d, const DecodeGrid& g, cudaStream_t s) {
  constexpr size_t smem = mma_smem_bytes<D>();
  auto kernel = decode_mma_kernel<T, D>;
  allow_dynamic_smem(kernel, smem);
  dim3 grid(static_cast<unsigned>(g.splits), static_cast<unsigned>(d.batch * d.kv_heads));
  kernel<<<grid, kGroupWarps * 32, smem, s>>>(
      static_cast<const T*>(a.q), static_cast<const T*>(a.k), static_cast<const T*>(a.v), a.part,
      a.done, static_cast<T*>(a.out), d.kv_len, first_visible_key(d), static_cast<int>(d.q_heads),
      static_cast<int>(d.kv_heads), g.chunk, g.splits,
      rsqrtf(static_cast<float>(D)) * 1.4426950408889634f);
}

// Keys [t0, end) of a [keys, width] cache into shared rows of `ld` elements: 16-byte loads from
// HBM, 4-byte stores into the padded rows; rows past `end` are zero.
template <class T>
__device__ __forceinline__ void stage_keys(T* dst, int ld, const T* src, int width, int64_t t0,
                                           int64_t end) {
  for (int i = threadIdx.x; i < kDecodeKeys * (width / 8); i += blockDim.x) {
    int r = i / (width / 8), c = (i % (width / 8)) * 8;
    uint4 v{};
    if (t0 + r < end) v = *reinterpret_cast<const uint4*>(src + (t0 + r) * width + c);
    uint32_t* d = reinterpret_cast<uint32_t*>(dst + r * ld + c);
    d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
  }
}

// Partial results per (batch, head, split): running max, sum and the unnormalized output.
template <class T>
__global__ void __launch_bounds__(kHeadsPerBlock * 32)
    decode_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                  float* __restrict__ part, int64_t skv, int64_t first, int hq, int hkv, int dqk,
                  int dv, int64_t chunk, int64_t splits, float scale) {
  extern __shared__ __align__(16) unsigned char smem[];
  int kld = dqk + 2,
      vld = dv + 2;  // odd word strides: lanes reading their own row hit distinct banks
  float* qs = reinterpret_cast<float*>(smem);
  T* ks = reinterpret_cast<T*>(qs + kHeadsPerBlock * dqk);
  T* vs = ks + kDecodeKeys * kld;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t split = blockIdx.x;
  int G = hq / hkv, kvh = blockIdx.y / ((G + kHeadsPerBlock - 1) / kHeadsPerBlock);
  int hg = blockIdx.y % ((G + kHeadsPerBlock - 1) / kHeadsPerBlock);
  int b = blockIdx.z;
  int gh = hg * kHeadsPerBlock + warp;  // head within the group
  bool active = gh < G;
  int h = kvh * G + (active ? gh : 0);
  const T* kbase = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * dqk;
  const T* vbase = V ? V + (static_cast<int64_t>(b) * hkv + kvh) * skv * dv : nullptr;
  for (int i = lane; i < dqk; i += 32)
    qs[warp * dqk + i] = active ? to_f(Q[(static_cast<int64_t>(b) * hq + h) * dqk + i]) : 0.f;
  float o[kMaxDv / 32];
  for (int j = 0; j < kMaxDv / 32; ++j) o[j] = 0.f;
  float m = -FLT_MAX, l = 0.f;
  int64_t begin = first + split * chunk, end = std::min<int64_t>(skv, begin + chunk);
  for (int64_t t0 = begin; t0 < end; t0 += kDecodeKeys) {
    __syncthreads();
    stage_keys(ks, kld, kbase, dqk, t0, end);
    if (vbase) stage_keys(vs, vld, vbase, dv, t0, end);
    __syncthreads();
    if (!active) continue;
    // Lane t scores key t0 + t.
    float s = 0.f;
    const T* kr = ks + lane * kld;
    for (int i = 0; i < dqk; ++i) s += qs[warp * dqk + i] * to_f(kr[i]);
    bool valid = t0 + lane < end;
    s = valid ? s * scale : -FLT_MAX;
    float tile_max = s;
    for (int off = 16; off > 0; off >>= 1)
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
    float m_new = fmaxf(m, tile_max);
    float alpha = __expf(m - m_new);
    float p = valid ? __expf(s - m_new) : 0.f;
    float psum = p;
    for (int off = 16; off > 0; off >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, off);
    l = l * alpha + psum;
    m = m_new;
    const T* vsrc = vbase ? vs : ks;
    int ld = vbase ? vld : kld;
    for (int j = 0; j < dv / 32; ++j) o[j] *= alpha;
    for (int t = 0; t < kDecodeKeys; ++t) {
      float pt = __shfl_sync(0xffffffffu, p, t);
      const T* vr = vsrc + t * ld;
      for (int j = 0; j < dv / 32; ++j) o[j] += pt * to_f(vr[lane + 32 * j]);
    }
  }
  if (!active) return;
  float* dst = part + ((static_cast<int64_t>(b) * hq + h) * splits + split) * (dv + 2);
  if (lane == 0) dst[0] = m, dst[1] = l;
  for (int j = 0; j < dv / 32; ++j) dst[2 + lane + 32 * j] = o[j];
}

template <class T>
__global__ void decode_combine(const float* __restrict__ part, T* __restrict__ out, int64_t splits,
                               int dv) {
  int64_t bh = blockIdx.x;
  const float* p = part + bh * splits * (dv + 2);
  float m = -FLT_MAX;
  for (int64_t s = 0; s < splits; ++s) m = fmaxf(m, p[s * (dv + 2)]);
  for (int c = threadIdx.x; c < dv; c += blockDim.x) {
    float num = 0.f, den = 0.f;
    for (int64_t s = 0; s < splits; ++s) {
      float w = __expf(p[s * (dv + 2)] - m);
      den += w * p[s * (dv + 2) + 1];
      num += w * p[s * (dv + 2) + 2 + c];
    }
    out[bh * dv + c] = from_f<T>(den > 0 ? num / den : 0.f);
  }
}

}  // namespace

void prepare_decode_workspace(void* workspace, const AttentionDims& d, int sm_count,
                              cudaStream_t s) {
  ROOFLENS_CUDA_CHECK(
      cudaMemsetAsync(workspace, 0, static_cast<size_t>(decode_workspace_bytes(d, sm_count)), s));
}

void decode_attention(const void* q, const void* k, const void* v, void* out, void* workspace,
                      DType dt, const AttentionDims& d, int sm_count, cudaStream_t s,
                      DecodeKernel kernel) {
  if (d.head_dim_v > kMaxDv || d.head_dim_qk % 32 || d.head_dim_v % 32)
    throw CudaError("decode head dims must be multiples of 32, Dv <= 512");
  if (!decode_kernel_takes(kernel, d, v != nullptr))
    throw CudaError(
        "the tensor-core decode takes groups of up to 8 heads of dim 64 or 128, V apart");
  auto* part = static_cast<float*>(workspace);
  bool grouped = group_kernel_takes(d, v != nullptr);
  bool mma = kernel == DecodeKernel::tensor_cores;
  DecodeGrid g = mma       ? mma_grid(d, sm_count)
                 : grouped ? group_grid(d, sm_count)
                           : wide_grid(d, sm_count);
  auto go = [&](auto t) {
    using T = decltype(t);
    if (grouped) {  // both group kernels merge their splits themselves
      auto* done = reinterpret_cast<unsigned*>(static_cast<char*>(workspace) +
                                               decode::partial_bytes(d, sm_count));
      GroupArgs a{q, k, v, out, part, done};
      if (mma && d.head_dim_qk == 64)
        launch_mma<T, 64>(a, d, g, s);
      else if (mma)
        launch_mma<T, 128>(a, d, g, s);
      else if (d.head_dim_qk == 64)
        launch_group_d<T, 64>(a, d, g, s);
      else
        launch_group_d<T, 128>(a, d, g, s);
      return;
    }
    size_t smem = kHeadsPerBlock * d.head_dim_qk * sizeof(float) +
                  kDecodeKeys * (d.head_dim_qk + 2) * 2 +
                  (v ? kDecodeKeys * (d.head_dim_v + 2) * 2 : 0);
    dim3 grid(static_cast<unsigned>(g.splits), static_cast<unsigned>(d.kv_heads * g.groups),
              static_cast<unsigned>(d.batch));
    auto kernel = decode_kernel<T>;
    allow_dynamic_smem(kernel, smem);
    kernel<<<grid, kHeadsPerBlock * 32, smem, s>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), part,
        d.kv_len, first_visible_key(d), static_cast<int>(d.q_heads), static_cast<int>(d.kv_heads),
        static_cast<int>(d.head_dim_qk), static_cast<int>(d.head_dim_v), g.chunk, g.splits,
        rsqrtf(static_cast<float>(d.head_dim_qk)));
    decode_combine<T><<<static_cast<unsigned>(d.batch * d.q_heads), 128, 0, s>>>(
        part, static_cast<T*>(out), g.splits, static_cast<int>(d.head_dim_v));
  };
  dispatch_half(dt, go);
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
