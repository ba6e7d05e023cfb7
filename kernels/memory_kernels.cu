#include <algorithm>
#include <cfloat>

#include "kernels/dtypes.cuh"
#include "kernels/memory_kernels.hpp"

namespace rooflens::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = static_cast<int>(profiler::kMaxReplayRank);

__device__ __forceinline__ uint32_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

template <class T>
__global__ void fill_float(T* p, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = from_f<T>((mix(i * 0x9E3779B97F4A7C15ULL + seed) * (1.0f / 4294967296.0f) * 2.0f - 1.0f) * scale);
}

template <class T>
__global__ void fill_int(T* p, int64_t n, uint32_t seed, int64_t bound) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(bound > 0 ? mix(i + seed) % static_cast<uint64_t>(bound) : mix(i + seed) & 1);
}

// ---- element-wise ---------------------------------------------------------------------------

__device__ __forceinline__ float apply(EwOp op, float a, float b, float c) {
  switch (op) {
    case EwOp::relu: return fmaxf(a, 0.f);
    case EwOp::gelu: return 0.5f * a * (1.f + erff(a * 0.70710678f));
    case EwOp::gelu_tanh: return 0.5f * a * (1.f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)));
    case EwOp::sigmoid: return 1.f / (1.f + __expf(-a));
    case EwOp::swish: return a / (1.f + __expf(-a));
    case EwOp::tanh_: return tanhf(a);
    case EwOp::exp_: return __expf(a);
    case EwOp::erf_: return erff(a);
    case EwOp::sqrt_: return sqrtf(fabsf(a));
    case EwOp::neg: return -a;
    case EwOp::abs_: return fabsf(a);
    case EwOp::reciprocal: return 1.f / a;
    case EwOp::log_: return __logf(fabsf(a) + 1e-6f);
    case EwOp::softplus: return log1pf(__expf(a));
    case EwOp::leaky_relu: return a > 0 ? a : 0.01f * a;
    case EwOp::hard_sigmoid: return fminf(fmaxf(0.2f * a + 0.5f, 0.f), 1.f);
    case EwOp::hard_swish: return a * fminf(fmaxf(a / 6.f + 0.5f, 0.f), 1.f);
    case EwOp::identity:
    case EwOp::cast: return a;
    case EwOp::add: return a + b;
    case EwOp::sub: return a - b;
    case EwOp::mul: return a * b;
    case EwOp::div: return a / b;
    case EwOp::pow_: return __powf(fabsf(a), b);
    case EwOp::max_: return fmaxf(a, b);
    case EwOp::min_: return fminf(a, b);
    case EwOp::where: return a != 0.f ? b : c;
    case EwOp::clip: return fminf(fmaxf(a, b), c);
  }
  return a;
}

struct Strides {
  int64_t s[3][kMaxRank];
};
struct Dims {
  int rank;
  int64_t extent[kMaxRank];
};

// Offsets into K operands of linear index i of an iteration space walked with per-operand strides
// (broadcast element-wise ops and strided copies). I: 32-bit when every offset fits.
template <int K, class I>
__device__ __forceinline__ void strided_offsets(I i, const Dims& dims, const Strides& st, I (&off)[K]) {
  for (int k = 0; k < K; ++k) off[k] = 0;
#pragma unroll 1
  for (int d = dims.rank - 1; d >= 0; --d) {
    I e = static_cast<I>(dims.extent[d]), idx = i % e;
    i /= e;
    for (int k = 0; k < K; ++k) off[k] += idx * static_cast<I>(st.s[k][d]);
  }
}

// Inputs 1 and 2 are of the output's type; input 0 may differ (Where's bool, Cast's source).
template <class To, class T0>
__global__ void ew_contiguous(EwOp op, int n_in, const T0* __restrict__ a, const To* __restrict__ b,
                              const To* __restrict__ c, To* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float x = to_f(a[i]);
    float y = n_in > 1 ? to_f(b[i]) : 0.f, z = n_in > 2 ? to_f(c[i]) : 0.f;
    out[i] = from_f<To>(apply(op, x, y, z));
  }
}

// The contiguous path for 16-bit and 32-bit types: 16-byte loads and stores.
template <class To>
__global__ void ew_vector(EwOp op, int n_in, const To* __restrict__ a, const To* __restrict__ b, To* __restrict__ out,
                          int64_t n_vec) {
  constexpr int V = 16 / sizeof(To);
  for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < n_vec; v += int64_t(gridDim.x) * blockDim.x) {
    uint4 ra = reinterpret_cast<const uint4*>(a)[v], rb{}, ro;
    if (n_in > 1) rb = reinterpret_cast<const uint4*>(b)[v];
    const To* xa = reinterpret_cast<const To*>(&ra);
    const To* xb = reinterpret_cast<const To*>(&rb);
    To* xo = reinterpret_cast<To*>(&ro);
#pragma unroll
    for (int j = 0; j < V; ++j) xo[j] = from_f<To>(apply(op, to_f(xa[j]), n_in > 1 ? to_f(xb[j]) : 0.f, 0.f));
    reinterpret_cast<uint4*>(out)[v] = ro;
  }
}

// I is the index type: 32-bit when every offset fits (64-bit division is many times slower).
template <class To, class T0, class I>
__global__ void ew_broadcast(EwOp op, int n_in, const T0* __restrict__ a, const To* __restrict__ b,
                             const To* __restrict__ c, To* __restrict__ out, I n, Dims dims, Strides st) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I off[3];
    strided_offsets(i, dims, st, off);
    float x = to_f(a[off[0]]);
    float y = n_in > 1 ? to_f(b[off[1]]) : 0.f, z = n_in > 2 ? to_f(c[off[2]]) : 0.f;
    out[i] = from_f<To>(apply(op, x, y, z));
  }
}

// Merges adjacent dims that every operand walks contiguously, so a bias add over (B, S, H) is
// indexed as (B*S, H): fewer divisions per element.
void collapse(std::vector<int64_t>& extent, std::vector<std::vector<int64_t>>& strides) {
  for (size_t d = extent.size(); d-- > 1;) {
    bool mergeable = true;
    for (auto& s : strides)
      if (s[d - 1] != s[d] * extent[d]) mergeable = false;
    if (!mergeable) continue;
    for (auto& s : strides) {
      s[d - 1] = s[d];
      s.erase(s.begin() + static_cast<long>(d));
    }
    extent[d - 1] *= extent[d];
    extent.erase(extent.begin() + static_cast<long>(d));
  }
}

template <class To, class T0>
void launch_ew(EwOp op, const std::vector<EwOperand>& in, void* out, const std::vector<int64_t>& out_shape,
               cudaStream_t s) {
  int64_t n = 1;
  for (int64_t e : out_shape) n *= e;
  bool same = true;
  for (const auto& o : in) {
    int64_t m = 1;
    for (int64_t e : o.shape) m *= e;
    same = same && m == n;
  }
  const T0* a = static_cast<const T0*>(in[0].data);
  const To* b = in.size() > 1 ? static_cast<const To*>(in[1].data) : nullptr;
  const To* c = in.size() > 2 ? static_cast<const To*>(in[2].data) : nullptr;
  int n_in = static_cast<int>(in.size());
  if (same) {
    constexpr int V = 16 / sizeof(To);
    bool aligned = n % V == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
    for (const auto& o : in) aligned = aligned && reinterpret_cast<uintptr_t>(o.data) % 16 == 0;
    if constexpr (std::is_same_v<To, T0>) {
      if (aligned && n_in <= 2) {
        ew_vector<To><<<blocks_for(n / V, kThreads, 132 * 16), kThreads, 0, s>>>(op, n_in, a, b, static_cast<To*>(out), n / V);
        return;
      }
    }
    ew_contiguous<To, T0><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(op, n_in, a, b, c, static_cast<To*>(out), n);
    return;
  }
  std::vector<int64_t> extent = out_shape;
  std::vector<std::vector<int64_t>> strides;
  for (const auto& o : in) strides.push_back(profiler::broadcast_strides(o.shape, out_shape));
  strides.resize(3, std::vector<int64_t>(out_shape.size(), 0));
  collapse(extent, strides);
  if (extent.size() > static_cast<size_t>(kMaxRank)) throw CudaError("element-wise rank above 6");
  Dims dims{static_cast<int>(extent.size()), {}};
  Strides st{};
  for (size_t d = 0; d < extent.size(); ++d) {
    dims.extent[d] = extent[d];
    for (int k = 0; k < 3; ++k) st.s[k][d] = strides[k][d];
  }
  if (n < (int64_t{1} << 31))
    ew_broadcast<To, T0, uint32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(op, n_in, a, b, c, static_cast<To*>(out),
                                                                                         static_cast<uint32_t>(n), dims, st);
  else
    ew_broadcast<To, T0, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(op, n_in, a, b, c, static_cast<To*>(out), n, dims, st);
}

template <class T>
__global__ void swiglu_kernel(const T* __restrict__ g, const T* __restrict__ u, T* __restrict__ o, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float x = to_f(g[i]);
    o[i] = from_f<T>(x / (1.f + __expf(-x)) * to_f(u[i]));
  }
}

template <class T>
__global__ void sum_slots_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t k, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / cols, c = i % cols;
    float acc = 0.f;
    for (int64_t j = 0; j < k; ++j) acc += to_f(in[(r * k + j) * cols + c]);
    out[i] = from_f<T>(acc);
  }
}

// ---- copies ---------------------------------------------------------------------------------

template <class E, class I>
__global__ void copy_kernel(const E* __restrict__ src, E* __restrict__ dst, I n, Dims dims, Strides st, int64_t src_off,
                            int64_t dst_off) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I off[2];
    strided_offsets(i, dims, st, off);
    dst[dst_off + off[1]] = src[src_off + off[0]];
  }
}

template <class E, class I>
__global__ void gather_kernel(const E* __restrict__ data, const I* __restrict__ idx, E* __restrict__ out, int64_t outer,
                              int64_t axis_len, int64_t n_idx, int64_t inner) {
  int64_t n = outer * n_idx * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t in_i = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
    int64_t row = static_cast<int64_t>(idx[j]);
    if (row < 0) row += axis_len;
    out[i] = data[(o * axis_len + row) * inner + in_i];
  }
}

template <class F>
void dispatch_bytes(int elem_bytes, F&& f) {
  switch (elem_bytes) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
    default: throw CudaError("copy of an unsupported element size");
  }
}

// ---- row kernels: one warp per row ----------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_min(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

constexpr int kWarpsPerBlock = kThreads / 32;

__device__ __forceinline__ int64_t warp_row() { return blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32; }

// ---- row kernels: one block per long row, the row held in registers ---------------------------

constexpr int kRowThreads = 256, kRowCache = 32;  // rows up to 8192 read from HBM once
constexpr int64_t kBlockRowMinCols = 1024;        // shorter rows: one warp each

template <bool kMax>
__device__ float block_reduce(float v, float* red) {
  v = kMax ? warp_max(v) : warp_sum(v);
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red may still be read by the previous reduction
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < kRowThreads / 32 ? red[lane] : (kMax ? -FLT_MAX : 0.f);
  return kMax ? warp_max(v) : warp_sum(v);
}

// Loads row r into registers (cached) or reads it again per pass (rows above 8192).
template <class T, bool kCached>
struct RowReader {
  const T* row;
  int64_t cols;
  float v[kCached ? kRowCache : 1];
  __device__ RowReader(const T* r, int64_t c, const T* skip) : row(r), cols(c) {
    if constexpr (kCached) {
#pragma unroll
      for (int i = 0; i < kRowCache; ++i) {
        int64_t j = threadIdx.x + static_cast<int64_t>(i) * kRowThreads;
        v[i] = j < cols ? to_f(row[j]) + (skip ? to_f(skip[j]) : 0.f) : 0.f;
      }
    }
  }
  template <class F>
  __device__ void each(const T* skip, F&& f) {
    if constexpr (kCached) {
#pragma unroll
      for (int i = 0; i < kRowCache; ++i) {
        int64_t j = threadIdx.x + static_cast<int64_t>(i) * kRowThreads;
        if (j < cols) f(j, v[i]);
      }
    } else {
      for (int64_t j = threadIdx.x; j < cols; j += kRowThreads) f(j, to_f(row[j]) + (skip ? to_f(skip[j]) : 0.f));
    }
  }
};

template <class T, bool kCached>
__global__ void __launch_bounds__(kRowThreads) softmax_block(const T* __restrict__ in, T* __restrict__ out, int64_t cols, bool log) {
  __shared__ float red[32];
  int64_t r = blockIdx.x;
  RowReader<T, kCached> row(in + r * cols, cols, nullptr);
  float m = -FLT_MAX;
  row.each(nullptr, [&](int64_t, float x) { m = fmaxf(m, x); });
  m = block_reduce<true>(m, red);
  float sum = 0;
  row.each(nullptr, [&](int64_t, float x) { sum += __expf(x - m); });
  sum = block_reduce<false>(sum, red);
  float inv = 1.f / sum, lsum = __logf(sum);
  T* o = out + r * cols;
  row.each(nullptr, [&](int64_t j, float x) { o[j] = from_f<T>(log ? x - m - lsum : __expf(x - m) * inv); });
}

template <class T, bool kCached>
__global__ void __launch_bounds__(kRowThreads) norm_block(const T* __restrict__ x, const T* __restrict__ skip, const T* __restrict__ gamma,
                                                          const T* __restrict__ beta, T* __restrict__ out, int64_t cols, bool rms) {
  __shared__ float red[32];
  int64_t r = blockIdx.x;
  const T* sr = skip ? skip + r * cols : nullptr;
  RowReader<T, kCached> row(x + r * cols, cols, sr);
  float s = 0, s2 = 0;
  row.each(sr, [&](int64_t, float v) { s += v, s2 += v * v; });
  s = block_reduce<false>(s, red);
  s2 = block_reduce<false>(s2, red);
  float mean = rms ? 0.f : s / cols;
  float inv = rsqrtf(fmaxf(s2 / cols - mean * mean, 0.f) + 1e-5f);
  T* o = out + r * cols;
  row.each(sr, [&](int64_t j, float v) {
    float y = (v - mean) * inv * to_f(gamma[j]);
    if (beta) y += to_f(beta[j]);
    o[j] = from_f<T>(y);
  });
}

template <class T>
__global__ void softmax_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols, bool log) {
  int64_t r = warp_row();
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* x = in + r * cols;
  float m = -FLT_MAX;
  for (int64_t j = lane; j < cols; j += 32) m = fmaxf(m, to_f(x[j]));
  m = warp_max(m);
  float sum = 0;
  for (int64_t j = lane; j < cols; j += 32) sum += __expf(to_f(x[j]) - m);
  sum = warp_sum(sum);
  float inv = 1.f / sum, lsum = __logf(sum);
  for (int64_t j = lane; j < cols; j += 32) {
    float v = to_f(x[j]) - m;
    out[r * cols + j] = from_f<T>(log ? v - lsum : __expf(v) * inv);
  }
}

template <class T>
__global__ void norm_kernel(const T* __restrict__ x, const T* __restrict__ skip, const T* __restrict__ gamma,
                            const T* __restrict__ beta, T* __restrict__ out, int64_t rows, int64_t cols, bool rms) {
  int64_t r = warp_row();
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* xr = x + r * cols;
  const T* sr = skip ? skip + r * cols : nullptr;
  float s = 0, s2 = 0;
  for (int64_t j = lane; j < cols; j += 32) {
    float v = to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f);
    s += v;
    s2 += v * v;
  }
  s = warp_sum(s);
  s2 = warp_sum(s2);
  float mean = rms ? 0.f : s / cols;
  float var = s2 / cols - mean * mean;
  float inv = rsqrtf(fmaxf(var, 0.f) + 1e-5f);
  for (int64_t j = lane; j < cols; j += 32) {
    float v = (to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f) - mean) * inv * to_f(gamma[j]);
    if (beta) v += to_f(beta[j]);
    out[r * cols + j] = from_f<T>(v);
  }
}

template <class T>
__global__ void reduce_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols, RowReduce op) {
  int64_t r = warp_row();
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* x = in + r * cols;
  bool is_max = op == RowReduce::max, is_min = op == RowReduce::min;
  float acc = is_max ? -FLT_MAX : is_min ? FLT_MAX : 0.f;
  for (int64_t j = lane; j < cols; j += 32) {
    float v = to_f(x[j]);
    if (is_max) acc = fmaxf(acc, v);
    else if (is_min) acc = fminf(acc, v);
    else acc += (op == RowReduce::sum_square || op == RowReduce::l2) ? v * v : v;
  }
  acc = is_max ? warp_max(acc) : is_min ? warp_min(acc) : warp_sum(acc);
  if (op == RowReduce::mean) acc /= cols;
  if (op == RowReduce::l2) acc = sqrtf(acc);
  if (lane == 0) out[r] = from_f<T>(acc);
}

// k passes of an arg-max, each skipping what earlier passes took.
template <class T>
__global__ void topk_kernel(const T* __restrict__ in, T* __restrict__ values, int64_t* __restrict__ indices, int64_t rows,
                            int64_t cols, int k) {
  int64_t r = warp_row();
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* x = in + r * cols;
  int64_t taken[32];
  for (int p = 0; p < k; ++p) {
    float best = -FLT_MAX;
    int64_t best_j = cols;
    for (int64_t j = lane; j < cols; j += 32) {
      bool used = false;
      for (int q = 0; q < p; ++q) used |= taken[q] == j;
      float v = to_f(x[j]);
      if (!used && (v > best || (v == best && j < best_j))) best = v, best_j = j;
    }
    for (int o = 16; o > 0; o >>= 1) {
      float ov = __shfl_xor_sync(0xffffffffu, best, o);
      int64_t oj = __shfl_xor_sync(0xffffffffu, best_j, o);
      if (ov > best || (ov == best && oj < best_j)) best = ov, best_j = oj;
    }
    taken[p] = best_j;
    if (lane == 0) {
      values[r * k + p] = from_f<T>(best);
      indices[r * k + p] = best_j;
    }
  }
}

template <class T>
__global__ void batch_norm_kernel(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ bias,
                                  const T* __restrict__ mean, const T* __restrict__ var, T* __restrict__ out, int64_t n,
                                  int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = (i / spatial) % channels;
    out[i] = from_f<T>((to_f(x[i]) - to_f(mean[c])) * rsqrtf(to_f(var[c]) + 1e-5f) * to_f(scale[c]) + to_f(bias[c]));
  }
}

template <class T>
__global__ void pool_kernel(const T* __restrict__ in, T* __restrict__ out, Pool2d p) {
  int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const T* plane = in + nc * p.h * p.w;
    float acc = p.max ? -FLT_MAX : 0.f;
    int count = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      int64_t y = oy * p.sh - p.ph + ky;
      if (y < 0 || y >= p.h) continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        int64_t xx = ox * p.sw - p.pw + kx;
        if (xx < 0 || xx >= p.w) continue;
        float v = to_f(plane[y * p.w + xx]);
        acc = p.max ? fmaxf(acc, v) : acc + v;
        ++count;
      }
    }
    out[i] = from_f<T>(p.max ? acc : acc / fmaxf(count, 1));
  }
}

template <class T>
__global__ void rope_kernel(const T* __restrict__ x, const int64_t* __restrict__ pos, const T* __restrict__ cosc,
                            const T* __restrict__ sinc, T* __restrict__ out, int64_t rows, int64_t heads, int64_t seq,
                            int64_t d, int64_t rot, bool bhsd) {
  int64_t half = rot / 2, n = rows * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = i / d, j = i % d;
    int64_t token = bhsd ? (row / (heads * seq)) * seq + row % seq : row / heads;
    const T* xr = x + row * d;
    if (j >= rot) {
      out[i] = xr[j];
      continue;
    }
    int64_t p = pos[token], f = j % half;
    float c = to_f(cosc[p * half + f]), s = to_f(sinc[p * half + f]);
    float v = j < half ? to_f(xr[j]) * c - to_f(xr[j + half]) * s : to_f(xr[j]) * c + to_f(xr[j - half]) * s;
    out[i] = from_f<T>(v);
  }
}

template <class T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, int64_t c, int64_t h, int64_t w, int64_t kh,
                              int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              int64_t dh, int64_t dw) {
  int64_t n = c * kh * kw * oh * ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ox = i % ow, oy = (i / ow) % oh, kx = (i / (ow * oh)) % kw, ky = (i / (ow * oh * kw)) % kh,
            ch = i / (ow * oh * kw * kh);
    int64_t y = oy * sh - ph + ky * dh, xx = ox * sw - pw + kx * dw;
    col[i] = (y >= 0 && y < h && xx >= 0 && xx < w) ? x[(ch * h + y) * w + xx] : from_f<T>(0.f);
  }
}

}  // namespace

void fill(void* p, DType d, int64_t n, int64_t bound, uint32_t seed, cudaStream_t s) {
  unsigned blocks = blocks_for(n, kThreads, 132 * 32);
  switch (d) {
    case DType::f32: fill_float<<<blocks, kThreads, 0, s>>>(static_cast<float*>(p), n, seed, 0.5f); break;
    case DType::f16: fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__half*>(p), n, seed, 0.5f); break;
    case DType::bf16: fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed, 0.5f); break;
    case DType::f8e4m3fn: fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed, 0.5f); break;
    case DType::i64: fill_int<<<blocks, kThreads, 0, s>>>(static_cast<int64_t*>(p), n, seed, bound); break;
    case DType::i32: fill_int<<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(p), n, seed, bound); break;
    case DType::boolean:
    case DType::u8:
    case DType::i8: fill_int<<<blocks, kThreads, 0, s>>>(static_cast<uint8_t*>(p), n, seed, bound); break;
    default: ROOFLENS_CUDA_CHECK(cudaMemsetAsync(p, 0, storage_bytes(d, n), s)); return;
  }
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void elementwise(EwOp op, const std::vector<EwOperand>& in, void* out, DType out_dtype, const std::vector<int64_t>& out_shape,
                 cudaStream_t s) {
  if (in.empty() || in.size() > 3) throw CudaError("element-wise takes 1 to 3 inputs");
  dispatch_float(out_dtype, [&](auto to) {
    using To = decltype(to);
    if (op == EwOp::where) launch_ew<To, uint8_t>(op, in, out, out_shape, s);
    else if (op == EwOp::cast) dispatch_float(in[0].dtype, [&](auto t0) { launch_ew<To, decltype(t0)>(op, in, out, out_shape, s); });
    else launch_ew<To, To>(op, in, out, out_shape, s);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void swiglu(const void* g, const void* u, void* o, DType d, int64_t n, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    swiglu_kernel<<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(static_cast<const T*>(g), static_cast<const T*>(u),
                                                                         static_cast<T*>(o), n);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void sum_slots(const void* in, void* out, DType d, int64_t rows, int64_t k, int64_t cols, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    sum_slots_kernel<<<blocks_for(rows * cols, kThreads, 132 * 32), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                                      rows, k, cols);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void strided_copy(const void* src, void* dst, int elem_bytes, const std::vector<int64_t>& extent_in,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides, int64_t src_offset,
                  int64_t dst_offset, cudaStream_t s) {
  std::vector<int64_t> extent = extent_in;
  std::vector<std::vector<int64_t>> st{src_strides, dst_strides};
  collapse(extent, st);
  if (extent.size() > static_cast<size_t>(kMaxRank)) throw CudaError("copy rank above 6");
  int64_t n = 1;
  Dims dims{static_cast<int>(extent.size()), {}};
  Strides strides{};
  for (size_t d = 0; d < extent.size(); ++d) {
    dims.extent[d] = extent[d];
    strides.s[0][d] = st[0][d];
    strides.s[1][d] = st[1][d];
    n *= extent[d];
  }
  dispatch_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    int64_t reach = std::max(src_offset, dst_offset);
    for (size_t d = 0; d < extent.size(); ++d) reach += (extent[d] - 1) * std::max(std::abs(st[0][d]), std::abs(st[1][d]));
    if (n < (int64_t{1} << 31) && reach < (int64_t{1} << 31))
      copy_kernel<E, uint32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(src), static_cast<E*>(dst), static_cast<uint32_t>(n), dims, strides, src_offset, dst_offset);
    else
      copy_kernel<E, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(static_cast<const E*>(src), static_cast<E*>(dst), n,
                                                                                    dims, strides, src_offset, dst_offset);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void gather(const void* data, const void* indices, DType index_dtype, void* out, int elem_bytes, int64_t outer,
            int64_t axis_len, int64_t n_idx, int64_t inner, cudaStream_t s) {
  int64_t n = outer * n_idx * inner;
  dispatch_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    if (index_dtype == DType::i64)
      gather_kernel<E, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(data), static_cast<const int64_t*>(indices), static_cast<E*>(out), outer, axis_len, n_idx, inner);
    else
      gather_kernel<E, int32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(data), static_cast<const int32_t*>(indices), static_cast<E*>(out), outer, axis_len, n_idx, inner);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void softmax_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, bool log, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    if (cols >= kBlockRowMinCols) {
      auto grid = static_cast<unsigned>(rows);
      if (cols <= kRowThreads * kRowCache) softmax_block<T, true><<<grid, kRowThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), cols, log);
      else softmax_block<T, false><<<grid, kRowThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), cols, log);
      return;
    }
    softmax_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                                    rows, cols, log);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void norm_rows(const void* x, const void* skip, const void* gamma, const void* beta, void* out, DType d, int64_t rows,
               int64_t cols, bool rms, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    if (cols >= kBlockRowMinCols) {
      auto grid = static_cast<unsigned>(rows);
      auto args = [&](auto kernel) {
        kernel<<<grid, kRowThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(gamma),
                                            static_cast<const T*>(beta), static_cast<T*>(out), cols, rms);
      };
      if (cols <= kRowThreads * kRowCache) args(norm_block<T, true>);
      else args(norm_block<T, false>);
      return;
    }
    norm_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        static_cast<T*>(out), rows, cols, rms);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void batch_norm(const void* x, const void* scale, const void* bias, const void* mean, const void* var, void* out, DType d,
                int64_t n, int64_t channels, int64_t spatial, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    batch_norm_kernel<<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<const T*>(mean),
        static_cast<const T*>(var), static_cast<T*>(out), n, channels, spatial);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void reduce_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, RowReduce op, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    reduce_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                                   rows, cols, op);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void topk_rows(const void* in, void* values, int64_t* indices, DType d, int64_t rows, int64_t cols, int k, cudaStream_t s) {
  if (k < 1 || k > 32) throw CudaError("top-k takes k in [1, 32]");
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    topk_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(values),
                                                                                 indices, rows, cols, k);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void pool2d(const void* in, void* out, DType d, const Pool2d& p, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    pool_kernel<<<blocks_for(p.n * p.c * p.oh * p.ow, kThreads, 132 * 32), kThreads, 0, s>>>(static_cast<const T*>(in),
                                                                                             static_cast<T*>(out), p);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void rope(const void* x, const int64_t* positions, const void* cosc, const void* sinc, void* out, DType d, int64_t rows,
          int64_t heads, int64_t seq, int64_t head_dim, int64_t rot, bool bhsd, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    rope_kernel<<<blocks_for(rows * head_dim, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(x), positions, static_cast<const T*>(cosc), static_cast<const T*>(sinc), static_cast<T*>(out), rows,
        heads, seq, head_dim, rot, bhsd);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void im2col(const void* x, void* col, DType d, int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
            int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    im2col_kernel<<<blocks_for(c * kh * kw * oh * ow, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(col), c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
