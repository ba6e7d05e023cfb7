// cp.async: 16-byte copies from global to shared memory that run behind the kernel's math, in
// commit groups a kernel waits on by count (a ring of tiles in flight). sm_80 and newer.
#pragma once
#include <cstdint>

namespace rooflens::kernels {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, zero-filled when !valid (then nothing is read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Rows [t0, t0 + rows) of a [keys, D] K and V cache into shared tiles of `ld` elements a row,
// 16 bytes a copy spread over the block's threads; rows at or past `end` are zero-filled.
template <class T, int D>
__device__ __forceinline__ void cp_async_kv_rows(T* k_tile, T* v_tile, int ld, const T* k,
                                                 const T* v, int64_t t0, int rows, int64_t end) {
  constexpr int kPerCopy = 16 / sizeof(T), kCopiesPerRow = D / kPerCopy;
  for (int i = threadIdx.x; i < rows * kCopiesPerRow; i += blockDim.x) {
    int r = i / kCopiesPerRow, c = (i % kCopiesPerRow) * kPerCopy;
    bool valid = t0 + r < end;
    cp_async16(k_tile + r * ld + c, valid ? k + (t0 + r) * D + c : k, valid);
    cp_async16(v_tile + r * ld + c, valid ? v + (t0 + r) * D + c : v, valid);
  }
}

}  // namespace rooflens::kernels
