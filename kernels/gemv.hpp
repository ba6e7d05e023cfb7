#pragma once
// The decode-step GEMM: y[m, n] = x[m, k] . W[n, k]^T (+ bias[n]) for a handful of rows m, with
// W in nn.Linear's [n, k] layout. Such a GEMM only streams W, so deployments run a GEMV-style
// kernel for it (1 to 8 warps per output column, each streaming a slice of the row in 16-byte
// loads, all in flight at once) rather than a tiled GEMM.
#include <cuda_runtime.h>

#include <cstdint>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens::kernels {

// Whether gemv() takes this problem: fp32/fp16/bf16, m <= kGemvMaxRows, k a whole number of
// 16-byte vectors, 16-byte aligned operands.
bool gemv_supported(DType d, int64_t m, int64_t k, const void* x, const void* w);
// warps_per_column: 1, 2, 4 or 8; 0 picks (the benchmark sweeps it).
void gemv(const void* x, const void* w, const void* bias, void* y, DType d, int64_t m, int64_t n,
          int64_t k, cudaStream_t s, int warps_per_column = 0);

}  // namespace rooflens::kernels
