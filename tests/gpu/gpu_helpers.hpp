#pragma once
// Host-side helpers for the GPU tests: device buffers filled on the GPU, read back as floats.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/formulas.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/memory_kernels.hpp"

namespace gpu_test {

using rooflens::AttentionDims;
using rooflens::DType;
using rooflens::kernels::DeviceBuffer;

// A file of the checkout the tests run from: the working directory or one above it (the GPU
// machine runs the tests from a copy of the checkout at another path than the build machine's),
// else the checkout they were built from.
inline std::string checkout_file(const std::string& relative) {
  namespace fs = std::filesystem;
  for (fs::path dir = fs::current_path();; dir = dir.parent_path()) {
    if (fs::exists(dir / relative)) return (dir / relative).string();
    if (dir == dir.parent_path()) break;
  }
  return std::string(ROOFLENS_SOURCE_DIR) + "/" + relative;
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = exp == 0    ? std::ldexp(static_cast<float>(man), -24)
            : exp == 31 ? INFINITY
                        : std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}
inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// f rounded to the nearest bf16 (ties to even), as the GPU's conversions do; finite f only.
inline float round_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float e4m3_to_float(uint8_t x) {
  uint32_t sign = x >> 7, exp = (x >> 3) & 0xf, man = x & 7;
  float v = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                     : std::ldexp(static_cast<float>(man | 8), static_cast<int>(exp) - 10);
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
        case DType::f32:
          std::memcpy(&f[i], p + 4 * i, 4);
          break;
        case DType::f16: {
          uint16_t h;
          std::memcpy(&h, p + 2 * i, 2);
          f[i] = half_to_float(h);
          break;
        }
        case DType::bf16: {
          uint16_t h;
          std::memcpy(&h, p + 2 * i, 2);
          f[i] = bf16_to_float(h);
          break;
        }
        case DType::f8e4m3fn:
          f[i] = e4m3_to_float(p[i]);
          break;
        case DType::i64: {
          int64_t v;
          std::memcpy(&v, p + 8 * i, 8);
          f[i] = static_cast<float>(v);
          break;
        }
        case DType::i32: {
          int32_t v;
          std::memcpy(&v, p + 4 * i, 4);
          f[i] = static_cast<float>(v);
          break;
        }
        default:
          f[i] = p[i];
          break;
      }
    }
    return f;
  }
};

// Largest |a - b| relative to max(|b|, floor).
inline double max_rel_error(const std::vector<float>& got, const std::vector<float>& want,
                            double floor = 1e-2) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) /
                                std::max<double>(std::abs(want[i]), floor));
  return worst;
}

// Host attention over q [B,Sq,Hq,D], k/v [B,Hkv,Skv,D(v)] (v = nullptr: the first dv of k);
// causal with the queries as the last Sq keys, a sliding window under causal.
inline std::vector<float> host_attention(const std::vector<float>& q, const std::vector<float>& k,
                                         const std::vector<float>* v, const AttentionDims& d) {
  std::vector<float> o(static_cast<size_t>(d.batch * d.q_len * d.q_heads * d.head_dim_v));
  int64_t g = d.q_heads / d.kv_heads, off = d.kv_len - d.q_len;
  double scale = 1 / std::sqrt(static_cast<double>(d.head_dim_qk));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.q_heads; ++h)
      for (int64_t i = 0; i < d.q_len; ++i) {
        int64_t kvh = h / g;
        std::vector<double> s(static_cast<size_t>(d.kv_len), -1e300);
        double m = -1e300;
        for (int64_t j = 0; j < d.kv_len; ++j) {
          if (d.causal && (j > i + off || (d.window > 0 && j <= i + off - d.window))) continue;
          double acc = 0;
          for (int64_t c = 0; c < d.head_dim_qk; ++c)
            acc += q[((b * d.q_len + i) * d.q_heads + h) * d.head_dim_qk + c] *
                   k[((b * d.kv_heads + kvh) * d.kv_len + j) * d.head_dim_qk + c];
          s[j] = acc * scale;
          m = std::max(m, s[j]);
        }
        double sum = 0;
        for (auto& x : s) sum += x > -1e299 ? (x = std::exp(x - m)) : (x = 0);
        for (int64_t c = 0; c < d.head_dim_v; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < d.kv_len; ++j) {
            float vv = v ? (*v)[((b * d.kv_heads + kvh) * d.kv_len + j) * d.head_dim_v + c]
                         : k[((b * d.kv_heads + kvh) * d.kv_len + j) * d.head_dim_qk + c];
            acc += s[j] * vv;
          }
          o[((b * d.q_len + i) * d.q_heads + h) * d.head_dim_v + c] = static_cast<float>(acc / sum);
        }
      }
  return o;
}

}  // namespace gpu_test
