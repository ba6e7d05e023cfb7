#pragma once
// Attention replay kernels: a fused flash-style prefill (mma.sync tensor cores, online
// softmax, causal and sliding-window masks, GQA) and a split-KV decode that reads the cache
// once per group of query heads (GQA, and MLA's shared latent where V is a prefix of K).
#include <cuda_runtime.h>

#include <cstdint>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens::kernels {

// q [B, Sq, Hq, D], k/v [B, Hkv, Skv, D], out [B, Sq, Hq, D]; D = 64 or 128; fp16/bf16.
void flash_prefill(const void* q, const void* k, const void* v, void* out, DType d,
                   const AttentionDims& dims, cudaStream_t s);

// Decode (one query per sequence). q [B, Hq, Dqk], k [B, Hkv, Skv, Dqk], v [B, Hkv, Skv, Dv] or,
// with v == nullptr, the first Dv of each K row. `workspace` holds decode_workspace_bytes() and is
// zeroed once by prepare_decode_workspace() (its completion counters reset themselves after).
// `kernel` picks, for groups of up to 8 heads of dim 64 or 128 with V apart, the CUDA-core or
// the tensor-core kernel (decode_kernel_takes); other shapes run on the CUDA cores.
enum class DecodeKernel { cuda_cores, tensor_cores };
bool decode_kernel_takes(DecodeKernel kernel, const AttentionDims& dims, bool separate_v);
int64_t decode_workspace_bytes(const AttentionDims& dims, int sm_count);
void prepare_decode_workspace(void* workspace, const AttentionDims& dims, int sm_count,
                              cudaStream_t s);
void decode_attention(const void* q, const void* k, const void* v, void* out, void* workspace,
                      DType d, const AttentionDims& dims, int sm_count, cudaStream_t s,
                      DecodeKernel kernel = DecodeKernel::cuda_cores);
// The same over an fp8 (e4m3) cache, k and v [B, Hkv, Skv, D] of bytes, with the cache's
// per-tensor scales; q and out fp16/bf16. Groups of up to 8 heads of dim 64 or 128, V apart
// (decode_kernel_takes for the tensor cores); the same workspace.
void decode_attention_fp8_cache(const void* q, const void* k, const void* v, void* out,
                                void* workspace, DType d, const AttentionDims& dims, int sm_count,
                                cudaStream_t s, float k_scale = 1.f, float v_scale = 1.f);

}  // namespace rooflens::kernels
