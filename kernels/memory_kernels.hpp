#pragma once
// Launchers of the memory-bound replay kernels: element-wise with broadcast, strided copies,
// gathers, row kernels (softmax, norms, reductions, top-k), pooling, rotary embedding, im2col
// and buffer fills. Every launcher enqueues on `stream` and returns at once.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "replay/ops.hpp"

namespace rooflens::kernels {

using replay::EwOp;
using replay::Pool2d;
using replay::RowReduce;

// Deterministic fills: floats uniform in [-scale, scale], integers in [0, bound), bools 0/1.
void fill(void* p, DType d, int64_t elements, int64_t index_bound, uint32_t seed, cudaStream_t s);

struct EwOperand {
  const void* data = nullptr;
  DType dtype = DType::undefined;
  std::vector<int64_t> shape;
};
// out = op(inputs...) with numpy broadcasting. Clip takes (x, min, max), Where (cond, a, b).
void elementwise(EwOp op, const std::vector<EwOperand>& inputs, void* out, DType out_dtype,
                 const std::vector<int64_t>& out_shape, cudaStream_t s);
// silu(gate) * up, the gated MLP's activation, on equal shapes.
void swiglu(const void* gate, const void* up, void* out, DType d, int64_t n, cudaStream_t s);

// out[r, c] = sum over j of in[r, j, c]: the MoE combine of k expert outputs per token.
void sum_slots(const void* in, void* out, DType d, int64_t rows, int64_t k, int64_t cols,
               cudaStream_t s);

// dst[dst_offset + idx.dst_strides] = src[src_offset + idx.src_strides] over `extent`.
void strided_copy(const void* src, void* dst, int elem_bytes, const std::vector<int64_t>& extent,
                  const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides,
                  int64_t src_offset, int64_t dst_offset, cudaStream_t s);
// Concat (split = false) or Split (true) along one axis in one launch: `whole` is [outer, sum of
// part_cols], part j is [outer, part_cols[j]] and takes the next part_cols[j] columns.
void concat_split(void* whole, const std::vector<void*>& parts,
                  const std::vector<int64_t>& part_cols, int64_t outer, int elem_bytes, bool split,
                  cudaStream_t s);
// out[o, j, i] = data[o, idx[j], i]; data is [outer, axis_len, inner].
void gather(const void* data, const void* indices, DType index_dtype, void* out, int elem_bytes,
            int64_t outer, int64_t axis_len, int64_t n_indices, int64_t inner, cudaStream_t s);

void softmax_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, bool log,
                  cudaStream_t s);
// Layer norm (gamma, optional beta) or RMS norm over each row; `skip` is added first when given.
void norm_rows(const void* x, const void* skip, const void* gamma, const void* beta, void* out,
               DType d, int64_t rows, int64_t cols, bool rms, cudaStream_t s);
void batch_norm(const void* x, const void* scale, const void* bias, const void* mean,
                const void* var, void* out, DType d, int64_t elements, int64_t channels,
                int64_t spatial, cudaStream_t s);
void reduce_rows(const void* in, void* out, DType d, int64_t rows, int64_t cols, RowReduce op,
                 cudaStream_t s);
// A [rows, cols, inner] tensor reduced over its middle dim into [rows, inner].
void reduce_middle(const void* in, void* out, DType d, int64_t rows, int64_t cols, int64_t inner,
                   RowReduce op, cudaStream_t s);
void topk_rows(const void* in, void* values, int64_t* indices, DType d, int64_t rows, int64_t cols,
               int k, cudaStream_t s);

void pool2d(const void* in, void* out, DType d, const Pool2d& p, cudaStream_t s);
// A depthwise 2-D convolution (one input channel per group, one output channel per input
// channel), NCHW, fp32 accumulation, optional per-channel bias: a thread per output pixel, as
// frameworks' own depthwise kernels run it. ph, pw: the leading pads.
struct DepthwiseConv2d {
  int n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};
// row_outputs: kDepthwiseRowOutputs outputs along a row per thread, each window row loaded once
// (square 3, 5 or 7 windows, stride 1 or 2, no dilation: depthwise_rows_takes).
inline constexpr int kDepthwiseRowOutputs = 4;
bool depthwise_rows_takes(const DepthwiseConv2d& p);
void depthwise_conv2d(const void* x, const void* weights, const void* bias, void* y, DType d,
                      const DepthwiseConv2d& p, cudaStream_t s, bool row_outputs = false);

// Rotate the first rot dims of each head (halves layout). bhsd: x is (B, H, S, D), else (B, S,
// H*D).
void rope(const void* x, const int64_t* positions, const void* cos, const void* sin, void* out,
          DType d, int64_t rows, int64_t heads, int64_t seq, int64_t head_dim, int64_t rot,
          bool bhsd, cudaStream_t s);

// One image's columns: col[(c*kh + i)*kw + j][oy*ow + ox] for a 2-D convolution.
void im2col(const void* x, void* col, DType d, int64_t c, int64_t h, int64_t w, int64_t kh,
            int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
            int64_t dh, int64_t dw, cudaStream_t s);

}  // namespace rooflens::kernels
