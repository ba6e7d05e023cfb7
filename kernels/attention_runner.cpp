// Attention layers: cuDNN's fused SDPA engines and our kernels (flash prefill on mma.sync,
// split-KV decode) as candidates; the fastest is kept and labelled. Over an fp8 cache: our decode
// kernel, or cuDNN's fp8 prefill.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <tuple>

#include "kernels/attention.hpp"
#include "kernels/cudnn_plugin_api.hpp"
#include "kernels/runner.hpp"

namespace rooflens::kernels {

namespace {

// Our kernels' limits (attention.hpp): decode takes head dims in multiples of 32 up to 576/512,
// prefill equal head dims of 64 or 128.
std::string own_kernel_limit(const AttentionDims& d) {
  if (d.q_len == 1) {
    if (d.head_dim_qk > 576 || d.head_dim_v > 512 || d.head_dim_qk % 32 || d.head_dim_v % 32)
      return fmt::format("decode head dims {}/{}: our kernel takes multiples of 32 up to 576/512",
                         d.head_dim_qk, d.head_dim_v);
  } else if (d.head_dim_qk != d.head_dim_v || (d.head_dim_qk != 64 && d.head_dim_qk != 128)) {
    return fmt::format("prefill head dims {}/{}: our flash kernel is built for 64 and 128",
                       d.head_dim_qk, d.head_dim_v);
  }
  return "";
}

// A decode step over an fp8 cache: our kernel only (cuDNN's SDPA takes one dtype for Q, K and V;
// the planner sends no other shape here).
Runner fp8_cache_runner(const AttentionDims& d, const void* q, const void* k, const void* v,
                        void* o, DType dt, const ReplayContext& ctx, cudaStream_t s) {
  int sms = ctx.sm_count;
  auto ws = std::make_shared<DeviceBuffer>(static_cast<size_t>(decode_workspace_bytes(d, sms)));
  prepare_decode_workspace(ws->get(), d, sms, s);
  return Runner(
      ReplayLabel{"rooflens", "split-KV decode attention over an fp8 cache (mma.sync)", ""},
      [=](cudaStream_t st) { decode_attention_fp8_cache(q, k, v, o, ws->get(), dt, d, sms, st); },
      ws);
}

// cuDNN's SDPA engine configurations for `spec` as candidates, or why there are none in `absent`.
// `tensors` as Operation::execute takes them; `keep` is what they point into beyond the layer's
// buffers (the fp8 graph's scales).
void add_cudnn_candidates(const cudnn::SdpaSpec& spec, const std::vector<void*>& tensors,
                          const std::shared_ptr<void>& keep, const ReplayContext& ctx,
                          std::vector<Runner>& candidates, std::vector<std::string>& absent) {
  if (!ctx.cudnn) {
    absent.push_back(ctx.cudnn_status);
    return;
  }
  cudnn::Built built = ctx.cudnn->sdpa(spec);
  if (!built.op) {
    absent.push_back(fmt::format("cuDNN {}SDPA does not take this shape: {}",
                                 spec.fp8 ? "fp8 " : "", built.error));
    return;
  }
  std::shared_ptr<cudnn::Operation> op(std::move(built.op));
  for (int i = 0; i < op->plan_count(); ++i) {
    auto ws = std::make_shared<DeviceBuffer>(static_cast<size_t>(op->workspace_bytes(i)));
    auto state = std::make_shared<std::tuple<std::shared_ptr<cudnn::Operation>,
                                             std::shared_ptr<DeviceBuffer>, std::shared_ptr<void>>>(
        op, ws, keep);
    candidates.emplace_back(
        ReplayLabel{"cuDNN", fmt::format("{}SDPA, {}", spec.fp8 ? "fp8 " : "", op->plan_name(i)),
                    ""},
        [op, ws, i, tensors](cudaStream_t st) {
          std::string err = op->execute(i, tensors, ws->get(), st);
          if (!err.empty()) throw CudaError("cuDNN SDPA: " + err);
        },
        state);
  }
}

// A prefill over an fp8 cache: cuDNN's fp8 flash attention with the queries in e4m3 too (the
// planner gives every input the cache's dtype), as FlashAttention-3 runs it for vLLM. Scales of
// one: the kernels' time does not depend on them.
Runner fp8_prefill_runner(const AttentionDims& d, const void* q, const void* k, const void* v,
                          void* o, const ReplayContext& ctx, cudaStream_t s) {
  auto scalars = std::make_shared<DeviceBuffer>(cudnn::kSdpaFp8Scalars * sizeof(float));
  std::vector<float> ones(cudnn::kSdpaFp8Scalars, 1.f);
  ROOFLENS_CUDA_CHECK(cudaMemcpyAsync(scalars->get(), ones.data(), ones.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, s));
  ROOFLENS_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<void*> tensors{const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o};
  for (int i = 0; i < cudnn::kSdpaFp8Scalars; ++i)
    tensors.push_back(static_cast<float*>(scalars->get()) + i);
  std::vector<Runner> candidates;
  std::vector<std::string> absent;
  add_cudnn_candidates(cudnn::SdpaSpec{DType::bf16, d, false, true}, tensors, scalars, ctx,
                       candidates, absent);
  if (candidates.empty())
    throw ReplayUnsupported(
        fmt::format("no fp8 attention kernel takes this shape: {}", fmt::join(absent, "; ")));
  std::string key =
      fmt::format("sdpa fp8 b{} h{}/{} s{}x{} d{}/{} c{} w{}", d.batch, d.q_heads, d.kv_heads,
                  d.q_len, d.kv_len, d.head_dim_qk, d.head_dim_v, d.causal, d.window);
  return pick_fastest(std::move(candidates), ctx, key, s);
}

}  // namespace

Runner attention_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                        const ReplayContext& ctx, cudaStream_t s) {
  const auto& plan = p.as<replay::AttentionPlan>();
  const AttentionDims d = plan.dims;
  DType dt = p.inputs[0].dtype;
  const void *q = b.in(0), *k = b.in(1), *v = plan.v_in_k ? nullptr : b.in(2);
  void* o = b.out(0);
  if (dt == DType::f8e4m3fn) return fp8_prefill_runner(d, q, k, v, o, ctx, s);
  if (p.inputs[1].dtype == DType::f8e4m3fn) return fp8_cache_runner(d, q, k, v, o, dt, ctx, s);
  std::vector<Runner> candidates;
  std::vector<std::string> absent;  // why a library is not among the candidates
  add_cudnn_candidates(
      cudnn::SdpaSpec{dt, d, plan.v_in_k},
      {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v ? v : k), o}, nullptr, ctx,
      candidates, absent);
  std::string limit = own_kernel_limit(d);
  if (!limit.empty()) {
    absent.push_back(limit);
  } else if (d.q_len == 1) {
    int sms = ctx.sm_count;
    auto ws = std::make_shared<DeviceBuffer>(static_cast<size_t>(decode_workspace_bytes(d, sms)));
    prepare_decode_workspace(ws->get(), d, sms, s);
    candidates.emplace_back(
        ReplayLabel{"rooflens", "split-KV decode attention", ""},
        [=](cudaStream_t st) { decode_attention(q, k, v, o, ws->get(), dt, d, sms, st); }, ws);
    if (decode_kernel_takes(DecodeKernel::tensor_cores, d,
                            v != nullptr))  // the same workspace: one runs at a time
      candidates.emplace_back(
          ReplayLabel{"rooflens", "split-KV decode attention (mma.sync)", ""},
          [=](cudaStream_t st) {
            decode_attention(q, k, v, o, ws->get(), dt, d, sms, st, DecodeKernel::tensor_cores);
          },
          ws);
  } else {
    candidates.emplace_back(ReplayLabel{"rooflens", "flash attention (mma.sync)", ""},
                            [=](cudaStream_t st) { flash_prefill(q, k, v, o, dt, d, st); });
  }
  if (candidates.empty())
    throw ReplayUnsupported(
        fmt::format("no attention kernel takes this shape: {}", fmt::join(absent, "; ")));
  std::string key = fmt::format("sdpa {} b{} h{}/{} s{}x{} d{}/{} c{} w{} vk{}", dtype_name(dt),
                                d.batch, d.q_heads, d.kv_heads, d.q_len, d.kv_len, d.head_dim_qk,
                                d.head_dim_v, d.causal, d.window, plan.v_in_k);
  Runner r = pick_fastest(std::move(candidates), ctx, key, s);
  if (!absent.empty() && r.label().library == "rooflens")
    r.label().note += "; " + fmt::format("{}", fmt::join(absent, "; "));
  return r;
}

}  // namespace rooflens::kernels
