#pragma once
// Host-side helpers for the GPU tests: device buffers filled on the GPU, read back as floats.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "analyzer/dtype.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/memory_kernels.hpp"

namespace gpu_test {

using rooflens::DType;
using rooflens::kernels::DeviceBuffer;

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = exp == 0 ? std::ldexp(static_cast<float>(man), -24) : exp == 31 ? INFINITY : std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}
inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float e4m3_to_float(uint8_t x) {
  uint32_t sign = x >> 7, exp = (x >> 3) & 0xf, man = x & 7;
  float v = exp == 0 ? std::ldexp(static_cast<float>(man), -9) : std::ldexp(static_cast<float>(man | 8), static_cast<int>(exp) - 10);
  return sign ? -v : v;
}

// Device tensor of `n` elements filled by the replay's own fill (uniform in [-0.5, 0.5]).
struct Tensor {
  DType dtype;
  int64_t n;
  DeviceBuffer buf;
  Tensor(DType d, int64_t count, uint32_t seed, int64_t bound = 0)
      : dtype(d), n(count), buf(static_cast<size_t>(rooflens::storage_bytes(d, count) + 16)) {
    rooflens::kernels::fill(buf.get(), d, count, bound, seed, nullptr);
    ROOFLENS_CUDA_CHECK(cudaDeviceSynchronize());
  }
  void* get() const { return buf.get(); }
  std::vector<float> host() const {
    std::vector<uint8_t> raw(static_cast<size_t>(rooflens::storage_bytes(dtype, n)));
    ROOFLENS_CUDA_CHECK(cudaDeviceSynchronize());
    ROOFLENS_CUDA_CHECK(cudaMemcpy(raw.data(), buf.get(), raw.size(), cudaMemcpyDeviceToHost));
    std::vector<float> f(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p = raw.data();
      switch (dtype) {
        case DType::f32: std::memcpy(&f[i], p + 4 * i, 4); break;
        case DType::f16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); f[i] = half_to_float(h); break; }
        case DType::bf16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); f[i] = bf16_to_float(h); break; }
        case DType::f8e4m3fn: f[i] = e4m3_to_float(p[i]); break;
        case DType::i64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); f[i] = static_cast<float>(v); break; }
        case DType::i32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); f[i] = static_cast<float>(v); break; }
        default: f[i] = p[i]; break;
      }
    }
    return f;
  }
};

// Largest |a - b| relative to max(|b|, floor).
inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& want, double floor = 1e-2) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / std::max<double>(std::abs(want[i]), floor));
  return worst;
}

}  // namespace gpu_test
