// Row replay kernels: softmax, layer/RMS norm, reductions and top-k over the last axis.
// Rows of whole 16-byte vectors go through one vectorized kernel that holds the row (and the
// norm's gamma/beta) in registers, read from HBM once; other rows use a warp per short row or a
// block per long one. Divisions are __fdividef: an IEEE float division (like a 64-bit integer
// one) is a called subroutine, and with L2 flushed its code is one more trip to HBM on the
// critical path of a decode step's one-row kernel.
#include <cfloat>

#include "kernels/memory_kernels.hpp"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kThreads = 256;

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

// A norm's mean (0 for RMS norm) and 1 / sqrt(variance + eps), from the row's sum and sum of
// squares: one formula for the block, warp and vector kernels.
__device__ __forceinline__ float2 norm_stats(float s, float s2, int64_t cols, bool rms) {
  float inv_cols = __fdividef(1.f, static_cast<float>(cols));
  float mean = rms ? 0.f : s * inv_cols;
  return make_float2(mean, rsqrtf(fmaxf(s2 * inv_cols - mean * mean, 0.f) + 1e-5f));
}

__device__ __forceinline__ int64_t warp_row() {
  return blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
}

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
      for (int64_t j = threadIdx.x; j < cols; j += kRowThreads)
        f(j, to_f(row[j]) + (skip ? to_f(skip[j]) : 0.f));
    }
  }
};

template <class T, bool kCached>
__global__ void __launch_bounds__(kRowThreads)
    softmax_block(const T* __restrict__ in, T* __restrict__ out, int64_t cols, bool log) {
  __shared__ float red[32];
  int64_t r = blockIdx.x;
  RowReader<T, kCached> row(in + r * cols, cols, nullptr);
  float m = -FLT_MAX;
  row.each(nullptr, [&](int64_t, float x) { m = fmaxf(m, x); });
  m = block_reduce<true>(m, red);
  float sum = 0;
  row.each(nullptr, [&](int64_t, float x) { sum += __expf(x - m); });
  sum = block_reduce<false>(sum, red);
  float inv = __fdividef(1.f, sum), lsum = __logf(sum);
  T* o = out + r * cols;
  row.each(nullptr,
           [&](int64_t j, float x) { o[j] = from_f<T>(log ? x - m - lsum : __expf(x - m) * inv); });
}

template <class T, bool kCached>
__global__ void __launch_bounds__(kRowThreads)
    norm_block(const T* __restrict__ x, const T* __restrict__ skip, const T* __restrict__ gamma,
               const T* __restrict__ beta, T* __restrict__ out, int64_t cols, bool rms) {
  __shared__ float red[32];
  int64_t r = blockIdx.x;
  const T* sr = skip ? skip + r * cols : nullptr;
  RowReader<T, kCached> row(x + r * cols, cols, sr);
  float s = 0, s2 = 0;
  row.each(sr, [&](int64_t, float v) { s += v, s2 += v * v; });
  s = block_reduce<false>(s, red);
  s2 = block_reduce<false>(s2, red);
  float2 st = norm_stats(s, s2, cols, rms);
  float mean = st.x, inv = st.y;
  T* o = out + r * cols;
  row.each(sr, [&](int64_t j, float v) {
    float y = (v - mean) * inv * to_f(gamma[j]);
    if (beta) y += to_f(beta[j]);
    o[j] = from_f<T>(y);
  });
}

template <class T>
__global__ void softmax_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows,
                               int64_t cols, bool log) {
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
  float inv = __fdividef(1.f, sum), lsum = __logf(sum);
  for (int64_t j = lane; j < cols; j += 32) {
    float v = to_f(x[j]) - m;
    out[r * cols + j] = from_f<T>(log ? v - lsum : __expf(v) * inv);
  }
}

template <class T>
__global__ void norm_kernel(const T* __restrict__ x, const T* __restrict__ skip,
                            const T* __restrict__ gamma, const T* __restrict__ beta,
                            T* __restrict__ out, int64_t rows, int64_t cols, bool rms) {
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
  float2 st = norm_stats(s, s2, cols, rms);
  float mean = st.x, inv = st.y;
  for (int64_t j = lane; j < cols; j += 32) {
    float v = (to_f(xr[j]) + (sr ? to_f(sr[j]) : 0.f) - mean) * inv * to_f(gamma[j]);
    if (beta) v += to_f(beta[j]);
    out[r * cols + j] = from_f<T>(v);
  }
}

// A reduction's running value: max, min, or a sum (of squares for sum_square and l2).
struct Reduction {
  RowReduce op;
  float acc;
  __device__ explicit Reduction(RowReduce o)
      : op(o),
        acc(o == RowReduce::max   ? -FLT_MAX
            : o == RowReduce::min ? FLT_MAX
                                  : 0.f) {}
  __device__ void add(float v) {
    if (op == RowReduce::max)
      acc = fmaxf(acc, v);
    else if (op == RowReduce::min)
      acc = fminf(acc, v);
    else
      acc += (op == RowReduce::sum_square || op == RowReduce::l2) ? v * v : v;
  }
  // Merges the lanes' values of a warp.
  __device__ void across_warp() {
    acc = op == RowReduce::max   ? warp_max(acc)
          : op == RowReduce::min ? warp_min(acc)
                                 : warp_sum(acc);
  }
  __device__ float result(int64_t count) const {
    if (op == RowReduce::mean) return acc * __fdividef(1.f, static_cast<float>(count));
    if (op == RowReduce::l2) return sqrtf(acc);
    return acc;
  }
};

template <class T>
__global__ void reduce_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows,
                              int64_t cols, RowReduce op) {
  int64_t r = warp_row();
  int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* x = in + r * cols;
  Reduction red(op);
  for (int64_t j = lane; j < cols; j += 32) red.add(to_f(x[j]));
  red.across_warp();
  if (lane == 0) out[r] = from_f<T>(red.result(cols));
}

// One thread an output of [rows, inner]: consecutive threads read consecutive inner elements.
template <class T>
__global__ void reduce_middle_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows,
                                     int64_t cols, int64_t inner, RowReduce op) {
  int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= rows * inner) return;
  int64_t r = o / inner, i = o % inner;
  const T* x = in + r * cols * inner + i;
  Reduction red(op);
  for (int64_t j = 0; j < cols; ++j) red.add(to_f(x[j * inner]));
  out[o] = from_f<T>(red.result(cols));
}

// k passes of an arg-max, each skipping what earlier passes took.
template <class T>
__global__ void topk_kernel(const T* __restrict__ in, T* __restrict__ values,
                            int64_t* __restrict__ indices, int64_t rows, int64_t cols, int k) {
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

// ---- row kernels: whole 16-byte vectors, a power-of-two group of threads per row -------------

constexpr int kVecBlock = 256;       // threads per block; 256 / tpr rows per block
constexpr int kMaxVecPerThread = 8;  // rows up to 256 * 8 vectors (16384 bf16)

struct RowGroup {
  int tpr;    // threads per row: 32 to 256
  int64_t r;  // this thread's row
  int t;      // index within the row's group
  __device__ RowGroup(int threads_per_row) : tpr(threads_per_row) {
    r = blockIdx.x * int64_t(kVecBlock / tpr) + threadIdx.x / tpr;
    t = threadIdx.x % tpr;
  }
  // Sum (or max) over the row's threads; every thread of the block must call it.
  template <bool kMax>
  __device__ float2 reduce(float2 v, float2* red) const {
    for (int o = 16; o > 0; o >>= 1) {
      float x = __shfl_xor_sync(0xffffffffu, v.x, o), y = __shfl_xor_sync(0xffffffffu, v.y, o);
      v = kMax ? make_float2(fmaxf(v.x, x), fmaxf(v.y, y)) : make_float2(v.x + x, v.y + y);
    }
    if (tpr == 32) return v;
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    int first = (threadIdx.x / tpr) * (tpr / 32);
    float2 acc = red[first];
    for (int w = 1; w < tpr / 32; ++w) {
      float2 o = red[first + w];
      acc = kMax ? make_float2(fmaxf(acc.x, o.x), fmaxf(acc.y, o.y))
                 : make_float2(acc.x + o.x, acc.y + o.y);
    }
    return acc;
  }
};

// Rows stay in registers as 16-bit (or fp32) vectors, converted on use: fewer registers, more
// resident rows, more bytes in flight.
template <class T, int VPT>
__global__ void __launch_bounds__(kVecBlock)
    softmax_vec(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols, int tpr,
                bool log) {
  constexpr int V = Vec<T>::n;
  __shared__ float2 red_max[kVecBlock / 32], red_sum[kVecBlock / 32];
  RowGroup g(tpr);
  int64_t nvec = cols / V;
  bool live = g.r < rows;
  Vec<T> x[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    int64_t c = g.t + int64_t(i) * tpr;
    if (live && c < nvec) x[i] = Vec<T>::load(in + g.r * cols + c * V);
  }
  auto used = [&](int i) { return live && g.t + int64_t(i) * tpr < nvec; };
  float m = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < VPT; ++i)
    if (used(i))
#pragma unroll
      for (int j = 0; j < V; ++j) m = fmaxf(m, to_f(x[i][j]));
  m = g.reduce<true>(make_float2(m, 0.f), red_max).x;
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i)
    if (used(i))
#pragma unroll
      for (int j = 0; j < V; ++j) sum += __expf(to_f(x[i][j]) - m);
  sum = g.reduce<false>(make_float2(sum, 0.f), red_sum).x;
  float inv = __fdividef(1.f, sum), lsum = __logf(sum);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    if (!used(i)) continue;
    Vec<T> o;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = to_f(x[i][j]) - m;
      o[j] = from_f<T>(log ? v - lsum : __expf(v) * inv);
    }
    o.store(out + g.r * cols + (g.t + int64_t(i) * tpr) * V);
  }
}

// gamma and beta are loaded with x, before the reduction, so the row costs one trip to memory.
// A residual input is added first and the sum kept in T (as fused skip-norm kernels keep it).
template <class T, int VPT>
__global__ void __launch_bounds__(kVecBlock)
    norm_vec(const T* __restrict__ x, const T* __restrict__ skip, const T* __restrict__ gamma,
             const T* __restrict__ beta, T* __restrict__ out, int64_t rows, int64_t cols, int tpr,
             bool rms) {
  constexpr int V = Vec<T>::n;
  __shared__ float2 red[kVecBlock / 32];
  RowGroup g(tpr);
  int64_t nvec = cols / V;
  bool live = g.r < rows;
  Vec<T> xv[VPT], gv[VPT], bv[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    int64_t c = g.t + int64_t(i) * tpr;
    if (!live || c >= nvec) continue;
    xv[i] = Vec<T>::load(x + g.r * cols + c * V);
    gv[i] = Vec<T>::load(gamma + c * V);
    if (beta) bv[i] = Vec<T>::load(beta + c * V);
    if (skip) {
      Vec<T> sv = Vec<T>::load(skip + g.r * cols + c * V);
#pragma unroll
      for (int j = 0; j < V; ++j) xv[i][j] = from_f<T>(to_f(xv[i][j]) + to_f(sv[j]));
    }
  }
  float s = 0.f, s2 = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i)
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float v = to_f(xv[i][j]);  // zero where unused
      s += v;
      s2 += v * v;
    }
  float2 tot = g.reduce<false>(make_float2(s, s2), red);
  float2 st = norm_stats(tot.x, tot.y, cols, rms);
  float mean = st.x, inv = st.y;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    int64_t c = g.t + int64_t(i) * tpr;
    if (!live || c >= nvec) continue;
    Vec<T> o;
#pragma unroll
    for (int j = 0; j < V; ++j)
      o[j] =
          from_f<T>((to_f(xv[i][j]) - mean) * inv * to_f(gv[i][j]) + (beta ? to_f(bv[i][j]) : 0.f));
    o.store(out + g.r * cols + c * V);
  }
}

// Threads per row and vectors per thread for a vectorizable row, or false. Few rows get more
// threads each (more loads in flight), many rows fewer (less reduction per element).
bool vec_row_shape(int64_t rows, int64_t cols, int vec, int& tpr, int& vpt) {
  if (cols % vec) return false;
  int64_t nvec = cols / vec;
  int64_t want = rows < 132 * 8 ? 2 : 4;
  tpr = 32;
  while (tpr < kVecBlock && tpr * want < nvec) tpr *= 2;
  int64_t per = (nvec + tpr - 1) / tpr;
  if (per > kMaxVecPerThread) return false;
  vpt = per <= 1 ? 1 : per <= 2 ? 2 : per <= 4 ? 4 : 8;
  return true;
}

template <class F>
void dispatch_vpt(int vpt, F&& f) {
  switch (vpt) {
    case 1:
      f(std::integral_constant<int, 1>{});
      return;
    case 2:
      f(std::integral_constant<int, 2>{});
      return;
    case 4:
      f(std::integral_constant<int, 4>{});
      return;
    default:
      f(std::integral_constant<int, 8>{});
      return;
  }
}

}  // namespace

void softmax_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, bool log,
                  cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    int tpr = 0, vpt = 0;
    if (aligned16(in) && aligned16(out) && vec_row_shape(rows, cols, Vec<T>::n, tpr, vpt)) {
      dispatch_vpt(vpt, [&](auto k) {
        softmax_vec<T, decltype(k)::value>
            <<<blocks_for(rows, kVecBlock / tpr, INT32_MAX), kVecBlock, 0, s>>>(
                static_cast<const T*>(in), static_cast<T*>(out), rows, cols, tpr, log);
      });
      return;
    }
    if (cols >= kBlockRowMinCols) {
      auto grid = static_cast<unsigned>(rows);
      if (cols <= kRowThreads * kRowCache)
        softmax_block<T, true><<<grid, kRowThreads, 0, s>>>(static_cast<const T*>(in),
                                                            static_cast<T*>(out), cols, log);
      else
        softmax_block<T, false><<<grid, kRowThreads, 0, s>>>(static_cast<const T*>(in),
                                                             static_cast<T*>(out), cols, log);
      return;
    }
    softmax_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, cols, log);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void norm_rows(const void* x, const void* skip, const void* gamma, const void* beta, void* out,
               DType d, int64_t rows, int64_t cols, bool rms, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    int tpr = 0, vpt = 0;
    bool aligned = aligned16(x) && aligned16(gamma) && aligned16(out) &&
                   (!skip || aligned16(skip)) && (!beta || aligned16(beta));
    if (aligned && vec_row_shape(rows, cols, Vec<T>::n, tpr, vpt)) {
      dispatch_vpt(vpt, [&](auto k) {
        norm_vec<T, decltype(k)::value>
            <<<blocks_for(rows, kVecBlock / tpr, INT32_MAX), kVecBlock, 0, s>>>(
                static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(gamma),
                static_cast<const T*>(beta), static_cast<T*>(out), rows, cols, tpr, rms);
      });
      return;
    }
    if (cols >= kBlockRowMinCols) {
      auto grid = static_cast<unsigned>(rows);
      auto args = [&](auto kernel) {
        kernel<<<grid, kRowThreads, 0, s>>>(
            static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(gamma),
            static_cast<const T*>(beta), static_cast<T*>(out), cols, rms);
      };
      if (cols <= kRowThreads * kRowCache)
        args(norm_block<T, true>);
      else
        args(norm_block<T, false>);
      return;
    }
    norm_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(skip), static_cast<const T*>(gamma),
        static_cast<const T*>(beta), static_cast<T*>(out), rows, cols, rms);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void reduce_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, RowReduce op,
                 cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    reduce_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, cols, op);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void reduce_middle(const void* in, void* out, DType d, int64_t rows, int64_t cols, int64_t inner,
                   RowReduce op, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    reduce_middle_kernel<<<blocks_for(rows * inner, kThreads, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, cols, inner, op);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void topk_rows(const void* in, void* values, int64_t* indices, DType d, int64_t rows, int64_t cols,
               int k, cudaStream_t s) {
  if (k < 1 || k > 32) throw CudaError("top-k takes k in [1, 32]");
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    topk_kernel<<<blocks_for(rows, kWarpsPerBlock, INT32_MAX), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(values), indices, rows, cols, k);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
