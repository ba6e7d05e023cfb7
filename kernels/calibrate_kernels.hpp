#pragma once
// Micro-kernels `rooflens calibrate` times: streaming copies and reads (HBM and L2 bandwidth),
// an empty kernel (launch cost, shortest kernel), an SM clock probe, and a barrier across GPUs.
#include <cuda_runtime.h>

#include <cstdint>

namespace rooflens::kernels {

// dst = src over `bytes` (a multiple of 16), 16-byte accesses, one pass.
void stream_copy(void* dst, const void* src, int64_t bytes, int sm_count, cudaStream_t s);
// Reads `bytes` `passes` times (a working set that stays in L2 when small), writes one word.
void stream_read(const void* src, int64_t bytes, int passes, float* sink, int sm_count,
                 cudaStream_t s);
void empty_kernel(cudaStream_t s);
// Spins for ~`ns` of global time; writes SM cycles and nanoseconds elapsed to out[0..1].
void clock_probe(unsigned long long* out, uint64_t ns, cudaStream_t s);
// Holds a GPU until others (GPUs or host threads) have reached `epoch`: writes it to flags[me],
// then waits until flags[0..waits) all reach it. The flags are host memory mapped into every GPU
// (zeroed at first; the hosts write their own slots), so work queued behind the barrier starts
// on every GPU within a read of host memory. flags[waits] becomes nonzero where a GPU gave up
// after 10 s.
void gpu_barrier(unsigned* flags, int me, int waits, unsigned epoch, cudaStream_t s);

}  // namespace rooflens::kernels
