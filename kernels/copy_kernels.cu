// Data-movement replay kernels: strided copies (Transpose, Concat, Split, Slice, Expand, the MoE
// dispatch) and Gather. Copies are widened to 16-byte elements where the layout allows, and a
// copy that moves the contiguous dim (a transpose) goes through shared-memory tiles so that both
// the reads and the writes are coalesced.
#include <algorithm>

#include "kernels/memory_kernels.hpp"
#include "kernels/strided.cuh"

namespace rooflens::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 32, kTileRows = 8;  // a 32 x 32 tile moved by 32 x 8 threads

template <class E, class I>
__global__ void copy_kernel(const E* __restrict__ src, E* __restrict__ dst, I n, Dims dims,
                            Strides st, int64_t src_off, int64_t dst_off) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I off[2];
    strided_offsets(i, dims, st, off);
    dst[dst_off + off[1]] = src[src_off + off[0]];
  }
}

// Dim a is contiguous in the source, dim b in the destination; the other dims (`batch`) are
// walked per block. Reads run along a, writes along b, through a padded shared tile.
struct TileCopy {
  int64_t len_a, len_b, tiles_a, tiles_b;
  int64_t src_stride_b, dst_stride_a;  // the strides that are not 1
  int64_t batch, src_off, dst_off;
};

template <class E>
__global__ void __launch_bounds__(kTile* kTileRows)
    tiled_copy_kernel(const E* __restrict__ src, E* __restrict__ dst, TileCopy t, Dims batch_dims,
                      Strides batch_st) {
  __shared__ E tile[kTile][kTile + 1];
  int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  int64_t tiles = t.tiles_a * t.tiles_b;
  for (int64_t job = blockIdx.x; job < tiles * t.batch; job += gridDim.x) {
    int64_t bt = job / tiles, tile_id = job % tiles;
    int64_t a0 = (tile_id % t.tiles_a) * kTile, b0 = (tile_id / t.tiles_a) * kTile;
    int64_t off[2];
    strided_offsets(bt, batch_dims, batch_st, off);
    const E* s = src + t.src_off + off[0];
    E* d = dst + t.dst_off + off[1];
    __syncthreads();  // the previous job's tile has been written out
    for (int r = ty; r < kTile; r += kTileRows)
      if (a0 + tx < t.len_a && b0 + r < t.len_b)
        tile[r][tx] = s[(b0 + r) * t.src_stride_b + a0 + tx];
    __syncthreads();
    for (int r = ty; r < kTile; r += kTileRows)
      if (b0 + tx < t.len_b && a0 + r < t.len_a)
        d[(a0 + r) * t.dst_stride_a + b0 + tx] = tile[tx][r];
  }
}

// N: the index type of the output walk, 32-bit when it fits (a 64-bit division is a called
// subroutine, slow and, with L2 flushed, fetched from HBM).
template <class E, class I, class N>
__global__ void gather_kernel(const E* __restrict__ data, const I* __restrict__ idx,
                              E* __restrict__ out, N outer, int64_t axis_len, N n_idx, N inner) {
  N n = outer * n_idx * inner;
  for (N i = blockIdx.x * N(blockDim.x) + threadIdx.x; i < n; i += N(gridDim.x) * blockDim.x) {
    N q = i / inner, in_i = i - q * inner, o = q / n_idx, j = q - o * n_idx;
    int64_t row = static_cast<int64_t>(idx[j]);
    if (row < 0) row += axis_len;
    out[i] = data[(static_cast<int64_t>(o) * axis_len + row) * inner + in_i];
  }
}

// Concat and Split in one launch: the whole tensor is [outer, columns], part j owns columns
// [start[j], start[j + 1]) and is itself [outer, width_j]. Each thread finds its part by
// comparing against the boundaries in registers (unrolled, so no table goes to local memory).
constexpr int kMaxParts = 8;
template <class E>
struct Parts {
  E* ptr[kMaxParts];
  int64_t start[kMaxParts + 1];  // relative to the group's first column
};

template <class E, class I>
__global__ void concat_split_kernel(E* __restrict__ whole, Parts<E> parts, int n_parts,
                                    I group_cols, I whole_cols, I col_base, I n, bool split) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I o = i / group_cols, q = i - o * group_cols;
    E* part = parts.ptr[0];
    I lo = 0, width = static_cast<I>(parts.start[1]);
#pragma unroll
    for (int j = 1; j < kMaxParts; ++j)
      if (j < n_parts && q >= static_cast<I>(parts.start[j])) {
        part = parts.ptr[j];
        lo = static_cast<I>(parts.start[j]);
        width = static_cast<I>(parts.start[j + 1]) - lo;
      }
    E* w = whole + (o * whole_cols + col_base + q);
    E* p = part + (o * width + (q - lo));
    if (split)
      *p = *w;
    else
      *w = *p;
  }
}

template <class F>
void dispatch_bytes(int elem_bytes, F&& f) {
  switch (elem_bytes) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
    case 16:
      f(uint4{});
      return;
    default:
      throw CudaError("copy of an unsupported element size");
  }
}

// A layout whose innermost dim is contiguous on both sides, with every other stride and both
// offsets whole multiples of 16 bytes, is copied as 16-byte elements.
void widen_to_16_bytes(int& elem_bytes, std::vector<int64_t>& extent,
                       std::vector<std::vector<int64_t>>& st, int64_t& src_off, int64_t& dst_off,
                       const void* src, const void* dst) {
  if (elem_bytes >= 16 || !aligned16(src) || !aligned16(dst) || extent.empty()) return;
  int64_t w = 16 / elem_bytes;
  size_t last = extent.size() - 1;
  if (st[0][last] != 1 || st[1][last] != 1 || extent[last] % w || src_off % w || dst_off % w)
    return;
  for (size_t d = 0; d < last; ++d)
    if (st[0][d] % w || st[1][d] % w) return;
  extent[last] /= w;
  for (auto& s : st)
    for (size_t d = 0; d < last; ++d) s[d] /= w;
  src_off /= w;
  dst_off /= w;
  elem_bytes = 16;
}

// The dims other than a and b, as a walk for the tiled kernel.
void batch_walk(const std::vector<int64_t>& extent, const std::vector<std::vector<int64_t>>& st,
                size_t a, size_t b, Dims& dims, Strides& strides, int64_t& count) {
  dims.rank = 0;
  count = 1;
  for (size_t d = 0; d < extent.size(); ++d) {
    if (d == a || d == b) continue;
    dims.extent[dims.rank] = extent[d];
    strides.s[0][dims.rank] = st[0][d];
    strides.s[1][dims.rank] = st[1][d];
    ++dims.rank;
    count *= extent[d];
  }
}

}  // namespace

void strided_copy(const void* src, void* dst, int elem_bytes, const std::vector<int64_t>& extent_in,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides,
                  int64_t src_offset, int64_t dst_offset, cudaStream_t s) {
  std::vector<int64_t> extent = extent_in;
  std::vector<std::vector<int64_t>> st{src_strides, dst_strides};
  collapse(extent, st);
  if (extent.size() > static_cast<size_t>(kMaxRank)) throw CudaError("copy rank above 6");
  int64_t n = 1;
  for (int64_t e : extent) n *= e;
  if (n == 0) return;
  // A transpose: the source's contiguous dim is not the destination's.
  auto unit = [&](int side) {
    for (size_t d = 0; d < extent.size(); ++d)
      if (st[side][d] == 1 && extent[d] > 1) return d;
    return extent.size();
  };
  size_t a = unit(0), b = unit(1);
  if (a < extent.size() && b < extent.size() && a != b && extent[a] >= kTile / 2 &&
      extent[b] >= kTile / 2) {
    TileCopy t{extent[a],
               extent[b],
               (extent[a] + kTile - 1) / kTile,
               (extent[b] + kTile - 1) / kTile,
               st[0][b],
               st[1][a],
               1,
               src_offset,
               dst_offset};
    Dims dims{};
    Strides strides{};
    batch_walk(extent, st, a, b, dims, strides, t.batch);
    int64_t jobs = t.tiles_a * t.tiles_b * t.batch;
    dispatch_bytes(elem_bytes, [&](auto e) {
      using E = decltype(e);
      tiled_copy_kernel<E><<<blocks_for(jobs, 1, 132 * 16), kTile * kTileRows, 0, s>>>(
          static_cast<const E*>(src), static_cast<E*>(dst), t, dims, strides);
    });
    ROOFLENS_CUDA_CHECK(cudaGetLastError());
    return;
  }
  widen_to_16_bytes(elem_bytes, extent, st, src_offset, dst_offset, src, dst);
  n = 1;
  for (int64_t e : extent) n *= e;
  Dims dims = make_dims(extent);
  Strides strides{};
  for (size_t d = 0; d < extent.size(); ++d) {
    strides.s[0][d] = st[0][d];
    strides.s[1][d] = st[1][d];
  }
  dispatch_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    int64_t reach = std::max(src_offset, dst_offset);
    for (size_t d = 0; d < extent.size(); ++d)
      reach += (extent[d] - 1) * std::max(std::abs(st[0][d]), std::abs(st[1][d]));
    if (n < (int64_t{1} << 31) && reach < (int64_t{1} << 31))
      copy_kernel<E, uint32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(src), static_cast<E*>(dst), static_cast<uint32_t>(n), dims, strides,
          src_offset, dst_offset);
    else
      copy_kernel<E, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(src), static_cast<E*>(dst), n, dims, strides, src_offset,
          dst_offset);
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void concat_split(void* whole, const std::vector<void*>& parts,
                  const std::vector<int64_t>& part_cols, int64_t outer, int elem_bytes, bool split,
                  cudaStream_t s) {
  if (parts.empty() || parts.size() != part_cols.size())
    throw CudaError("concat/split: one width per part");
  int64_t cols = 0;
  for (int64_t c : part_cols) cols += c;
  // 16-byte elements when every part's width and every pointer allows it.
  bool wide = elem_bytes < 16 && aligned16(whole);
  int64_t w = 16 / elem_bytes;
  for (size_t j = 0; j < parts.size() && wide; ++j)
    wide = aligned16(parts[j]) && part_cols[j] % w == 0;
  int64_t scale = wide ? w : 1;
  if (wide) elem_bytes = 16;
  int64_t whole_cols = cols / scale;
  dispatch_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    int64_t base = 0;
    for (size_t first = 0; first < parts.size(); first += kMaxParts) {
      size_t count = std::min<size_t>(kMaxParts, parts.size() - first);
      Parts<E> table{};
      int64_t width = 0;
      for (size_t j = 0; j < count; ++j) {
        table.ptr[j] = static_cast<E*>(parts[first + j]);
        table.start[j] = width;
        width += part_cols[first + j] / scale;
      }
      table.start[count] = width;
      for (size_t j = count + 1; j <= kMaxParts; ++j) table.start[j] = width;
      int64_t n = outer * width;
      if (n > 0) {
        if (outer * whole_cols < (int64_t{1} << 31))
          concat_split_kernel<E, uint32_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
              static_cast<E*>(whole), table, static_cast<int>(count), static_cast<uint32_t>(width),
              static_cast<uint32_t>(whole_cols), static_cast<uint32_t>(base),
              static_cast<uint32_t>(n), split);
        else
          concat_split_kernel<E, int64_t><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
              static_cast<E*>(whole), table, static_cast<int>(count), width, whole_cols, base, n,
              split);
      }
      base += width;
    }
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

void gather(const void* data, const void* indices, DType index_dtype, void* out, int elem_bytes,
            int64_t outer, int64_t axis_len, int64_t n_idx, int64_t inner, cudaStream_t s) {
  // Rows of whole 16-byte vectors (embedding lookups) are moved as vectors.
  if (elem_bytes < 16 && (inner * elem_bytes) % 16 == 0 && aligned16(data) && aligned16(out)) {
    inner = inner * elem_bytes / 16;
    elem_bytes = 16;
  }
  int64_t n = outer * n_idx * inner;
  dispatch_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    auto go = [&](auto index, auto walk) {
      using I = decltype(index);
      using N = decltype(walk);
      gather_kernel<E, I, N><<<blocks_for(n, kThreads, 132 * 32), kThreads, 0, s>>>(
          static_cast<const E*>(data), static_cast<const I*>(indices), static_cast<E*>(out),
          static_cast<N>(outer), axis_len, static_cast<N>(n_idx), static_cast<N>(inner));
    };
    bool narrow = n < (int64_t{1} << 31);
    if (index_dtype == DType::i64)
      narrow ? go(int64_t{}, uint32_t{}) : go(int64_t{}, int64_t{});
    else
      narrow ? go(int32_t{}, uint32_t{}) : go(int32_t{}, int64_t{});
  });
  ROOFLENS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace rooflens::kernels
