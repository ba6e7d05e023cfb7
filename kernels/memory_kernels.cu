// Replay kernels without a family of their own: buffer fills, the MoE combine, batch norm,
// pooling, rotary embedding and im2col.
#include <algorithm>
#include <cfloat>
#include <tuple>

#include "kernels/dtypes.cuh"
#include "kernels/memory_kernels.hpp"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kThreads = 256;

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
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = from_f<T>(
        (mix(i * 0x9E3779B97F4A7C15ULL + seed) * (1.0f / 4294967296.0f) * 2.0f - 1.0f) * scale);
}

template <class T>
__global__ void fill_int(T* p, int64_t n, uint32_t seed, int64_t bound) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(bound > 0 ? mix(i + seed) % static_cast<uint64_t>(bound)
                                    : mix(i + seed) & 1);
}

template <class T>
__global__ void sum_slots_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows,
                                 int64_t k, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / cols, c = i % cols;
    float acc = 0.f;
    for (int64_t j = 0; j < k; ++j) acc += to_f(in[(r * k + j) * cols + c]);
    out[i] = from_f<T>(acc);
  }
}

template <class T>
__global__ void batch_norm_kernel(const T* __restrict__ x, const T* __restrict__ scale,
                                  const T* __restrict__ bias, const T* __restrict__ mean,
                                  const T* __restrict__ var, T* __restrict__ out, int64_t n,
                                  int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = (i / spatial) % channels;
    out[i] =
        from_f<T>((to_f(x[i]) - to_f(mean[c])) * rsqrtf(to_f(var[c]) + 1e-5f) * to_f(scale[c]) +
                  to_f(bias[c]));
  }
}

template <class T>
__global__ void pool_kernel(const T* __restrict__ in, T* __restrict__ out, Pool2d p) {
  int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
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

// One plane (image, channel) per grid row, its output pixels across threads; 32-bit index math
// within a plane. K > 0: a K x K window known at compile time, unrolled, its weights held in
// registers (PyTorch's depthwise kernels specialise the same way); K = 0: any window.
template <class T, int K>
__global__ void depthwise_kernel(const T* __restrict__ x, const T* __restrict__ wt,
                                 const T* __restrict__ bias, T* __restrict__ y, DepthwiseConv2d p) {
  constexpr int kMax = K > 0 ? K * K : 1;
  const int kh = K > 0 ? K : p.kh, kw = K > 0 ? K : p.kw;
  int pixels = p.oh * p.ow;
  for (int plane = blockIdx.y; plane < p.n * p.c; plane += gridDim.y) {
    int ch = plane % p.c;
    const T* xp = x + static_cast<int64_t>(plane) * p.h * p.w;
    const T* wk = wt + ch * kh * kw;
    T* yp = y + static_cast<int64_t>(plane) * pixels;
    float b = bias ? to_f(bias[ch]) : 0.f;
    float wr[kMax];
    if constexpr (K > 0) {
#pragma unroll
      for (int i = 0; i < K * K; ++i) wr[i] = to_f(wk[i]);
    }
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < pixels; q += gridDim.x * blockDim.x) {
      int oy = q / p.ow, ox = q - oy * p.ow;
      int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
      float acc = b;
#pragma unroll
      for (int ky = 0; ky < (K > 0 ? K : kh); ++ky) {
        int yy = y0 + ky * p.dh;
        if (static_cast<unsigned>(yy) >= static_cast<unsigned>(p.h)) continue;
        const T* row = xp + yy * p.w;
#pragma unroll
        for (int kx = 0; kx < (K > 0 ? K : kw); ++kx) {
          int xx = x0 + kx * p.dw;
          if (static_cast<unsigned>(xx) >= static_cast<unsigned>(p.w)) continue;
          float wv;
          if constexpr (K > 0)
            wv = wr[ky * K + kx];
          else
            wv = to_f(wk[ky * kw + kx]);
          acc += to_f(row[xx]) * wv;
        }
      }
      yp[q] = from_f<T>(acc);
    }
  }
}

// The same with R outputs along a row per thread (stride S, no dilation): each of the window's
// rows is read once into registers, (R - 1) S + K elements, for R K multiply-adds, instead of K
// loads per output. What makes large windows (ConvNeXt's 7x7) bound by the loads otherwise.
template <class T, int K, int S>
__global__ void depthwise_rows_kernel(const T* __restrict__ x, const T* __restrict__ wt,
                                      const T* __restrict__ bias, T* __restrict__ y,
                                      DepthwiseConv2d p) {
  constexpr int R = kDepthwiseRowOutputs, SPAN = (R - 1) * S + K;
  int groups_x = (p.ow + R - 1) / R, work = p.oh * groups_x;
  for (int plane = blockIdx.y; plane < p.n * p.c; plane += gridDim.y) {
    int ch = plane % p.c;
    const T* xp = x + static_cast<int64_t>(plane) * p.h * p.w;
    const T* wk = wt + ch * K * K;
    T* yp = y + static_cast<int64_t>(plane) * p.oh * p.ow;
    float b = bias ? to_f(bias[ch]) : 0.f;
    float wr[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) wr[i] = to_f(wk[i]);
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < work; q += gridDim.x * blockDim.x) {
      int oy = q / groups_x, ox0 = (q - oy * groups_x) * R;
      int y0 = oy * S - p.ph, x0 = ox0 * S - p.pw;
      float acc[R];
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] = b;
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
        int yy = y0 + ky;
        if (static_cast<unsigned>(yy) >= static_cast<unsigned>(p.h)) continue;
        const T* row = xp + yy * p.w;
        float in[SPAN];
#pragma unroll
        for (int i = 0; i < SPAN; ++i)
          in[i] =
              static_cast<unsigned>(x0 + i) < static_cast<unsigned>(p.w) ? to_f(row[x0 + i]) : 0.f;
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int kx = 0; kx < K; ++kx) acc[r] += in[r * S + kx] * wr[ky * K + kx];
      }
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (ox0 + r < p.ow) yp[oy * p.ow + ox0 + r] = from_f<T>(acc[r]);
    }
  }
}

template <class T>
__global__ void rope_kernel(const T* __restrict__ x, const int64_t* __restrict__ pos,
                            const T* __restrict__ cosc, const T* __restrict__ sinc,
                            T* __restrict__ out, int64_t rows, int64_t heads, int64_t seq,
                            int64_t d, int64_t rot, bool bhsd) {
  int64_t half = rot / 2, n = rows * d;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t row = i / d, j = i % d;
    int64_t token = bhsd ? (row / (heads * seq)) * seq + row % seq : row / heads;
    const T* xr = x + row * d;
    if (j >= rot) {
      out[i] = xr[j];
      continue;
    }
    int64_t p = pos[token], f = j % half;
    float c = to_f(cosc[p * half + f]), s = to_f(sinc[p * half + f]);
    float v = j < half ? to_f(xr[j]) * c - to_f(xr[j + half]) * s
                       : to_f(xr[j]) * c + to_f(xr[j - half]) * s;
    out[i] = from_f<T>(v);
  }
}

// Whole 16-byte vectors: a thread rotates V pairs (x[f], x[f + half]) with one load of each
// half, of cos and of sin, and copies the unrotated tail a vector at a time. 32-bit indices.
template <class T>
__global__ void rope_vec_kernel(const T* __restrict__ x, const int64_t* __restrict__ pos,
                                const T* __restrict__ cosc, const T* __restrict__ sinc,
                                T* __restrict__ out, uint32_t rows, uint32_t heads, uint32_t seq,
                                uint32_t d, uint32_t rot, bool bhsd) {
  constexpr int V = Vec<T>::n;
  uint32_t half = rot / 2, pair_vecs = half / V, units = pair_vecs + (d - rot) / V,
           n = rows * units;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t row = i / units, u = i - row * units;
    const T* xr = x + size_t(row) * d;
    T* orow = out + size_t(row) * d;
    if (u >= pair_vecs) {  // unrotated tail
      uint32_t j = rot + (u - pair_vecs) * V;
      Vec<T>::load(xr + j).store(orow + j);
      continue;
    }
    uint32_t token = bhsd ? (row / (heads * seq)) * seq + row % seq : row / heads;
    uint32_t f = u * V;
    int64_t p = pos[token];
    Vec<T> a = Vec<T>::load(xr + f), b = Vec<T>::load(xr + f + half);
    Vec<T> c = Vec<T>::load(cosc + p * half + f), sn = Vec<T>::load(sinc + p * half + f), lo, hi;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float av = to_f(a[j]), bv = to_f(b[j]), cv = to_f(c[j]), sv = to_f(sn[j]);
      lo[j] = from_f<T>(av * cv - bv * sv);
      hi[j] = from_f<T>(bv * cv + av * sv);
    }
    lo.store(orow + f);
    hi.store(orow + f + half);
  }
}

// One (channel, ky, kx) row of the column matrix per grid row, output pixels across threads:
// the channel and kernel offsets are divided out once per block, each pixel costs one 32-bit
// division (the int64 chain per element made the im2col, not the GEMM, most of a 3x3 conv).
template <class T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, int c, int h, int w,
                              int kh, int kw, int oh, int ow, int sh, int sw, int ph, int pw,
                              int dh, int dw) {
  int pixels = oh * ow;
  for (int row = blockIdx.y; row < c * kh * kw; row += gridDim.y) {
    int kx = row % kw, ky = (row / kw) % kh, ch = row / (kw * kh);
    const T* xc = x + static_cast<int64_t>(ch) * h * w;
    T* out = col + static_cast<int64_t>(row) * pixels;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
      int oy = p / ow, ox = p - oy * ow;
      int y = oy * sh - ph + ky * dh, xx = ox * sw - pw + kx * dw;
      out[p] = (y >= 0 && y < h && xx >= 0 && xx < w) ? xc[y * w + xx] : from_f<T>(0.f);
    }
  }
}

}  // namespace

void fill(void* p, DType d, int64_t n, int64_t bound, uint32_t seed, cudaStream_t s) {
  unsigned blocks = blocks_for(n, kThreads, 132 * 32);
  switch (d) {
    case DType::f32:
      fill_float<<<blocks, kThreads, 0, s>>>(static_cast<float*>(p), n, seed, 0.5f);
      break;
    case DType::f16:
      fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__half*>(p), n, seed, 0.5f);
      break;
    case DType::bf16:
      fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed, 0.5f);
      break;
    case DType::f8e4m3fn:
      fill_float<<<blocks, kThreads, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed, 0.5f);
      break;
    case DType::i64:
      fill_int<<<blocks, kThreads, 0, s>>>(static_cast<int64_t*>(p), n, seed, bound);
      break;
    case DType::i32:
      fill_int<<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(p), n, seed, bound);
      break;
    case DType::boolean:
    case DType::u8:
    case DType::i8:
      fill_int<<<blocks, kThreads, 0, s>>>(static_cast<uint8_t*>(p), n, seed, bound);
      break;
    default:
      ROOFLENS_CUDA_CHECK(cudaMemsetAsync(p, 0, storage_bytes(d, n), s));
      return;
  }
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void sum_slots(const void* in, void* out, DType d, int64_t rows, int64_t k, int64_t cols,
               cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    sum_slots_kernel<<<blocks_for(rows * cols, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, k, cols);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void batch_norm(const void* x, const void* scale, const void* bias, const void* mean,
                const void* var, void* out, DType d, int64_t n, int64_t channels, int64_t spatial,
                cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    batch_norm_kernel<<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias),
        static_cast<const T*>(mean), static_cast<const T*>(var), static_cast<T*>(out), n, channels,
        spatial);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void pool2d(const void* in, void* out, DType d, const Pool2d& p, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    pool_kernel<<<blocks_for(p.n * p.c * p.oh * p.ow, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(in), static_cast<T*>(out), p);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

bool depthwise_rows_takes(const DepthwiseConv2d& p) {
  return p.kh == p.kw && (p.kh == 3 || p.kh == 5 || p.kh == 7) && p.sh == p.sw &&
         (p.sh == 1 || p.sh == 2) && p.dh == 1 && p.dw == 1;
}

void depthwise_conv2d(const void* x, const void* weights, const void* bias, void* y, DType d,
                      const DepthwiseConv2d& p, cudaStream_t s, bool row_outputs) {
  if (row_outputs && !depthwise_rows_takes(p))
    throw CudaError("depthwise rows kernel: square 3, 5 or 7 windows, stride 1 or 2, no dilation");
  int work =
      row_outputs ? p.oh * ((p.ow + kDepthwiseRowOutputs - 1) / kDepthwiseRowOutputs) : p.oh * p.ow;
  int threads = std::min(256, (work + 31) / 32 * 32);
  dim3 grid(static_cast<unsigned>(std::min((work + threads - 1) / threads, 64)),
            static_cast<unsigned>(std::min(p.n * p.c, 65535)));
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    auto args = std::make_tuple(static_cast<const T*>(x), static_cast<const T*>(weights),
                                static_cast<const T*>(bias), static_cast<T*>(y), p);
    auto run = [&](auto kernel) {
      std::apply([&](auto... a) { kernel<<<grid, threads, 0, s>>>(a...); }, args);
    };
    if (row_outputs) {
      auto by_stride = [&](auto k) {
        constexpr int K = decltype(k)::value;
        if (p.sh == 1)
          run(depthwise_rows_kernel<T, K, 1>);
        else
          run(depthwise_rows_kernel<T, K, 2>);
      };
      if (p.kh == 3)
        by_stride(std::integral_constant<int, 3>{});
      else if (p.kh == 5)
        by_stride(std::integral_constant<int, 5>{});
      else
        by_stride(std::integral_constant<int, 7>{});
    } else if (p.kh == 3 && p.kw == 3) {
      run(depthwise_kernel<T, 3>);
    } else if (p.kh == 5 && p.kw == 5) {
      run(depthwise_kernel<T, 5>);
    } else if (p.kh == 7 && p.kw == 7) {
      run(depthwise_kernel<T, 7>);
    } else {
      run(depthwise_kernel<T, 0>);
    }
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void rope(const void* x, const int64_t* positions, const void* cosc, const void* sinc, void* out,
          DType d, int64_t rows, int64_t heads, int64_t seq, int64_t head_dim, int64_t rot,
          bool bhsd, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    constexpr int V = 16 / sizeof(T);
    if ((rot / 2) % V == 0 && head_dim % V == 0 && rot % 2 == 0 && aligned16(x) && aligned16(out) &&
        aligned16(cosc) && aligned16(sinc) && rows * head_dim < (int64_t{1} << 31)) {
      int64_t units = rot / 2 / V + (head_dim - rot) / V;
      rope_vec_kernel<<<blocks_for(rows * units, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const T*>(x), positions, static_cast<const T*>(cosc),
          static_cast<const T*>(sinc), static_cast<T*>(out), static_cast<uint32_t>(rows),
          static_cast<uint32_t>(heads), static_cast<uint32_t>(seq), static_cast<uint32_t>(head_dim),
          static_cast<uint32_t>(rot), bhsd);
      return;
    }
    rope_kernel<<<blocks_for(rows * head_dim, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(x), positions, static_cast<const T*>(cosc),
        static_cast<const T*>(sinc), static_cast<T*>(out), rows, heads, seq, head_dim, rot, bhsd);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void im2col(const void* x, void* col, DType d, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
            int64_t dh, int64_t dw, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    if (c * h * w >= (int64_t{1} << 31) || oh * ow >= (int64_t{1} << 31) ||
        c * kh * kw >= (int64_t{1} << 31))
      throw CudaError("im2col: an image above 2^31 elements");
    auto i32 = [](int64_t v) { return static_cast<int>(v); };
    dim3 grid(blocks_for(oh * ow, kThreads, 1024),
              static_cast<unsigned>(std::min<int64_t>(c * kh * kw, 65535)));
    im2col_kernel<<<grid, kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(col), i32(c),
                                            i32(h), i32(w), i32(kh), i32(kw), i32(oh), i32(ow),
                                            i32(sh), i32(sw), i32(ph), i32(pw), i32(dh), i32(dw));
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
