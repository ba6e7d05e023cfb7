#pragma once
// Float storage types the replay kernels are instantiated for, and their conversions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "analyzer/core/dtype.hpp"
#include "kernels/cuda_check.hpp"

namespace rooflens::kernels {

__device__ __forceinline__ float to_f(float x) {
  return x;
}
__device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f(__nv_fp8_e4m3 x) {
  return static_cast<float>(x);
}
__device__ __forceinline__ float to_f(uint8_t x) {
  return x ? 1.f : 0.f;
}  // bool

template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_f<__nv_fp8_e4m3>(float x) {
  return __nv_fp8_e4m3(x);
}

// Calls f(T{}) with T the storage type of a float dtype the replay supports.
template <class F>
void dispatch_float(DType d, F&& f) {
  switch (d) {
    case DType::f32:
      f(float{});
      return;
    case DType::f16:
      f(__half{});
      return;
    case DType::bf16:
      f(__nv_bfloat16{});
      return;
    default:
      throw CudaError("replay kernel instantiated for an unsupported dtype");
  }
}

// The same for the 16-bit types only (the tensor-core attention kernels).
template <class F>
void dispatch_half(DType d, F&& f) {
  switch (d) {
    case DType::f16:
      f(__half{});
      return;
    case DType::bf16:
      f(__nv_bfloat16{});
      return;
    default:
      throw CudaError("kernel takes fp16 or bf16 only");
  }
}

inline unsigned blocks_for(int64_t n, int threads, int64_t cap = 1 << 20) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : b > cap ? cap : b);
}

}  // namespace rooflens::kernels
