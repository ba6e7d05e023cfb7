// Element-wise replay kernels: one functor table, a 16-byte vector path when no operand
// broadcasts, a vector path for broadcasts along leading dims (bias adds, per-channel scales),
// and a scalar strided walk for everything else.
#include <algorithm>
#include <type_traits>

#include "kernels/memory_kernels.hpp"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float apply(EwOp op, float a, float b, float c) {
  switch (op) {
    case EwOp::relu:
      return fmaxf(a, 0.f);
    case EwOp::gelu:
      return 0.5f * a * (1.f + erff(a * 0.70710678f));
    case EwOp::gelu_tanh:
      return 0.5f * a * (1.f + tanhf(0.7978845608f * (a + 0.044715f * a * a * a)));
    // Fast division, as fused activation kernels use: the IEEE one made SiLU instruction-bound
    // (84% of HBM at 512 MiB) and pulled a slow-path subroutine into every small launch.
    case EwOp::sigmoid:
      return __fdividef(1.f, 1.f + __expf(-a));
    case EwOp::swish:
      return __fdividef(a, 1.f + __expf(-a));
    case EwOp::tanh_:
      return tanhf(a);
    case EwOp::exp_:
      return __expf(a);
    case EwOp::erf_:
      return erff(a);
    case EwOp::sqrt_:
      return sqrtf(fabsf(a));
    case EwOp::neg:
      return -a;
    case EwOp::abs_:
      return fabsf(a);
    case EwOp::reciprocal:
      return 1.f / a;
    case EwOp::log_:
      return __logf(fabsf(a) + 1e-6f);
    case EwOp::softplus:
      return log1pf(__expf(a));
    case EwOp::leaky_relu:
      return a > 0 ? a : 0.01f * a;
    case EwOp::hard_sigmoid:
      return fminf(fmaxf(0.2f * a + 0.5f, 0.f), 1.f);
    case EwOp::hard_swish:
      return a * fminf(fmaxf(a / 6.f + 0.5f, 0.f), 1.f);
    case EwOp::identity:
    case EwOp::cast:
      return a;
    case EwOp::add:
      return a + b;
    case EwOp::sub:
      return a - b;
    case EwOp::mul:
      return a * b;
    case EwOp::div:
      return a / b;
    case EwOp::pow_:
      return __powf(fabsf(a), b);
    case EwOp::max_:
      return fmaxf(a, b);
    case EwOp::min_:
      return fminf(a, b);
    case EwOp::where:
      return a != 0.f ? b : c;
    case EwOp::clip:
      return fminf(fmaxf(a, b), c);
  }
  return a;
}

// Inputs 1 and 2 are of the output's type; input 0 may differ (Where's bool, Cast's source).
template <class To, class T0>
__global__ void ew_contiguous(EwOp op, int n_in, const T0* __restrict__ a, const To* __restrict__ b,
                              const To* __restrict__ c, To* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x = to_f(a[i]);
    float y = n_in > 1 ? to_f(b[i]) : 0.f, z = n_in > 2 ? to_f(c[i]) : 0.f;
    out[i] = from_f<To>(apply(op, x, y, z));
  }
}

// The vector kernels are instantiated per op: each is a short straight loop. With L2 flushed
// before every sample the instructions come from HBM too, so a shared kernel that branches into
// a 28-way switch pays instruction fetches on the critical path of a tiny launch.
template <EwOp Op, class T>
__device__ __forceinline__ Vec<T> apply_vec(int n_in, const Vec<T>& va, const Vec<T>& vb,
                                            const Vec<T>& vc) {
  constexpr int V = Vec<T>::n;
  Vec<T> o;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float b = n_in > 1 ? to_f(vb[j]) : 0.f, c = n_in > 2 ? to_f(vc[j]) : 0.f;
    o[j] = from_f<T>(apply(Op, to_f(va[j]), b, c));
  }
  return o;
}

template <class F>
void dispatch_op(EwOp op, F&& f) {
  switch (op) {
// clang-format off (the cases are macro calls without semicolons)
#define ROOFLENS_EW_CASE(name)                     \
  case EwOp::name:                                 \
    f(std::integral_constant<EwOp, EwOp::name>{}); \
    return;
    ROOFLENS_EW_CASE(relu)
    ROOFLENS_EW_CASE(gelu)
    ROOFLENS_EW_CASE(gelu_tanh)
    ROOFLENS_EW_CASE(sigmoid)
    ROOFLENS_EW_CASE(swish)
    ROOFLENS_EW_CASE(tanh_)
    ROOFLENS_EW_CASE(exp_)
    ROOFLENS_EW_CASE(erf_)
    ROOFLENS_EW_CASE(sqrt_)
    ROOFLENS_EW_CASE(neg)
    ROOFLENS_EW_CASE(abs_)
    ROOFLENS_EW_CASE(reciprocal)
    ROOFLENS_EW_CASE(log_)
    ROOFLENS_EW_CASE(softplus)
    ROOFLENS_EW_CASE(leaky_relu)
    ROOFLENS_EW_CASE(hard_sigmoid)
    ROOFLENS_EW_CASE(hard_swish)
    ROOFLENS_EW_CASE(identity)
    ROOFLENS_EW_CASE(cast)
    ROOFLENS_EW_CASE(add)
    ROOFLENS_EW_CASE(sub)
    ROOFLENS_EW_CASE(mul)
    ROOFLENS_EW_CASE(div)
    ROOFLENS_EW_CASE(pow_)
    ROOFLENS_EW_CASE(max_)
    ROOFLENS_EW_CASE(min_)
    ROOFLENS_EW_CASE(where)
    ROOFLENS_EW_CASE(clip)
#undef ROOFLENS_EW_CASE
    // clang-format on
  }
  throw CudaError("element-wise op out of range");
}

// Equal shapes, one type: 16-byte loads and stores.
template <EwOp Op, class T>
__global__ void ew_vector(int n_in, const T* __restrict__ a, const T* __restrict__ b,
                          const T* __restrict__ c, T* __restrict__ out, int64_t n_vec) {
  constexpr int V = Vec<T>::n;
  for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < n_vec;
       v += int64_t(gridDim.x) * blockDim.x) {
    Vec<T> x = Vec<T>::load(a + v * V), y, z;
    if (n_in > 1) y = Vec<T>::load(b + v * V);
    if (n_in > 2) z = Vec<T>::load(c + v * V);
    apply_vec<Op>(n_in, x, y, z).store(out + v * V);
  }
}

template <class To, class T0, class I>
__global__ void ew_broadcast(EwOp op, int n_in, const T0* __restrict__ a, const To* __restrict__ b,
                             const To* __restrict__ c, To* __restrict__ out, I n, Dims dims,
                             Strides st) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I off[3];
    strided_offsets(i, dims, st, off);
    float x = to_f(a[off[0]]);
    float y = n_in > 1 ? to_f(b[off[1]]) : 0.f, z = n_in > 2 ? to_f(c[off[2]]) : 0.f;
    out[i] = from_f<To>(apply(op, x, y, z));
  }
}

// Broadcast whose innermost dim is a multiple of the vector width: the walk runs over vectors
// (dims.extent[last] divided by V) and yields element offsets; an operand contiguous in the
// innermost dim is loaded as a vector, one broadcast along it as a splatted scalar.
template <EwOp Op, class T, class I>
__global__ void ew_broadcast_vec(int n_in, const T* __restrict__ a, const T* __restrict__ b,
                                 const T* __restrict__ c, T* __restrict__ out, I n_vec, Dims dims,
                                 Strides st, unsigned vector_mask) {
  constexpr int V = Vec<T>::n;
  const T* in[3] = {a, b, c};
  for (I v = blockIdx.x * I(blockDim.x) + threadIdx.x; v < n_vec; v += I(gridDim.x) * blockDim.x) {
    I off[3];
    strided_offsets(v, dims, st, off);
    Vec<T> x[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      if (k >= n_in) break;
      x[k] = (vector_mask >> k) & 1 ? Vec<T>::load(in[k] + off[k]) : Vec<T>::splat(in[k][off[k]]);
    }
    apply_vec<Op>(n_in, x[0], x[1], x[2]).store(out + v * V);
  }
}

// Rows of `cols` where each operand is either the whole contiguous tensor or one value per row,
// the rows indexed (outer, mid): a squeeze-excitation scale [N, C, 1, 1] times [N, C, H, W], a
// per-channel bias [C, 1, 1] over [N, C, H, W]; the rows, H x W, need not be whole vectors.
// Vectors of the flat output; a per-row operand's value is at outer * s[k][0] + mid * s[k][1].
template <EwOp Op, class T>
__global__ void ew_rows_vec(int n_in, const T* __restrict__ a, const T* __restrict__ b,
                            const T* __restrict__ c, T* __restrict__ out, uint32_t n_vec,
                            uint32_t cols, uint32_t mids, Strides st, unsigned vector_mask) {
  constexpr int V = Vec<T>::n;
  const T* in[3] = {a, b, c};
  for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < n_vec; v += gridDim.x * blockDim.x) {
    uint32_t i = v * V, row0 = i / cols, col0 = i - row0 * cols;
    Vec<T> x[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      if (k >= n_in) break;
      if ((vector_mask >> k) & 1) {
        x[k] = Vec<T>::load(in[k] + i);
        continue;
      }
      uint32_t outer = row0 / mids, mid = row0 - outer * mids, col = col0;
      auto s0 = static_cast<uint32_t>(st.s[k][0]), s1 = static_cast<uint32_t>(st.s[k][1]);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (col == cols) {
          col = 0;
          if (++mid == mids) mid = 0, ++outer;
        }
        x[k][j] = in[k][outer * s0 + mid * s1];
        ++col;
      }
    }
    apply_vec<Op>(n_in, x[0], x[1], x[2]).store(out + i);
  }
}

// The vector path: every operand either contiguous in the innermost dim with vector-aligned
// offsets, or broadcast along it. `mask` gets a bit per contiguous operand.
inline bool vector_plan(const std::vector<int64_t>& extent,
                        const std::vector<std::vector<int64_t>>& strides, int n_in, int V,
                        unsigned& mask) {
  if (extent.empty() || extent.back() % V != 0) return false;
  size_t last = extent.size() - 1;
  mask = 0;
  for (int k = 0; k < n_in; ++k) {
    if (strides[k][last] == 1) {
      mask |= 1u << k;
      for (size_t d = 0; d < last; ++d)
        if (strides[k][d] % V != 0) return false;
    } else if (strides[k][last] != 0) {
      return false;
    }
  }
  return true;
}

// Per-row operands over rows that are not whole vectors: [rows, cols] or [outer, mid, cols], each
// operand contiguous (a bit in `mask`) or one value a row (its strides in `st`).
struct RowsPlan {
  bool ok = false;
  unsigned mask = 0;
  Strides st{};
  int64_t cols = 0, mids = 0;
};
inline RowsPlan rows_plan(const std::vector<int64_t>& extent,
                          const std::vector<std::vector<int64_t>>& strides, int n_in) {
  RowsPlan p;
  if (extent.size() != 2 && extent.size() != 3) return p;
  p.cols = extent.back();
  p.mids = extent.size() == 3 ? extent[1] : extent[0];
  for (int k = 0; k < n_in; ++k) {
    const std::vector<int64_t>& sk = strides[k];
    bool contiguous =
        sk.back() == 1 &&
        (extent.size() == 2 ? sk[0] == p.cols : sk[1] == p.cols && sk[0] == p.mids * p.cols);
    if (contiguous) {
      p.mask |= 1u << k;
    } else if (sk.back() == 0) {
      p.st.s[k][0] = extent.size() == 3 ? sk[0] : 0;
      p.st.s[k][1] = extent.size() == 3 ? sk[1] : sk[0];
    } else {
      return p;
    }
  }
  p.ok = true;
  return p;
}

// Every operand as strides into the output's dims (0 along the dims it is broadcast over), runs
// of dims that stay contiguous for all collapsed into one.
struct BroadcastLayout {
  std::vector<int64_t> extent;
  std::vector<std::vector<int64_t>> strides;  // three operands, absent ones all 0
  Strides st{};
};
inline BroadcastLayout broadcast_layout(const std::vector<EwOperand>& in,
                                        const std::vector<int64_t>& out_shape) {
  BroadcastLayout l;
  l.extent = out_shape;
  for (const auto& o : in) l.strides.push_back(replay::broadcast_strides(o.shape, out_shape));
  l.strides.resize(3, std::vector<int64_t>(out_shape.size(), 0));
  collapse(l.extent, l.strides);
  if (l.extent.size() > static_cast<size_t>(kMaxRank)) throw CudaError("element-wise rank above 6");
  for (size_t d = 0; d < l.extent.size(); ++d)
    for (int k = 0; k < 3; ++k) l.st.s[k][d] = l.strides[k][d];
  return l;
}

template <class To, class T0>
void launch_ew(EwOp op, const std::vector<EwOperand>& in, void* out_ptr,
               const std::vector<int64_t>& out_shape, cudaStream_t s) {
  int64_t n = 1;
  for (int64_t e : out_shape) n *= e;
  bool same = std::all_of(in.begin(), in.end(), [&](const EwOperand& o) {
    int64_t m = 1;
    for (int64_t e : o.shape) m *= e;
    return m == n;
  });
  const T0* a = static_cast<const T0*>(in[0].data);
  const To* b = in.size() > 1 ? static_cast<const To*>(in[1].data) : nullptr;
  const To* c = in.size() > 2 ? static_cast<const To*>(in[2].data) : nullptr;
  To* out = static_cast<To*>(out_ptr);
  int n_in = static_cast<int>(in.size());
  constexpr int V = 16 / sizeof(To);
  bool all_aligned = aligned16(out);
  for (const auto& o : in) all_aligned = all_aligned && aligned16(o.data);
  constexpr bool one_type = std::is_same_v<To, T0>;
  if (same) {
    if constexpr (one_type) {
      if (all_aligned && n % V == 0) {
        dispatch_op(op, [&](auto o) {
          ew_vector<decltype(o)::value, To>
              <<<blocks_for(n / V, kThreads, 132 * 16), kThreads, 0, s>>>(n_in, a, b, c, out,
                                                                          n / V);
        });
        return;
      }
    }
    ew_contiguous<To, T0>
        <<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(op, n_in, a, b, c, out, n);
    return;
  }
  BroadcastLayout layout = broadcast_layout(in, out_shape);
  const std::vector<int64_t>& extent = layout.extent;
  const std::vector<std::vector<int64_t>>& strides = layout.strides;
  Strides& st = layout.st;
  if constexpr (one_type) {
    size_t last = extent.size() - 1;
    unsigned mask = 0;
    bool vectorizable =
        all_aligned && n < (int64_t{1} << 31) && vector_plan(extent, strides, n_in, V, mask);
    RowsPlan rows;
    if (!vectorizable && all_aligned && n % V == 0 && n < (int64_t{1} << 31))
      rows = rows_plan(extent, strides, n_in);
    if (rows.ok) {
      auto n_vec = static_cast<uint32_t>(n / V);
      dispatch_op(op, [&](auto o) {
        ew_rows_vec<decltype(o)::value, To>
            <<<blocks_for(n_vec, kThreads, 132 * 16), kThreads, 0, s>>>(
                n_in, a, b, c, out, n_vec, static_cast<uint32_t>(rows.cols),
                static_cast<uint32_t>(rows.mids), rows.st, rows.mask);
      });
      return;
    }
    if (vectorizable) {
      Dims dims = make_dims(extent);
      dims.extent[last] /= V;
      for (int k = 0; k < 3; ++k) st.s[k][last] *= V;
      auto n_vec = static_cast<uint32_t>(n / V);
      dispatch_op(op, [&](auto o) {
        ew_broadcast_vec<decltype(o)::value, To, uint32_t>
            <<<blocks_for(n_vec, kThreads, 132 * 16), kThreads, 0, s>>>(n_in, a, b, c, out, n_vec,
                                                                        dims, st, mask);
      });
      return;
    }
  }
  Dims dims = make_dims(extent);
  if (n < (int64_t{1} << 31))
    ew_broadcast<To, T0, uint32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
        op, n_in, a, b, c, out, static_cast<uint32_t>(n), dims, st);
  else
    ew_broadcast<To, T0, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
        op, n_in, a, b, c, out, n, dims, st);
}

template <class T>
__global__ void swiglu_kernel(const T* __restrict__ g, const T* __restrict__ u, T* __restrict__ o,
                              int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x = to_f(g[i]);
    o[i] = from_f<T>(__fdividef(x, 1.f + __expf(-x)) * to_f(u[i]));
  }
}

}  // namespace

void elementwise(EwOp op, const std::vector<EwOperand>& in, void* out, DType out_dtype,
                 const std::vector<int64_t>& out_shape, cudaStream_t s) {
  if (in.empty() || in.size() > 3) throw CudaError("element-wise takes 1 to 3 inputs");
  if (op == EwOp::cast &&
      out_dtype == DType::f8e4m3fn) {  // an activation quantized for an fp8 GEMM
    dispatch_float(in[0].dtype, [&](auto t0) {
      launch_ew<__nv_fp8_e4m3, decltype(t0)>(op, in, out, out_shape, s);
    });
    ROOFLENS_CUDA_CHECK(cudaGetLastError());
    return;
  }
  dispatch_float(out_dtype, [&](auto to) {
    using To = decltype(to);
    if (op == EwOp::where)
      launch_ew<To, uint8_t>(op, in, out, out_shape, s);
    else if (op == EwOp::cast)
      dispatch_float(in[0].dtype,
                     [&](auto t0) { launch_ew<To, decltype(t0)>(op, in, out, out_shape, s); });
    else
      launch_ew<To, To>(op, in, out, out_shape, s);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void swiglu(const void* g, const void* u, void* o, DType d, int64_t n, cudaStream_t s) {
  dispatch_float(d, [&](auto t) {
    using T = decltype(t);
    swiglu_kernel<<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
        static_cast<const T*>(g), static_cast<const T*>(u), static_cast<T*>(o), n);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
