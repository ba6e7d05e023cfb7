// GEMM and MoE layers: cuBLASLt with the fastest of the heuristic's algorithms; our GEMV as one
// more candidate for the few-row decode GEMMs it takes (kept only where it measures faster).
#include <fmt/format.h>

#include "kernels/gemv.hpp"
#include "kernels/memory_kernels.hpp"
#include "kernels/runner.hpp"
#include "kernels/weight_only.hpp"

namespace rooflens::kernels {

namespace {

// cuBLASLt's heuristic is asked for this many algorithms per shape; the replay times them all.
constexpr int kGemmAlgorithms = 8;

int elem_bytes(DType d) {
  return dtype_bits(d) / 8;
}

std::string gemm_key(const GemmShape& g) {
  const GemmDims& d = g.dims;
  return fmt::format("gemm {} {}x{}x{} b{} {}{}{}{} {} {} {} {} {}", precision_name(g.precision),
                     d.m, d.n, d.k, d.batch, g.a_shared, g.b_shared, g.b_kn, g.bias, g.a_row_stride,
                     g.a_batch_stride, g.d_row_stride, g.d_batch_stride, g.b_batch_stride);
}

// One candidate per cuBLASLt algorithm for `shape`, each running `run` with that algorithm.
std::vector<Runner> cublaslt_candidates(const ReplayContext& ctx, const GemmShape& shape,
                                        const std::function<void(const Gemm&, cudaStream_t)>& run) {
  auto gemm = std::make_shared<Gemm>(*ctx.lt, shape, kGemmAlgorithms);
  std::vector<Runner> out;
  for (int i = 0; i < gemm->algorithm_count(); ++i)
    out.emplace_back(
        ReplayLabel{"cuBLASLt", gemm->algorithm_label(i), ""},
        [gemm, i, run](cudaStream_t s) {
          gemm->select(i);
          run(*gemm, s);
        },
        gemm);
  return out;
}

}  // namespace

Runner gemm_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                   cudaStream_t s) {
  const auto& plan = p.as<replay::GemmPlan>();
  GemmShape g;
  g.precision = p.precision;
  g.out = p.outputs[0].dtype;
  g.dims = plan.dims;
  g.a_shared = plan.a_shared;
  g.b_shared = plan.b_shared;
  g.b_kn = plan.b_kn;
  g.bias = plan.bias;
  const void *a = b.in(0), *w = b.in(1), *bias = plan.bias ? b.in(2) : nullptr;
  void* d = b.out(0);
  std::vector<Runner> candidates = cublaslt_candidates(
      ctx, g, [=](const Gemm& gemm, cudaStream_t st) { gemm.run(a, w, d, bias, st); });
  // A few rows against [n, k] weights (the decode step): our GEMV as one more candidate.
  int64_t rows = plan.dims.batch * plan.dims.m;
  DType dt = p.inputs[0].dtype;
  if (plan.b_shared && !plan.b_kn && !plan.a_shared && p.outputs[0].dtype == dt &&
      p.inputs[1].dtype == dt && gemv_supported(dt, rows, plan.dims.k, a, w)) {
    int64_t n = plan.dims.n, k = plan.dims.k;
    candidates.emplace_back(ReplayLabel{"rooflens", fmt::format("GEMV, {} rows", rows), ""},
                            [=](cudaStream_t st) { gemv(a, w, bias, d, dt, rows, n, k, st); });
  }
  return pick_fastest(std::move(candidates), ctx, gemm_key(g), s);
}

// The ways deployments run a weight-only quantized GEMM (kernels/weight_only.hpp), timed: the
// weights dequantized once, then each of cuBLASLt's algorithms; and, for a decode's rows, our
// CUDA-core and tensor-core GEMVs that dequantize in registers.
Runner weight_only_runner(const replay::ReplayPlan& p, const LayerBuffers& b,
                          const ReplayContext& ctx, cudaStream_t s) {
  const auto& plan = p.as<replay::WeightOnlyGemmPlan>();
  DType dt = p.inputs[0].dtype;
  int64_t m = plan.dims.m, n = plan.dims.n, k = plan.dims.k, group = plan.group;
  int bits = plan.bits;
  const void *x = b.in(0), *wq = b.in(1), *scales = b.in(2), *bias = plan.bias ? b.in(3) : nullptr;
  void* y = b.out(0);
  GemmShape g;
  g.precision = p.precision;
  g.out = dt;
  g.dims = GemmDims{1, m, n, k};
  g.bias = plan.bias;
  // The dense weights live as long as the candidate that runs (captured by each).
  auto dense = std::make_shared<DeviceBuffer>(static_cast<size_t>(n * k * elem_bytes(dt)));
  std::vector<Runner> candidates =
      cublaslt_candidates(ctx, g, [=](const Gemm& gemm, cudaStream_t st) {
        dequantize_weights(wq, scales, dense->get(), dt, bits, n, k, group, st);
        gemm.run(x, dense->get(), y, bias, st);
      });
  for (Runner& r : candidates) {
    r.label().library = "rooflens + cuBLASLt";
    r.label().detail = fmt::format("{}-bit weights dequantized, then {}", bits, r.label().detail);
  }
  if (weight_only_gemv_rows_supported(dt, bits, m, k, group, x, wq))
    candidates.emplace_back(
        ReplayLabel{"rooflens",
                    fmt::format("{}-bit weight-only GEMV (CUDA cores, row-major packing), {} rows",
                                bits, m),
                    ""},
        [=](cudaStream_t st) {
          weight_only_gemv_rows(x, wq, scales, bias, y, dt, bits, m, n, k, group, st);
        });
  if (weight_only_gemv_supported(dt, bits, m, n, k, group, x, wq))
    candidates.emplace_back(
        ReplayLabel{"rooflens",
                    fmt::format("{}-bit weight-only tensor-core GEMV, {} rows", bits, m), ""},
        [=](cudaStream_t st) {
          weight_only_gemv(x, wq, scales, bias, y, dt, bits, m, n, k, group, st);
        });
  return pick_fastest(
      std::move(candidates), ctx,
      fmt::format("weight-only {} {} g{} {}", bits, gemm_key(g), group, dtype_name(dt)), s);
}

// One strided-batched GEMM over the active experts, each `rows` rows of its assignments. Expert
// weights read as engines store them (vLLM, SGLang, TensorRT-LLM), [E, n, k]: fc1/fc3
// [inter, hidden], fc2 [hidden, inter]; the buffers are the graph's, of the same size. The
// expert tables (moe.*) measure this layout.
GemmShape expert_gemm_shape(Precision precision, DType out, int64_t experts, int64_t active,
                            int64_t rows, int64_t n, int64_t k) {
  GemmShape g;
  g.precision = precision;
  g.out = out;
  g.dims = GemmDims{active, rows, n, k};
  g.b_shared = false;
  g.b_kn = false;
  g.b_batch_stride = n * k;
  g.a_row_stride = experts * k;  // expert e's rows: every E-th assignment row
  g.a_batch_stride = k;
  g.d_row_stride = experts * n;
  g.d_batch_stride = n;
  return g;
}

Runner moe_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                  cudaStream_t s) {
  const MoeDims m = p.as<replay::MoePlan>().dims;
  DType dt = p.inputs[0].dtype;
  int64_t eb = elem_bytes(dt);
  // Uniform routing, the prediction's assumption: assignment a = t*k + j goes to expert a mod E
  // as its (a / E)-th row. Dispatch writes the assignments in that order, so expert e's rows are
  // every E-th row from row e: one strided-batched GEMM over the experts reads them in place,
  // and writes its outputs back in assignment order for the combine.
  int64_t assignments = m.tokens * m.k;
  int64_t active = std::min(m.experts, assignments);         // experts with rows
  int64_t rows = (assignments + m.experts - 1) / m.experts;  // rows per active expert
  int64_t slots = rows * m.experts;                          // assignment rows, padded
  bool gated = m.gated && p.inputs.size() > 4;
  struct State {
    DeviceBuffer workspace;
    std::shared_ptr<Gemm> up, down;
  };
  auto st = std::make_shared<State>();
  // routed input rows, the two intermediates, expert outputs, top-k values and indices.
  int64_t bytes = slots * m.hidden * eb + 2 * slots * m.inter * eb + slots * m.hidden * eb +
                  assignments * eb + assignments * 8 + 64;
  st->workspace = DeviceBuffer(static_cast<size_t>(bytes));
  ROOFLENS_CUDA_CHECK(cudaMemsetAsync(st->workspace.get(), 0, static_cast<size_t>(bytes), s));
  char* ws = static_cast<char*>(st->workspace.get());
  char* routed = ws;
  char* h1 = routed + slots * m.hidden * eb;
  char* h3 = h1 + slots * m.inter * eb;
  char* eo = h3 + slots * m.inter * eb;
  char* topv = eo + slots * m.hidden * eb;
  auto* topi = reinterpret_cast<int64_t*>(topv + (assignments * eb + 15) / 16 * 16);
  auto expert_gemm = [&](int64_t n, int64_t k) {
    return expert_gemm_shape(p.precision, dt, m.experts, active, rows, n, k);
  };
  const char *x = static_cast<const char*>(b.in(0)), *router = static_cast<const char*>(b.in(1));
  const char *w1 = static_cast<const char*>(b.in(2)), *w2 = static_cast<const char*>(b.in(3));
  const char* w3 = gated ? static_cast<const char*>(b.in(4)) : nullptr;
  void* out = b.out(0);
  // Each batched GEMM tuned alone over cuBLASLt's algorithms.
  auto tuned = [&](const GemmShape& g, const void* a, const void* w, void* d) {
    Runner r = pick_fastest(
        cublaslt_candidates(
            ctx, g, [=](const Gemm& gemm, cudaStream_t t) { gemm.run(a, w, d, nullptr, t); }),
        ctx, gemm_key(g), s);
    return r;
  };
  Runner up = tuned(expert_gemm(m.inter, m.hidden), routed, w1, h1);
  std::optional<Runner> up3;
  if (gated) up3 = tuned(expert_gemm(m.inter, m.hidden), routed, w3, h3);
  GemmShape down_shape = expert_gemm(m.hidden, m.inter);
  // The down GEMM reads h1 as the up GEMM wrote it (assignment order), like the dispatch buffer.
  Runner down = tuned(down_shape, h1, w2, eo);
  std::string detail =
      fmt::format("batched GEMM over {} experts x {} rows, {}", active, rows, up.label().detail);
  auto launch = [=, up = std::move(up), down = std::move(down)](cudaStream_t t) {
    topk_rows(router, topv, topi, dt, m.tokens, m.experts, static_cast<int>(m.k), t);  // routing
    // Dispatch: each token's row copied to its k assignment rows.
    strided_copy(x, routed, static_cast<int>(eb), {m.tokens, m.k, m.hidden}, {m.hidden, 0, 1},
                 {m.k * m.hidden, m.hidden, 1}, 0, 0, t);
    up.launch(t);
    if (up3) up3->launch(t);
    int64_t elems = slots * m.inter;
    if (gated)
      swiglu(h1, h3, h1, dt, elems, t);
    else
      elementwise(EwOp::swish, {{h1, dt, {elems}}}, h1, dt, {elems}, t);
    down.launch(t);
    sum_slots(eo, out, dt, m.tokens, m.k, m.hidden, t);  // combine: each token's k outputs summed
  };
  return Runner(ReplayLabel{"cuBLASLt + rooflens", detail,
                            "routing, dispatch, activation and combine: rooflens kernels"},
                launch, st);
}

}  // namespace rooflens::kernels
