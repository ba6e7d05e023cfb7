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

}  // namespace rooflens::kernels
