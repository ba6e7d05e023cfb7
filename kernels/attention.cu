#include <mma.h>

#include <algorithm>
#include <cfloat>

#include "kernels/attention.hpp"
#include "kernels/dtypes.cuh"

namespace rooflens::kernels {
namespace {

using namespace nvcuda;

// ---- prefill --------------------------------------------------------------------------------

constexpr int kBlockM = 64, kBlockN = 64, kWarps = 4;

template <int D>
struct PrefillSmem {
  static constexpr int kLd = D + 8;      // 16-bit tiles, padded
  static constexpr int kSLd = kBlockN + 4;  // float scores
  static constexpr int kPLd = kBlockN + 8;  // 16-bit probabilities
  static constexpr int kOLd = D + 4;      // float accumulator
  static constexpr size_t bytes(size_t elem) {
    return 3 * kBlockM * kLd * elem + kWarps * 16 * (kSLd * 4 + kPLd * elem + kOLd * 4);
  }
};

template <class T, int D>
__global__ void __launch_bounds__(kWarps * 32) flash_prefill_kernel(const T* __restrict__ Q, const T* __restrict__ K,
                                                                    const T* __restrict__ V, T* __restrict__ O, int64_t sq,
                                                                    int64_t skv, int hq, int hkv, bool causal,
                                                                    int64_t window, float scale) {
  using S = PrefillSmem<D>;
  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = qs + kBlockM * S::kLd;
  T* vs = ks + kBlockN * S::kLd;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(vs + kBlockN * S::kLd) + warp * 16 * S::kSLd;
  float* ow = reinterpret_cast<float*>(vs + kBlockN * S::kLd) + kWarps * 16 * S::kSLd + warp * 16 * S::kOLd;
  T* pw = reinterpret_cast<T*>(reinterpret_cast<float*>(vs + kBlockN * S::kLd) + kWarps * 16 * (S::kSLd + S::kOLd)) +
          warp * 16 * S::kPLd;

  int64_t q0 = static_cast<int64_t>(blockIdx.x) * kBlockM;
  int h = blockIdx.y, b = blockIdx.z, kvh = h / (hq / hkv);
  int64_t offset = skv - sq;  // query i sits at key position i + offset
  const T* kbase = K + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;
  const T* vbase = V + (static_cast<int64_t>(b) * hkv + kvh) * skv * D;

  // Q tile; rows past the end are zero.
  constexpr int kVec = 8;  // 16 bytes of 16-bit elements
  for (int i = threadIdx.x; i < kBlockM * D / kVec; i += blockDim.x) {
    int r = i / (D / kVec), c = (i % (D / kVec)) * kVec;
    uint4 v{};
    if (q0 + r < sq) v = *reinterpret_cast<const uint4*>(Q + (((static_cast<int64_t>(b) * sq + q0 + r) * hq + h) * D + c));
    *reinterpret_cast<uint4*>(qs + r * S::kLd + c) = v;
  }
  for (int i = lane; i < 16 * D; i += 32) ow[(i / D) * S::kOLd + i % D] = 0.f;
  // Two lanes per query row, each owning half of the tile's columns.
  int row = lane / 2, half = lane % 2;
  int64_t qi = q0 + warp * 16 + row;
  float m = -FLT_MAX, l = 0.f;

  int64_t kv_end = skv;
  if (causal) kv_end = std::min<int64_t>(skv, q0 + kBlockM + offset);
  int64_t kv_begin = 0;
  if (causal && window > 0) kv_begin = std::max<int64_t>(0, (q0 + offset - window + 1) / kBlockN * kBlockN);

  for (int64_t k0 = kv_begin; k0 < kv_end; k0 += kBlockN) {
    __syncthreads();
    for (int i = threadIdx.x; i < kBlockN * D / kVec; i += blockDim.x) {
      int r = i / (D / kVec), c = (i % (D / kVec)) * kVec;
      uint4 kv{}, vv{};
      if (k0 + r < skv) {
        kv = *reinterpret_cast<const uint4*>(kbase + (k0 + r) * D + c);
        vv = *reinterpret_cast<const uint4*>(vbase + (k0 + r) * D + c);
      }
      *reinterpret_cast<uint4*>(ks + r * S::kLd + c) = kv;
      *reinterpret_cast<uint4*>(vs + r * S::kLd + c) = vv;
    }
    __syncthreads();
    // S = Q K^T for this warp's 16 rows.
    for (int nb = 0; nb < kBlockN / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> bf;
        wmma::load_matrix_sync(a, qs + warp * 16 * S::kLd + kk * 16, S::kLd);
        wmma::load_matrix_sync(bf, ks + nb * 16 * S::kLd + kk * 16, S::kLd);
        wmma::mma_sync(acc, a, bf, acc);
      }
      wmma::store_matrix_sync(sw + nb * 16, acc, S::kSLd, wmma::mem_row_major);
    }
    __syncwarp();
    // Online softmax: mask, new row max, probabilities, rescale the accumulator.
    float local_max = -FLT_MAX;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      int64_t kj = k0 + c;
      bool visible = kj < skv && (!causal || (kj <= qi + offset && (window <= 0 || kj > qi + offset - window)));
      float s = visible ? sw[row * S::kSLd + c] * scale : -FLT_MAX;
      sw[row * S::kSLd + c] = s;
      local_max = fmaxf(local_max, s);
    }
    local_max = fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, 1));
    float m_new = fmaxf(m, local_max);
    float alpha = m_new == -FLT_MAX ? 1.f : __expf(m - m_new);
    float sum = 0.f;
    for (int c = half * 32; c < half * 32 + 32; ++c) {
      float s = sw[row * S::kSLd + c];
      float p = s == -FLT_MAX ? 0.f : __expf(s - m_new);
      sum += p;
      pw[row * S::kPLd + c] = from_f<T>(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * alpha + sum;
    m = m_new;
    for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c) ow[row * S::kOLd + c] *= alpha;
    __syncwarp();
    // O += P V.
    for (int db = 0; db < D / 16; ++db) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, ow + db * 16, S::kOLd, wmma::mem_row_major);
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf;
        wmma::load_matrix_sync(a, pw + kk * 16, S::kPLd);
        wmma::load_matrix_sync(bf, vs + kk * 16 * S::kLd + db * 16, S::kLd);
        wmma::mma_sync(acc, a, bf, acc);
      }
      wmma::store_matrix_sync(ow + db * 16, acc, S::kOLd, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (qi < sq) {
    float inv = l > 0 ? 1.f / l : 0.f;
    T* orow = O + ((static_cast<int64_t>(b) * sq + qi) * hq + h) * D;
    for (int c = half * (D / 2); c < (half + 1) * (D / 2); ++c) orow[c] = from_f<T>(ow[row * S::kOLd + c] * inv);
  }
}

template <class T, int D>
void launch_prefill(const void* q, const void* k, const void* v, void* out, const AttentionDims& d, cudaStream_t s) {
  size_t smem = PrefillSmem<D>::bytes(sizeof(T));
  auto kernel = flash_prefill_kernel<T, D>;
  ROOFLENS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  dim3 grid(static_cast<unsigned>((d.q_len + kBlockM - 1) / kBlockM), static_cast<unsigned>(d.q_heads), static_cast<unsigned>(d.batch));
  kernel<<<grid, kWarps * 32, smem, s>>>(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                                         static_cast<T*>(out), d.q_len, d.kv_len, static_cast<int>(d.q_heads),
                                         static_cast<int>(d.kv_heads), d.causal, d.window, rsqrtf(static_cast<float>(D)));
}

// ---- decode ---------------------------------------------------------------------------------

constexpr int kDecodeKeys = 32;     // keys per shared-memory tile: one per lane
constexpr int kHeadsPerBlock = 4;   // one query head per warp
constexpr int kMaxDv = 512;

struct DecodeGrid {
  int64_t groups;      // blocks per KV head: ceil(G / 4)
  int64_t splits;      // the key range split this many ways
  int64_t chunk;       // keys per split
};

DecodeGrid decode_grid(const AttentionDims& d, int sm_count) {
  DecodeGrid g;
  int64_t G = d.q_heads / d.kv_heads;
  g.groups = (G + kHeadsPerBlock - 1) / kHeadsPerBlock;
  int64_t base = d.batch * d.kv_heads * g.groups;
  // Enough blocks for ~16 per SM: each works through its keys serially, so the chip needs many
  // of them in flight to keep HBM busy (flash-decoding's split-KV).
  int64_t want = std::max<int64_t>(1, (16 * sm_count + base - 1) / base);
  g.splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, (d.kv_len + kDecodeKeys - 1) / kDecodeKeys));
  g.chunk = (d.kv_len + g.splits - 1) / g.splits;
  g.chunk = (g.chunk + kDecodeKeys - 1) / kDecodeKeys * kDecodeKeys;
  g.splits = (d.kv_len + g.chunk - 1) / g.chunk;
  return g;
}

// Partial results per (batch, head, split): running max, sum and the unnormalized output.
template <class T>
__global__ void __launch_bounds__(kHeadsPerBlock * 32) decode_kernel(const T* __restrict__ Q, const T* __restrict__ K,
                                                                     const T* __restrict__ V, float* __restrict__ part,
                                                                     int64_t skv, int hq, int hkv, int dqk, int dv,
                                                                     int64_t chunk, int64_t splits, float scale) {
  extern __shared__ __align__(16) unsigned char smem[];
  int kld = dqk + 2, vld = dv + 2;  // odd word strides: lanes reading their own row hit distinct banks
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
  for (int i = lane; i < dqk; i += 32) qs[warp * dqk + i] = active ? to_f(Q[(static_cast<int64_t>(b) * hq + h) * dqk + i]) : 0.f;
  float o[kMaxDv / 32];
  for (int j = 0; j < kMaxDv / 32; ++j) o[j] = 0.f;
  float m = -FLT_MAX, l = 0.f;
  int64_t begin = split * chunk, end = std::min<int64_t>(skv, begin + chunk);
  for (int64_t t0 = begin; t0 < end; t0 += kDecodeKeys) {
    __syncthreads();
    // 16-byte loads from HBM; 4-byte stores into the padded rows.
    for (int i = threadIdx.x; i < kDecodeKeys * (dqk / 8); i += blockDim.x) {
      int r = i / (dqk / 8), c = (i % (dqk / 8)) * 8;
      uint4 kv{};
      if (t0 + r < end) kv = *reinterpret_cast<const uint4*>(kbase + (t0 + r) * dqk + c);
      uint32_t* dst = reinterpret_cast<uint32_t*>(ks + r * kld + c);
      dst[0] = kv.x, dst[1] = kv.y, dst[2] = kv.z, dst[3] = kv.w;
    }
    if (vbase)
      for (int i = threadIdx.x; i < kDecodeKeys * (dv / 8); i += blockDim.x) {
        int r = i / (dv / 8), c = (i % (dv / 8)) * 8;
        uint4 vv{};
        if (t0 + r < end) vv = *reinterpret_cast<const uint4*>(vbase + (t0 + r) * dv + c);
        uint32_t* dst = reinterpret_cast<uint32_t*>(vs + r * vld + c);
        dst[0] = vv.x, dst[1] = vv.y, dst[2] = vv.z, dst[3] = vv.w;
      }
    __syncthreads();
    if (!active) continue;
    // Lane t scores key t0 + t.
    float s = 0.f;
    const T* kr = ks + lane * kld;
    for (int i = 0; i < dqk; ++i) s += qs[warp * dqk + i] * to_f(kr[i]);
    bool valid = t0 + lane < end;
    s = valid ? s * scale : -FLT_MAX;
    float tile_max = s;
    for (int off = 16; off > 0; off >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
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
__global__ void decode_combine(const float* __restrict__ part, T* __restrict__ out, int64_t splits, int dv) {
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

void flash_prefill(const void* q, const void* k, const void* v, void* out, DType dt, const AttentionDims& d, cudaStream_t s) {
  if (d.head_dim_qk != d.head_dim_v || (d.head_dim_qk != 64 && d.head_dim_qk != 128))
    throw CudaError("flash prefill takes head dims 64 or 128");
  auto go = [&](auto t) {
    using T = decltype(t);
    if (d.head_dim_qk == 64) launch_prefill<T, 64>(q, k, v, out, d, s);
    else launch_prefill<T, 128>(q, k, v, out, d, s);
  };
  dispatch_half(dt, go);
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

int64_t decode_workspace_bytes(const AttentionDims& d, int sm_count) {
  DecodeGrid g = decode_grid(d, sm_count);
  return d.batch * d.q_heads * g.splits * (d.head_dim_v + 2) * static_cast<int64_t>(sizeof(float));
}

void decode_attention(const void* q, const void* k, const void* v, void* out, void* workspace, DType dt, const AttentionDims& d,
                      int sm_count, cudaStream_t s) {
  if (d.head_dim_v > kMaxDv || d.head_dim_qk % 32 || d.head_dim_v % 32) throw CudaError("decode head dims must be multiples of 32, Dv <= 512");
  DecodeGrid g = decode_grid(d, sm_count);
  size_t smem = kHeadsPerBlock * d.head_dim_qk * sizeof(float) + kDecodeKeys * (d.head_dim_qk + 2) * 2 +
                (v ? kDecodeKeys * (d.head_dim_v + 2) * 2 : 0);
  dim3 grid(static_cast<unsigned>(g.splits), static_cast<unsigned>(d.kv_heads * g.groups), static_cast<unsigned>(d.batch));
  auto go = [&](auto t) {
    using T = decltype(t);
    auto kernel = decode_kernel<T>;
    ROOFLENS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid, kHeadsPerBlock * 32, smem, s>>>(static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                                                   static_cast<float*>(workspace), d.kv_len, static_cast<int>(d.q_heads),
                                                   static_cast<int>(d.kv_heads), static_cast<int>(d.head_dim_qk),
                                                   static_cast<int>(d.head_dim_v), g.chunk, g.splits,
                                                   rsqrtf(static_cast<float>(d.head_dim_qk)));
    decode_combine<T><<<static_cast<unsigned>(d.batch * d.q_heads), 128, 0, s>>>(static_cast<const float*>(workspace),
                                                                                  static_cast<T*>(out), g.splits,
                                                                                  static_cast<int>(d.head_dim_v));
  };
  dispatch_half(dt, go);
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
