#pragma once
// How a decode step's attention is split over the GPU (host code): the keys a sliding window
// leaves visible, which kernel takes a shape, how many slices of the cache each (split-KV), and
// the workspace their partials need. The kernels are in decode_attention.cu.
#include <cstdint>

#include "kernels/attention.hpp"

namespace rooflens::kernels::decode {

// Groups of up to 8 heads: a block of 4 warps, the last block merging at most 64 slices; the
// tensor-core kernel takes 16 keys a warp per tile.
constexpr int kGroupWarps = 4;
constexpr int64_t kMaxGroupSplits = 64;
constexpr int kMmaTileKeys = 16 * kGroupWarps;
// Wide groups and MLA: keys per shared-memory tile (one per lane), one query head per warp.
constexpr int kDecodeKeys = 32;
constexpr int kHeadsPerBlock = 4;

// The one query of a decode step sits after the whole cache: a sliding window of W keys leaves it
// the last W, so the kernels start there and split only what it sees.
int64_t first_visible_key(const AttentionDims& d);
AttentionDims visible_keys(AttentionDims d);

// Groups of 1-8 query heads per KV head, head dim 64 or 128, V apart from K.
bool group_kernel_takes(const AttentionDims& d, bool separate_v);

struct DecodeGrid {
  int64_t groups;  // blocks per KV head: ceil(G / 4)
  int64_t splits;  // the key range split this many ways
  int64_t chunk;   // keys per split
};
DecodeGrid wide_grid(const AttentionDims& dims, int sm_count);
DecodeGrid group_grid(const AttentionDims& dims, int sm_count);
DecodeGrid mma_grid(const AttentionDims& dims, int sm_count);

// The partials' bytes (max, sum and output per head and slice), for whichever kernel runs.
int64_t partial_bytes(const AttentionDims& d, int sm_count);

}  // namespace rooflens::kernels::decode
