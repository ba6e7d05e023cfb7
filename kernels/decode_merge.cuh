// What the split-KV decode kernels for groups of up to 8 heads share (decode_attention.cu,
// decode_attention_fp8.cu): the tensor-core kernels' softmax step, and their end: a block's warps
// merged into its split's partial, and the splits merged by the last block to finish.
#pragma once
#include <cfloat>

#include "kernels/decode_grid.hpp"
#include "kernels/dtypes.cuh"

namespace rooflens::kernels::decode {

// The tensor-core kernels' tile rows 8-15 stay empty: the merge reads rows < G only.
constexpr int kMmaMaxG = 8;

// Each warp of the block has left its running max, sum and unnormalized output per head in red_*:
// merged into this split's partial. The last block of this (batch, KV head) to finish then merges
// the splits: no combine launch.
// One 16-key step of the tensor-core kernels' online softmax, in base 2: the scores of this lane's
// keys first + {0, 1} and first + {8, 9} (sc[j][e], rows g; rows g + 8 are empty) masked from
// `end` on and scaled; the running max m and sum l updated; sc left as probabilities. Returns the
// factor the output accumulators are rescaled by.
__device__ __forceinline__ float mma_softmax_step(float (&sc)[2][4], float& m, float& l,
                                                  int64_t first, int64_t end, float scale_log2) {
  float mx = -FLT_MAX;
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float x = first + j * 8 + e < end ? sc[j][e] * scale_log2 : -FLT_MAX;
      sc[j][e] = x;
      mx = fmaxf(mx, x);
    }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  float n = fmaxf(m, mx);
  float base = n == -FLT_MAX ? 0.f : n;  // no visible key yet: exp2 gives 0, not NaN
  float alpha = exp2f(m - base);
  m = n;
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    sc[j][0] = exp2f(sc[j][0] - base), sc[j][1] = exp2f(sc[j][1] - base);
    sum += sc[j][0] + sc[j][1];
  }
  l = l * alpha + sum;
  return alpha;
}

template <class T, int D, int MaxG>
__device__ __forceinline__ void merge_warps_and_splits(
    const float (&red_o)[kGroupWarps][MaxG][D], const float (&red_m)[kGroupWarps][MaxG],
    const float (&red_l)[kGroupWarps][MaxG], float* __restrict__ part, unsigned* __restrict__ done,
    T* __restrict__ out, int b, int hq, int kvh, int G, int64_t split, int64_t splits) {
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    int g = i / D, e = i % D;
    float mx = -FLT_MAX;
    for (int w = 0; w < kGroupWarps; ++w) mx = fmaxf(mx, red_m[w][g]);
    float num = 0.f, den = 0.f;
    for (int w = 0; w < kGroupWarps; ++w) {
      float f = __expf(red_m[w][g] - mx);
      num += f * red_o[w][g][e];
      den += f * red_l[w][g];
    }
    float* dst = part + ((static_cast<int64_t>(b) * hq + kvh * G + g) * splits + split) * (D + 2);
    if (e == 0) dst[0] = mx, dst[1] = den;
    dst[2 + e] = num;
  }
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    last = atomicAdd(&done[blockIdx.y], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  // One warp per head computes each split's weight exp(m_s - max) / sum once; then every output
  // element is one coalesced pass over the splits' partial outputs.
  __shared__ float weight[MaxG][kMaxGroupSplits];
  for (int g = warp; g < G; g += kGroupWarps) {
    const float* p = part + (static_cast<int64_t>(b) * hq + kvh * G + g) * splits * (D + 2);
    float mx = -FLT_MAX;
    for (int64_t sp = lane; sp < splits; sp += 32) mx = fmaxf(mx, __ldcg(p + sp * (D + 2)));
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    float den = 0.f;
    for (int64_t sp = lane; sp < splits; sp += 32) {
      float f = __expf(__ldcg(p + sp * (D + 2)) - mx);
      weight[g][sp] = f;
      den += f * __ldcg(p + sp * (D + 2) + 1);
    }
    for (int off = 16; off > 0; off >>= 1) den += __shfl_xor_sync(0xffffffffu, den, off);
    float inv = den > 0 ? 1.f / den : 0.f;
    __syncwarp();
    for (int64_t sp = lane; sp < splits; sp += 32) weight[g][sp] *= inv;
  }
  __syncthreads();
  // Each thread sums its output elements over the splits side by side, so that every element's
  // loads are in flight together (one element at a time left this merge a serial walk through L2:
  // 8 heads x 64 splits took ~10 us at the end of a 1-KV-head decode).
  constexpr int kThreads = kGroupWarps * 32, kPer = (MaxG * D + kThreads - 1) / kThreads;
  const float* src = part + (static_cast<int64_t>(b) * hq + kvh * G) * splits * (D + 2) + 2;
  float num[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) num[j] = 0.f;
#pragma unroll 4
  for (int64_t sp = 0; sp < splits; ++sp)
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      int i = threadIdx.x + j * kThreads, g = i / D;
      if (i < G * D) num[j] += weight[g][sp] * __ldcg(src + (g * splits + sp) * (D + 2) + i % D);
    }
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    int i = threadIdx.x + j * kThreads;
    if (i < G * D) out[(static_cast<int64_t>(b) * hq + kvh * G) * D + i] = from_f<T>(num[j]);
  }
  if (threadIdx.x == 0) done[blockIdx.y] = 0;  // ready for the next launch
}

}  // namespace rooflens::kernels::decode
