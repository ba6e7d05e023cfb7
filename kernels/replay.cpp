#include "kernels/replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/attention.hpp"
#include "kernels/gemv.hpp"
#include "kernels/memory_kernels.hpp"

namespace rooflens::kernels {

using profiler::ReplayKind;

namespace {

// GEMM precision for a plan: tensor-core tf32 only when the prediction assumed it.
GemmShape gemm_shape(const profiler::ReplayPlan& p, const GemmDims& d, DType out, bool bias) {
  GemmShape g;
  g.precision = p.precision;
  g.out = out;
  g.dims = d;
  g.bias = bias;
  return g;
}

int64_t elements_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int elem_bytes(DType d) { return dtype_bits(d) / 8; }

}  // namespace

LayerReplay::LayerReplay(const profiler::ReplayPlan& plan, const ReplayContext& ctx, cudaStream_t s) : plan_(plan), ctx_(ctx) {
  uint32_t seed = static_cast<uint32_t>(plan.node) * 7919u;
  for (const auto* list : {&plan_.inputs, &plan_.outputs})
    for (const profiler::BufferSpec& b : *list) {
      buffers_.emplace_back(static_cast<size_t>(std::max<int64_t>(b.bytes, 16)));
      fill(buffers_.back().get(), b.dtype, elements_of(b.shape), b.index_bound, seed++, s);
    }
  const KernelShape& ks = plan_.shape;
  switch (plan_.kind) {
    case ReplayKind::gemm: {
      GemmShape g = gemm_shape(plan_, *ks.gemm, plan_.outputs[0].dtype, false);
      g.b_shared = ks.gemm_b_shared;
      g.a_shared = elements_of(plan_.inputs[0].shape) != ks.gemm->batch * ks.gemm->m * ks.gemm->k;
      // Gemm's C input: a length-n bias becomes the epilogue; anything else is left out.
      g.bias = plan_.inputs.size() > 2 && elements_of(plan_.inputs[2].shape) == ks.gemm->n && plan_.precision != Precision::fp8;
      // Weights as the graph stores them: [k, n] for ONNX MatMul, [n, k] under transB; fp8
      // needs [n, k] (the only layout cuBLASLt's fp8 kernels take).
      g.b_kn = !ks.gemm_b_transposed && plan_.precision != Precision::fp8;
      // A few rows against [n, k] weights (the decode step): a GEMV kernel, as deployments run.
      int64_t rows = ks.gemm->batch * ks.gemm->m;
      DType dt = plan_.inputs[0].dtype;
      bool bias_ok = plan_.inputs.size() <= 2 || g.bias;
      if (g.b_shared && !g.b_kn && !g.a_shared && bias_ok && plan_.outputs[0].dtype == dt && plan_.inputs[1].dtype == dt &&
          gemv_supported(dt, rows, ks.gemm->k, in(0), in(1))) {
        gemv_rows_ = rows;
        break;
      }
      gemms_.push_back(std::make_unique<Gemm>(*ctx_.lt, g));
      break;
    }
    case ReplayKind::conv: {
      const ConvDims& c = *ks.conv;
      int64_t kel = 1, osp = 1;
      for (int64_t k : c.kernel) kel *= k;
      for (int64_t o : c.out_spatial) osp *= o;
      // Per image, batched over groups: out[oc_g, osp] = W[oc_g, K] . col[K, osp], K = ic_g * kel.
      GemmDims d{c.groups, c.out_channels / c.groups, osp, c.in_channels / c.groups * kel};
      GemmShape g = gemm_shape(plan_, d, plan_.outputs[0].dtype, false);
      g.a_shared = false;
      g.b_shared = false;
      g.b_kn = true;
      gemms_.push_back(std::make_unique<Gemm>(*ctx_.lt, g));
      if (!profiler::conv_is_pointwise(c)) workspace_ = DeviceBuffer(static_cast<size_t>(c.in_channels * kel * osp * elem_bytes(plan_.inputs[0].dtype)));
      break;
    }
    case ReplayKind::attention: {
      const AttentionDims& a = *ks.attention;
      if (a.q_len == 1) {
        workspace_ = DeviceBuffer(static_cast<size_t>(decode_workspace_bytes(a, ctx_.sm_count)));
        prepare_decode_workspace(workspace_.get(), a, ctx_.sm_count, s);
      }
      break;
    }
    case ReplayKind::moe: prepare_moe(); break;
    default: break;
  }
  ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(s));
}

LayerReplay::~LayerReplay() = default;

void LayerReplay::launch_conv(cudaStream_t s) {
  const ConvDims& c = *plan_.shape.conv;
  DType dt = plan_.inputs[0].dtype;
  int64_t kh = c.kernel[0], kw = c.kernel.size() > 1 ? c.kernel[1] : 1;
  int64_t h = c.in_spatial[0], w = c.in_spatial.size() > 1 ? c.in_spatial[1] : 1;
  int64_t oh = c.out_spatial[0], ow = c.out_spatial.size() > 1 ? c.out_spatial[1] : 1;
  int64_t sh = c.strides[0], sw = c.strides.size() > 1 ? c.strides[1] : 1;
  int64_t dh = c.dilations[0], dw = c.dilations.size() > 1 ? c.dilations[1] : 1;
  size_t sd = c.kernel.size();
  int64_t ph = c.pads[0], pw = sd > 1 ? c.pads[1] : 0;
  int64_t image_in = c.in_channels * h * w, image_out = c.out_channels * oh * ow;
  int eb = elem_bytes(dt);
  for (int64_t n = 0; n < c.batch; ++n) {
    const char* x = static_cast<const char*>(in(0)) + n * image_in * eb;
    const void* cols = x;
    if (workspace_.get()) {
      im2col(x, workspace_.get(), dt, c.in_channels, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, s);
      cols = workspace_.get();
    }
    gemms_[0]->run(in(1), cols, static_cast<char*>(out(0)) + n * image_out * eb, nullptr, s);
  }
}

void LayerReplay::prepare_moe() {
  const MoeDims& m = *plan_.shape.moe;
  // Uniform routing, the prediction's assumption: assignment j of token t goes to expert
  // (t*k + j) mod E, so each expert's row count is known on the host.
  expert_tokens_.assign(static_cast<size_t>(m.experts), 0);
  for (int64_t a = 0; a < m.tokens * m.k; ++a) ++expert_tokens_[static_cast<size_t>(a % m.experts)];
  DType dt = plan_.inputs[0].dtype;
  int64_t rows = m.tokens * m.k;
  // workspace: routed input rows, two expert intermediates, expert outputs, top-k values/indices.
  int64_t eb = elem_bytes(dt);
  int64_t bytes = rows * m.hidden * eb + 2 * rows * m.inter * eb + rows * m.hidden * eb + m.tokens * m.k * (eb + 8) + 16;
  workspace_ = DeviceBuffer(static_cast<size_t>(bytes));
  // One GEMM per expert with rows: fc1/fc3 (n = inter, k = hidden), then fc2 (n = hidden,
  // k = inter). Expert weights are stored [k, n] ([hidden, inter] and [inter, hidden]).
  for (auto [n, k] : {std::pair{m.inter, m.hidden}, std::pair{m.hidden, m.inter}})
    for (int64_t e = 0; e < m.experts; ++e) {
      int64_t r = expert_tokens_[static_cast<size_t>(e)];
      if (r == 0) {
        gemms_.emplace_back();
        continue;
      }
      GemmShape g = gemm_shape(plan_, GemmDims{1, r, n, k}, dt, false);
      g.b_kn = true;
      gemms_.push_back(std::make_unique<Gemm>(*ctx_.lt, g));
    }
}

void LayerReplay::launch_moe(cudaStream_t s) {
  const MoeDims& m = *plan_.shape.moe;
  DType dt = plan_.inputs[0].dtype;
  int eb = elem_bytes(dt);
  int64_t rows = m.tokens * m.k;
  char* ws = static_cast<char*>(workspace_.get());
  char* routed = ws;
  char* h1 = routed + rows * m.hidden * eb;
  char* h3 = h1 + rows * m.inter * eb;
  char* eo = h3 + rows * m.inter * eb;
  char* topv = eo + rows * m.hidden * eb;
  // int64 indices need 8-byte alignment: round the offset up.
  auto* topi = reinterpret_cast<int64_t*>(topv + (m.tokens * m.k * eb + 15) / 16 * 16);
  // Routing: top-k of the router probabilities (the dispatch below uses the uniform assignment).
  topk_rows(in(1), topv, topi, dt, m.tokens, m.experts, static_cast<int>(m.k), s);
  // Dispatch: each token's row copied to its k slots (expert-major order).
  strided_copy(in(0), routed, eb, {m.tokens, m.k, m.hidden}, {m.hidden, 0, 1}, {m.k * m.hidden, m.hidden, 1}, 0, 0, s);
  int64_t w_in = m.hidden * m.inter * eb;
  int64_t offset = 0;
  bool gated = m.gated && plan_.inputs.size() > 4;
  const char* w1 = static_cast<const char*>(in(2));
  const char* w2 = static_cast<const char*>(in(3));  // omitted biases are not buffers
  const char* w3 = gated ? static_cast<const char*>(in(4)) : nullptr;
  for (int64_t e = 0; e < m.experts; ++e) {
    int64_t r = expert_tokens_[static_cast<size_t>(e)];
    if (r == 0) continue;
    const Gemm& up = *gemms_[static_cast<size_t>(e)];
    up.run(routed + offset * m.hidden * eb, w1 + e * w_in, h1 + offset * m.inter * eb, nullptr, s);
    if (gated) up.run(routed + offset * m.hidden * eb, w3 + e * w_in, h3 + offset * m.inter * eb, nullptr, s);
    offset += r;
  }
  if (gated) swiglu(h1, h3, h1, dt, rows * m.inter, s);
  else elementwise(EwOp::swish, {{h1, dt, {rows * m.inter}}}, h1, dt, {rows * m.inter}, s);
  offset = 0;
  for (int64_t e = 0; e < m.experts; ++e) {
    int64_t r = expert_tokens_[static_cast<size_t>(e)];
    if (r == 0) continue;
    gemms_[static_cast<size_t>(m.experts + e)]->run(h1 + offset * m.inter * eb, w2 + e * w_in, eo + offset * m.hidden * eb, nullptr, s);
    offset += r;
  }
  // Combine: each token's k expert outputs summed.
  sum_slots(eo, out(0), dt, m.tokens, m.k, m.hidden, s);
}

void LayerReplay::launch(cudaStream_t s) {
  const profiler::ReplayPlan& p = plan_;
  DType dt = p.inputs.empty() ? DType::f32 : p.inputs[0].dtype;
  switch (p.kind) {
    case ReplayKind::gemm:
      if (gemv_rows_ > 0) gemv(in(0), in(1), p.inputs.size() > 2 ? in(2) : nullptr, out(0), dt, gemv_rows_, p.shape.gemm->n, p.shape.gemm->k, s);
      else gemms_[0]->run(in(0), in(1), out(0), p.inputs.size() > 2 ? in(2) : nullptr, s);
      break;
    case ReplayKind::conv: launch_conv(s); break;
    case ReplayKind::attention: {
      const AttentionDims& a = *p.shape.attention;
      const void* v = p.residual ? nullptr : in(2);
      if (a.q_len == 1) decode_attention(in(0), in(1), v, out(0), workspace_.get(), dt, a, ctx_.sm_count, s);
      else flash_prefill(in(0), in(1), v, out(0), dt, a, s);
      break;
    }
    case ReplayKind::moe: launch_moe(s); break;
    case ReplayKind::elementwise: {
      std::vector<EwOperand> ops;
      for (size_t i = 0; i < p.inputs.size(); ++i) ops.push_back({in(i), p.inputs[i].dtype, p.inputs[i].shape});
      elementwise(*profiler::elementwise_op_from(p.op), ops, out(0), p.outputs[0].dtype, p.outputs[0].shape, s);
      break;
    }
    case ReplayKind::softmax: softmax_rows(in(0), out(0), dt, p.rows, p.cols, p.op == "LogSoftmax", s); break;
    case ReplayKind::layer_norm: {
      bool rms = p.op == "rms";
      const void* skip = p.residual ? in(1) : nullptr;
      size_t g = p.residual ? 2 : 1;
      const void* beta = !rms && p.inputs.size() > g + 1 ? in(g + 1) : nullptr;
      norm_rows(in(0), skip, in(g), beta, out(0), dt, p.rows, p.cols, rms, s);
      break;
    }
    case ReplayKind::batch_norm:
      batch_norm(in(0), in(1), in(2), in(3), in(4), out(0), dt, elements_of(p.inputs[0].shape), p.rows, p.cols, s);
      break;
    case ReplayKind::reduce_rows: {
      if (p.op == "TopK") {
        topk_rows(in(0), out(0), static_cast<int64_t*>(out(1)), dt, p.rows, p.cols, static_cast<int>(p.k), s);
        break;
      }
      RowReduce r = p.op == "ReduceMean" ? RowReduce::mean : p.op == "ReduceMax" ? RowReduce::max
                  : p.op == "ReduceMin" ? RowReduce::min : p.op == "ReduceSumSquare" ? RowReduce::sum_square
                  : p.op == "ReduceL2" ? RowReduce::l2 : RowReduce::sum;
      reduce_rows(in(0), out(0), dt, p.rows, p.cols, r, s);
      break;
    }
    case ReplayKind::pool2d: {
      const Shape &x = p.inputs[0].shape, &y = p.outputs[0].shape;
      Pool2d pp{x[0], x[1], x[2], x[3], y[2], y[3], p.window[0], p.window[1], p.strides[0], p.strides[1], p.pads[0], p.pads[1],
                p.op == "MaxPool"};
      pool2d(in(0), out(0), dt, pp, s);
      break;
    }
    case ReplayKind::strided_copy:
      if (!p.part_cols.empty()) {  // Concat / Split: one launch for all parts
        bool split = p.op == "Split";
        std::vector<void*> parts;
        size_t first = split ? p.inputs.size() : 0, count = split ? p.outputs.size() : p.inputs.size();
        for (size_t j = 0; j < count; ++j) parts.push_back(buffers_[first + j].get());
        concat_split(split ? in(0) : out(0), parts, p.part_cols, p.outer, elem_bytes(dt), split, s);
        break;
      }
      for (const profiler::CopyPart& c : p.copies)
        strided_copy(buffers_[static_cast<size_t>(c.src)].get(), buffers_[static_cast<size_t>(c.dst)].get(), elem_bytes(dt),
                     c.extent, c.src_strides, c.dst_strides, c.src_offset, c.dst_offset, s);
      break;
    case ReplayKind::gather:
      gather(in(0), in(1), p.inputs[1].dtype, out(0), elem_bytes(dt), p.outer, p.axis, elements_of(p.inputs[1].shape), p.inner, s);
      break;
    case ReplayKind::rope:
      rope(in(0), static_cast<const int64_t*>(in(1)), in(2), in(3), out(0), dt, p.rows, p.inner, p.outer, p.head_dim, p.rotary_dim,
           p.axis != 0, s);
      break;
  }
}

}  // namespace rooflens::kernels
