// Decode attention's split over the GPU (decode_grid.hpp).
#include "kernels/decode_grid.hpp"

#include <algorithm>
#include <cmath>

#include "replay/ops.hpp"

namespace rooflens::kernels {
namespace decode {

int64_t first_visible_key(const AttentionDims& d) {
  return d.window > 0 && d.window < d.kv_len ? d.kv_len - d.window : 0;
}

AttentionDims visible_keys(AttentionDims d) {
  d.kv_len -= first_visible_key(d);
  return d;
}

bool group_kernel_takes(const AttentionDims& d, bool separate_v) {
  return replay::decode_group_shape(d, separate_v);
}

namespace {

// The keys split into g.splits slices of whole steps of `step` keys; slices that would be empty
// after the rounding are dropped.
void even_slices(DecodeGrid& g, int64_t keys, int64_t step) {
  g.chunk = (keys + g.splits - 1) / g.splits;
  g.chunk = (g.chunk + step - 1) / step * step;
  g.splits = (keys + g.chunk - 1) / g.chunk;
}

}  // namespace

DecodeGrid wide_grid(const AttentionDims& dims, int sm_count) {
  const AttentionDims d = visible_keys(dims);
  DecodeGrid g;
  int64_t G = d.q_heads / d.kv_heads;
  g.groups = (G + kHeadsPerBlock - 1) / kHeadsPerBlock;
  int64_t base = d.batch * d.kv_heads * g.groups;
  // Enough blocks for ~16 per SM: each works through its keys serially, so the chip needs many
  // of them in flight to keep HBM busy (flash-decoding's split-KV).
  int64_t want = std::max<int64_t>(1, (16 * sm_count + base - 1) / base);
  g.splits = std::clamp<int64_t>(want, 1,
                                 std::max<int64_t>(1, (d.kv_len + kDecodeKeys - 1) / kDecodeKeys));
  even_slices(g, d.kv_len, kDecodeKeys);
  return g;
}

// About eight blocks per SM (two waves at the kernel's occupancy) of 64 keys or more: short
// slices, so each warp has all its loads in flight at once rather than walking the cache serially.
DecodeGrid group_grid(const AttentionDims& dims, int sm_count) {
  const AttentionDims d = visible_keys(dims);
  DecodeGrid g;
  g.groups = 1;
  int64_t base = d.batch * d.kv_heads;
  int64_t step =
      64;  // slice granularity: a multiple of every block step (4 warps x at most 16 keys)
  int64_t want = std::max<int64_t>(1, (8 * sm_count + base - 1) / base);
  g.splits = std::clamp<int64_t>(std::min(want, kMaxGroupSplits), 1,
                                 std::max<int64_t>(1, d.kv_len / step));
  even_slices(g, d.kv_len, step);
  return g;
}

// Two blocks an SM (the ring's shared memory): the fewest splits whose last wave is at least 85%
// as full as the fullest choice's (FlashAttention's rule for its split-KV decode), in whole tiles.
DecodeGrid mma_grid(const AttentionDims& dims, int sm_count) {
  const AttentionDims d = visible_keys(dims);
  DecodeGrid g;
  g.groups = 1;
  int64_t base = d.batch * d.kv_heads, slots = 2 * static_cast<int64_t>(sm_count);
  int64_t most = std::clamp<int64_t>(d.kv_len / (2 * kMmaTileKeys), 1, kMaxGroupSplits);
  auto fill = [&](int64_t splits) {
    double waves = static_cast<double>(base * splits) / static_cast<double>(slots);
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (int64_t sp = 1; sp <= most; ++sp) best = std::max(best, fill(sp));
  g.splits = 1;
  while (g.splits < most && fill(g.splits) < 0.85 * best) ++g.splits;
  even_slices(g, d.kv_len, kMmaTileKeys);
  return g;
}

// Partials first, then one completion counter per (batch, KV head).
int64_t partial_bytes(const AttentionDims& d, int sm_count) {
  // Sized for any kernel: the caller may pass V or not, and pick either group kernel.
  int64_t splits = std::max({group_grid(d, sm_count).splits, wide_grid(d, sm_count).splits,
                             mma_grid(d, sm_count).splits});
  return d.batch * d.q_heads * splits * (d.head_dim_v + 2) * static_cast<int64_t>(sizeof(float));
}

}  // namespace decode

int64_t decode_workspace_bytes(const AttentionDims& d, int sm_count) {
  return decode::partial_bytes(d, sm_count) +
         d.batch * d.kv_heads * static_cast<int64_t>(sizeof(unsigned));
}

bool decode_kernel_takes(DecodeKernel kernel, const AttentionDims& d, bool separate_v) {
  return kernel == DecodeKernel::cuda_cores || decode::group_kernel_takes(d, separate_v);
}

}  // namespace rooflens::kernels
