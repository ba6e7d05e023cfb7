#include "kernels/replay.hpp"

#include <algorithm>

#include "kernels/memory_kernels.hpp"

namespace rooflens::kernels {

namespace {

int64_t elements_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace

LayerReplay::LayerReplay(const replay::ReplayPlan& plan, const ReplayContext& ctx, cudaStream_t s)
    : plan_(plan) {
  uint32_t seed = static_cast<uint32_t>(plan.node) * 7919u;
  for (const auto* list : {&plan_.inputs, &plan_.outputs})
    for (const replay::BufferSpec& b : *list) {
      buffers_.emplace_back(static_cast<size_t>(std::max<int64_t>(b.bytes, 16)));
      fill(buffers_.back().get(), b.dtype, elements_of(b.shape), b.index_bound, seed++, s);
    }
  LayerBuffers b{plan_, buffers_};
  if (plan_.is<replay::GemmPlan>())
    runner_ = gemm_runner(plan_, b, ctx, s);
  else if (plan_.is<replay::WeightOnlyGemmPlan>())
    runner_ = weight_only_runner(plan_, b, ctx, s);
  else if (plan_.is<replay::MoePlan>())
    runner_ = moe_runner(plan_, b, ctx, s);
  else if (plan_.is<replay::ConvPlan>())
    runner_ = conv_runner(plan_, b, ctx, s);
  else if (plan_.is<replay::AttentionPlan>())
    runner_ = attention_runner(plan_, b, ctx, s);
  else if (plan_.is<replay::CollectivePlan>())
    runner_ = collective_runner(plan_, b, ctx);
  else
    runner_ = memory_runner(plan_, b);
  ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(s));
}

LayerReplay::~LayerReplay() = default;

// Kept whole: one short case per memory plan kind, read top to bottom as the plans' list.
Runner memory_runner(const replay::ReplayPlan& p, const LayerBuffers& b) {
  using namespace replay;
  DType dt = p.inputs.empty() ? DType::f32 : p.inputs[0].dtype;
  std::vector<void*> in, out;
  for (size_t i = 0; i < p.inputs.size(); ++i) in.push_back(b.in(i));
  for (size_t i = 0; i < p.outputs.size(); ++i) out.push_back(b.out(i));
  ReplayLabel label{"rooflens", p.description, ""};
  auto make = [&](std::function<void(cudaStream_t)> fn) { return Runner(label, std::move(fn)); };
  if (auto* e = std::get_if<ElementwisePlan>(&p.kernel)) {
    std::vector<EwOperand> ops;
    for (size_t i = 0; i < p.inputs.size(); ++i)
      ops.push_back({in[i], p.inputs[i].dtype, p.inputs[i].shape});
    EwOp op = e->op;
    DType od = p.outputs[0].dtype;
    Shape os = p.outputs[0].shape;
    void* y = out[0];
    return make([=](cudaStream_t s) { elementwise(op, ops, y, od, os, s); });
  }
  if (auto* sm = std::get_if<SoftmaxPlan>(&p.kernel)) {
    SoftmaxPlan k = *sm;
    return make([=](cudaStream_t s) { softmax_rows(in[0], out[0], dt, k.rows, k.cols, k.log, s); });
  }
  if (auto* n = std::get_if<NormPlan>(&p.kernel)) {
    NormPlan k = *n;
    size_t g = k.residual ? 2 : 1;
    const void* skip = k.residual ? in[1] : nullptr;
    const void* gamma = in[g];
    const void* beta = k.beta ? in[g + 1] : nullptr;
    return make([=](cudaStream_t s) {
      norm_rows(in[0], skip, gamma, beta, out[0], dt, k.rows, k.cols, k.rms, s);
    });
  }
  if (auto* bn = std::get_if<BatchNormPlan>(&p.kernel)) {
    BatchNormPlan k = *bn;
    int64_t elements = elements_of(p.inputs[0].shape);
    return make([=](cudaStream_t s) {
      batch_norm(in[0], in[1], in[2], in[3], in[4], out[0], dt, elements, k.channels, k.spatial, s);
    });
  }
  if (auto* r = std::get_if<ReducePlan>(&p.kernel)) {
    ReducePlan k = *r;
    if (k.inner > 1)
      return make([=](cudaStream_t s) {
        reduce_middle(in[0], out[0], dt, k.rows, k.cols, k.inner, k.op, s);
      });
    return make([=](cudaStream_t s) { reduce_rows(in[0], out[0], dt, k.rows, k.cols, k.op, s); });
  }
  if (auto* t = std::get_if<TopKPlan>(&p.kernel)) {
    TopKPlan k = *t;
    return make([=](cudaStream_t s) {
      topk_rows(in[0], out[0], static_cast<int64_t*>(out[1]), dt, k.rows, k.cols,
                static_cast<int>(k.k), s);
    });
  }
  if (auto* pl = std::get_if<PoolPlan>(&p.kernel)) {
    Pool2d k = pl->pool;
    return make([=](cudaStream_t s) { pool2d(in[0], out[0], dt, k, s); });
  }
  if (auto* cs = std::get_if<ConcatSplitPlan>(&p.kernel)) {
    ConcatSplitPlan k = *cs;
    std::vector<void*> parts = k.split ? out : in;
    void* whole = k.split ? in[0] : out[0];
    return make([=](cudaStream_t s) {
      concat_split(whole, parts, k.part_cols, k.outer, k.elem_bytes, k.split, s);
    });
  }
  if (auto* c = std::get_if<CopyPlan>(&p.kernel)) {
    CopyPlan k = *c;
    std::vector<void*> all = in;
    all.insert(all.end(), out.begin(), out.end());
    return make([=](cudaStream_t s) {
      for (const CopyPart& part : k.parts)
        strided_copy(all[static_cast<size_t>(part.src)], all[static_cast<size_t>(part.dst)],
                     k.elem_bytes, part.extent, part.src_strides, part.dst_strides, part.src_offset,
                     part.dst_offset, s);
    });
  }
  if (auto* g = std::get_if<GatherPlan>(&p.kernel)) {
    GatherPlan k = *g;
    DType index_type = p.inputs[1].dtype;
    return make([=](cudaStream_t s) {
      gather(in[0], in[1], index_type, out[0], k.elem_bytes, k.outer, k.axis_len, k.n_indices,
             k.inner, s);
    });
  }
  const RopePlan k = p.as<RopePlan>();
  return make([=](cudaStream_t s) {
    rope(in[0], static_cast<const int64_t*>(in[1]), in[2], in[3], out[0], dt, k.rows, k.heads,
         k.seq, k.head_dim, k.rotary_dim, k.bhsd, s);
  });
}

}  // namespace rooflens::kernels
