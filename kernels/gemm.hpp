#pragma once
// GEMMs through cuBLASLt, laid out as a deployment runs them: activations [M, K] row-major
// times weights stored [N, K] (nn.Linear's layout, the "TN" GEMM every dtype including fp8
// supports) or [K, N], strided-batched, optional bias epilogue. cuBLASLt's heuristic offers
// several algorithms per shape; the replay times them and keeps the fastest (select()), so every
// timed launch runs the same kernel.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens::kernels {

struct GemmShape {
  Precision precision = Precision::bf16;  // fp32 (CUDA cores), tf32, bf16, fp16, fp8 (e4m3)
  DType out = DType::bf16;                // fp8 GEMMs write bf16 or fp16
  GemmDims dims;
  bool a_shared = false, b_shared = true;  // operand identical across the batch
  bool bias = false;                       // length-n bias added in the epilogue
  bool b_kn = false;  // B stored [k, n] (ONNX MatMul weights, im2col columns) instead of [n, k]
  int64_t b_batch_stride = 0;  // elements between batches of B when not shared; 0: n * k
  // Row strides and batch strides of A and D in elements; 0: contiguous ([m, k] and [m, n] per
  // batch). The MoE replay reads each expert's rows interleaved from the dispatch buffer.
  int64_t a_row_stride = 0, a_batch_stride = 0, d_row_stride = 0, d_batch_stride = 0;
};

class CublasLt {
 public:
  CublasLt();
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

class Gemm {
 public:
  // Asks the heuristic for up to `max_algorithms`; ReplayUnsupported when it has none.
  Gemm(const CublasLt& lt, const GemmShape& shape, int max_algorithms = 1);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  int algorithm_count() const;
  void select(int algorithm);  // the algorithm run() uses; 0 (the heuristic's first) by default
  int selected() const;
  // "algo 23, tile 128x128, stages 4, split-K 1" of an algorithm.
  std::string algorithm_label(int algorithm) const;
  // a: [batch?, m, k], b: [batch?, n, k] (or [k, n] with b_kn), d: [batch, m, n], bias: [n].
  void run(const void* a, const void* b, void* d, const void* bias, cudaStream_t s) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rooflens::kernels
