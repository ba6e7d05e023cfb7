#pragma once
// Index walks shared by the broadcast element-wise and strided-copy kernels, and the 16-byte
// vector view the bandwidth-bound kernels load and store through.
#include <cstdint>
#include <vector>

#include "kernels/dtypes.cuh"
#include "replay/ops.hpp"

namespace rooflens::kernels {

constexpr int kMaxRank = static_cast<int>(replay::kMaxReplayRank);

struct Strides {
  int64_t s[3][kMaxRank];
};
struct Dims {
  int rank;
  int64_t extent[kMaxRank];
};

// Offsets into K operands of linear index i of an iteration space walked with per-operand strides.
// I: 32-bit when every offset fits (64-bit division is many times slower).
template <int K, class I>
__device__ __forceinline__ void strided_offsets(I i, const Dims& dims, const Strides& st,
                                                I (&off)[K]) {
  for (int k = 0; k < K; ++k) off[k] = 0;
    // Fully unrolled so every dims/strides index is a constant: a runtime index into a kernel
    // parameter makes the compiler copy the struct to per-thread local memory (a 56-byte stack
    // frame per thread, written and read back for every element).
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= dims.rank) continue;
    I e = static_cast<I>(dims.extent[d]), idx = i % e;
    i /= e;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += idx * static_cast<I>(st.s[k][d]);
  }
}

// Merges adjacent dims that every operand walks contiguously, so a bias add over (B, S, H) is
// indexed as (B*S, H): fewer divisions per element.
inline void collapse(std::vector<int64_t>& extent, std::vector<std::vector<int64_t>>& strides) {
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

inline Dims make_dims(const std::vector<int64_t>& extent) {
  Dims d{static_cast<int>(extent.size()), {}};
  for (size_t i = 0; i < extent.size(); ++i) d.extent[i] = extent[i];
  return d;
}

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// 16 bytes of T as one load or store.
template <class T>
struct Vec {
  static constexpr int n = 16 / sizeof(T);
  uint4 raw{};
  __device__ T& operator[](int j) { return reinterpret_cast<T*>(&raw)[j]; }
  __device__ T operator[](int j) const { return reinterpret_cast<const T*>(&raw)[j]; }
  __device__ static Vec load(const T* p) {
    Vec v;
    v.raw = *reinterpret_cast<const uint4*>(p);
    return v;
  }
  __device__ static Vec splat(T x) {
    Vec v;
#pragma unroll
    for (int j = 0; j < n; ++j) v[j] = x;
    return v;
  }
  __device__ void store(T* p) const {
    *reinterpret_cast<uint4*>(p) = raw;
  }
};

}  // namespace rooflens::kernels
