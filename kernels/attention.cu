#include <algorithm>
#include <cfloat>
#include <cstring>
#include <type_traits>

#include "kernels/async_copy.cuh"
#include "kernels/attention.hpp"
#include "kernels/dtypes.cuh"
#include "kernels/mma.cuh"

namespace rooflens::kernels {
namespace {

// ---- prefill --------------------------------------------------------------------------------
// FlashAttention-2 style: a block of 4 warps takes 64 queries of one head, each warp 16 of them
// with Q, the scores, the probabilities and the output accumulator in registers as mma.sync
// m16n8k16 fragments (ldmatrix from padded shared tiles), an online softmax per row in base 2,
// and K/V tiles of 64 keys in a cp.async ring, so later tiles stream in while one is used.

constexpr int kBlockM = 64, kBlockN = 64, kWarps = 4;

// Tiles in flight: one tile's math is shorter than a trip to HBM, so a block that has few
// neighbours on its SM (GPT-2's 192 blocks on 132 SMs) must keep several tiles requested. At
// D 128 two stages already fill the shared memory two blocks per SM may use.
template <int D>
constexpr int kv_stages() {
  return D <= 64 ? 4 : 2;
}

template <int D>
constexpr size_t prefill_smem_bytes(size_t elem) {
  return static_cast<size_t>(kBlockM + 2 * kv_stages<D>() * kBlockN) * (D + 8) *
         elem;  // Q, then K and V per stage
}

// Kept whole: a kernel's main loop keeps its fragments in registers across the tile loop;
// split into device functions the compiler's allocation and schedule move, and the replay's
// figures (docs/profile.md) were measured on this body.
template <class T, int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash_prefill_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                         T* __restrict__ O, int64_t sq, int64_t skv, int hq, int hkv, bool causal,
                         int64_t window, float scale_log2) {
  constexpr int LD = D + 8;  // 16-byte pad per row: ldmatrix rows fall in different banks
  constexpr int kChunks = D / 8, kStages = kv_stages<D>();
  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kBlockM * LD;            // [kStages][kBlockN][LD]
  T* vs = ks + kStages * kBlockN * LD;  // [kStages][kBlockN][LD]
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Last query tiles first: under a causal mask they have the most keys, so the long blocks
  // start early and the short ones fill the tail.
  int64_t q0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBlockM;
  int h = blockIdx.y, b = blockIdx.z, kvh = h / (hq / hkv);
  int64_t offset = skv - sq;  // query i sits at key position i + offset
  const T* kbase = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  const T* vbase = V + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;

  for (int i = threadIdx.x; i < kBlockM * kChunks; i += blockDim.x) {
    int r = i / kChunks, c = (i % kChunks) * 8;
    bool valid = q0 + r < sq;
    cp_async16(qs + r * LD + c,
               valid ? Q + (((static_cast<int64_t>(b) * sq + q0 + r) * hq + h) * D + c) : Q, valid);
  }
  int64_t kv_end = skv, kv_begin = 0;
  if (causal) kv_end = std::max<int64_t>(0, std::min<int64_t>(skv, q0 + kBlockM + offset));
  if (causal && window > 0)
    kv_begin = std::max<int64_t>(0, (q0 + offset - window + 1) / kBlockN * kBlockN);
  auto load_kv = [&](int stage, int64_t k0) {
    cp_async_kv_rows<T, D>(ks + stage * kBlockN * LD, vs + stage * kBlockN * LD, LD, kbase, vbase,
                           k0, kBlockN, skv);
  };
  cp_async_commit();  // Q
  int64_t tiles = kv_end > kv_begin ? (kv_end - kv_begin + kBlockN - 1) / kBlockN : 0;
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < tiles) load_kv(st, kv_begin + st * kBlockN);
    cp_async_commit();
  }
  cp_async_wait<kStages - 1>();  // Q has landed
  __syncthreads();

  // This warp's 16 query rows as A fragments, one per 16 dims.
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldsm_x4(qf[kk],
            qs + (warp * 16 + (lane / 8) % 2 * 8 + lane % 8) * LD + kk * 16 + lane / 16 * 8);

  // Rows g and g + 8 of the warp's 16: running max (base-2 scaled), partial sum, output.
  int64_t row0 = q0 + warp * 16 + g, row1 = row0 + 8;
  float m0 = -FLT_MAX, m1 = -FLT_MAX, l0 = 0.f, l1 = 0.f;
  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;

  for (int64_t it = 0; it < tiles; ++it) {
    int64_t ahead = it + kStages - 1;  // refills the stage the previous iteration used
    if (ahead < tiles) load_kv(static_cast<int>(ahead % kStages), kv_begin + ahead * kBlockN);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // tile `it` has landed
    __syncthreads();
    int stage = static_cast<int>(it % kStages);
    int64_t k0 = kv_begin + it * kBlockN;
    const T* kt = ks + stage * kBlockN * LD;
    const T* vt = vs + stage * kBlockN * LD;

    float sc[kBlockN / 8][4];
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int np = 0; np < kBlockN / 16; ++np) {
        uint32_t kb[4];
        ldsm_x4(kb, kt + (np * 16 + lane / 16 * 8 + lane % 8) * LD + kk * 16 + (lane / 8) % 2 * 8);
        mma16816<T>(sc[2 * np], qf[kk], kb[0], kb[1]);
        mma16816<T>(sc[2 * np + 1], qf[kk], kb[2], kb[3]);
      }

    // Masks only where the tile can hold an invisible key: past the end, or near the diagonal.
    bool edge = k0 + kBlockN > skv ||
                (causal && (k0 + kBlockN - 1 > q0 + warp * 16 + offset ||
                            (window > 0 && k0 <= q0 + warp * 16 + 15 + offset - window)));
    float mx0 = -FLT_MAX, mx1 = -FLT_MAX;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = sc[j][e] * scale_log2;
        if (edge) {
          int64_t key = k0 + j * 8 + 2 * t + (e & 1), qi = e < 2 ? row0 : row1;
          bool visible =
              key < skv &&
              (!causal || (key <= qi + offset && (window <= 0 || key > qi + offset - window)));
          x = visible ? x : -FLT_MAX;
        }
        sc[j][e] = x;
        if (e < 2)
          mx0 = fmaxf(mx0, x);
        else
          mx1 = fmaxf(mx1, x);
      }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
    }
    float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    // A row with no visible key yet keeps max -FLT_MAX: subtract 0 then, so exp2 gives 0, not NaN.
    float base0 = n0 == -FLT_MAX ? 0.f : n0, base1 = n1 == -FLT_MAX ? 0.f : n1;
    float alpha0 = exp2f(m0 - base0), alpha1 = exp2f(m1 - base1);
    m0 = n0, m1 = n1;
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      sc[j][0] = exp2f(sc[j][0] - base0), sc[j][1] = exp2f(sc[j][1] - base0);
      sc[j][2] = exp2f(sc[j][2] - base1), sc[j][3] = exp2f(sc[j][3] - base1);
      sum0 += sc[j][0] + sc[j][1], sum1 += sc[j][2] + sc[j][3];
    }
    l0 = l0 * alpha0 + sum0,
    l1 = l1 * alpha1 + sum1;  // per-lane partial sums, added across the quad at the end
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      o[j][0] *= alpha0, o[j][1] *= alpha0, o[j][2] *= alpha1, o[j][3] *= alpha1;

      // O += P V: the score accumulators of two adjacent 8-key tiles are one 16-key A fragment.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t pa[4] = {pack2<T>(sc[2 * kk][0], sc[2 * kk][1]),
                        pack2<T>(sc[2 * kk][2], sc[2 * kk][3]),
                        pack2<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                        pack2<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t vb[4];
        ldsm_x4_trans(
            vb, vt + (kk * 16 + (lane / 8) % 2 * 8 + lane % 8) * LD + dp * 16 + lane / 16 * 8);
        mma16816<T>(o[2 * dp], pa, vb[0], vb[1]);
        mma16816<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();
#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  float inv0 = l0 > 0 ? 1.f / l0 : 0.f, inv1 = l1 > 0 ? 1.f / l1 : 0.f;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    int c = j * 8 + 2 * t;
    if (row0 < sq)
      *reinterpret_cast<uint32_t*>(O + ((static_cast<int64_t>(b) * sq + row0) * hq + h) * D + c) =
          pack2<T>(o[j][0] * inv0, o[j][1] * inv0);
    if (row1 < sq)
      *reinterpret_cast<uint32_t*>(O + ((static_cast<int64_t>(b) * sq + row1) * hq + h) * D + c) =
          pack2<T>(o[j][2] * inv1, o[j][3] * inv1);
  }
}

template <class T, int D>
void launch_prefill(const void* q, const void* k, const void* v, void* out, const AttentionDims& d,
                    cudaStream_t s) {
  size_t smem = prefill_smem_bytes<D>(sizeof(T));
  auto kernel = flash_prefill_kernel<T, D>;
  allow_dynamic_smem(kernel, smem);
  dim3 grid(static_cast<unsigned>((d.q_len + kBlockM - 1) / kBlockM),
            static_cast<unsigned>(d.q_heads), static_cast<unsigned>(d.batch));
  kernel<<<grid, kWarps * 32, smem, s>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                         static_cast<const T*>(v), static_cast<T*>(out), d.q_len,
                                         d.kv_len, static_cast<int>(d.q_heads),
                                         static_cast<int>(d.kv_heads), d.causal, d.window,
                                         rsqrtf(static_cast<float>(D)) * 1.4426950408889634f);
}

}  // namespace

void flash_prefill(const void* q, const void* k, const void* v, void* out, DType dt,
                   const AttentionDims& d, cudaStream_t s) {
  if (d.head_dim_qk != d.head_dim_v || (d.head_dim_qk != 64 && d.head_dim_qk != 128))
    throw CudaError("flash prefill takes head dims 64 or 128");
  auto go = [&](auto t) {
    using T = decltype(t);
    if (d.head_dim_qk == 64)
      launch_prefill<T, 64>(q, k, v, out, d, s);
    else
      launch_prefill<T, 128>(q, k, v, out, d, s);
  };
  dispatch_half(dt, go);
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
