// The vendor-library paths of the replay (cuBLASLt's algorithms, cuDNN's convolution and SDPA
// engines, batched MoE GEMMs) against host references computed from the same inputs, run through
// LayerReplay as the harness runs a layer.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>

#include "gpu_helpers.hpp"
#include "kernels/cudnn_runtime.hpp"
#include "kernels/replay.hpp"
#include "kernels/weight_only.hpp"
#include "profiler/gpu/gpu_info.hpp"

using namespace gpu_test;
using namespace rooflens;
using namespace rooflens::kernels;
using namespace rooflens::replay;

namespace {

BufferSpec buffer(DType d, Shape s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return BufferSpec{d, std::move(s), storage_bytes(d, n), 0};
}

// Host copies of a replay's buffers (inputs first, then outputs).
std::vector<std::vector<float>> host_buffers(const LayerReplay& r) {
  std::vector<std::vector<float>> out;
  const ReplayPlan& p = r.plan();
  size_t i = 0;
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const BufferSpec& b : *list) {
      int64_t n = storage_bytes(b.dtype, 1) ? b.bytes / storage_bytes(b.dtype, 1) : 0;
      std::vector<uint8_t> raw(static_cast<size_t>(b.bytes));
      ROOFLENS_CUDA_CHECK(cudaDeviceSynchronize());
      ROOFLENS_CUDA_CHECK(
          cudaMemcpy(raw.data(), r.buffers()[i++].get(), raw.size(), cudaMemcpyDeviceToHost));
      std::vector<float> f(static_cast<size_t>(n));
      for (int64_t e = 0; e < n; ++e) {
        uint16_t h;
        switch (b.dtype) {
          case DType::f32:
            std::memcpy(&f[e], raw.data() + 4 * e, 4);
            break;
          case DType::f16:
            std::memcpy(&h, raw.data() + 2 * e, 2), f[e] = half_to_float(h);
            break;
          case DType::u8:
            f[e] = raw[static_cast<size_t>(e)];
            break;
          case DType::f8e4m3fn:
            f[e] = e4m3_to_float(raw[static_cast<size_t>(e)]);
            break;
          default:
            std::memcpy(&h, raw.data() + 2 * e, 2), f[e] = bf16_to_float(h);
            break;
        }
      }
      out.push_back(std::move(f));
    }
  return out;
}

struct Context {
  CublasLt lt;
  const cudnn::Runtime& dnn = cudnn::Runtime::load("");
  replay::KernelChoices choices;
  ReplayContext ctx;
  explicit Context(bool timed) {
    ctx.lt = &lt;
    ctx.sm_count = profiler::query_gpu().sm_count;
    ctx.cudnn = dnn.plugin();
    ctx.cudnn_status = dnn.status();
    ctx.choices = &choices;
    if (timed) ctx.time = profiler::candidate_timer(nullptr, nullptr, 3);
  }
};

// Direct convolution on NCHW, 2-D, symmetric pads.
std::vector<float> host_conv(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>* bias, const ConvDims& c) {
  int64_t H = c.in_spatial[0], W = c.in_spatial[1], OH = c.out_spatial[0], OW = c.out_spatial[1];
  int64_t KH = c.kernel[0], KW = c.kernel[1], cg = c.in_channels / c.groups,
          og = c.out_channels / c.groups;
  std::vector<float> y(static_cast<size_t>(c.batch * c.out_channels * OH * OW));
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out_channels; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = bias ? (*bias)[o] : 0;
          int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t iy = oy * c.strides[0] - c.pads[0] + ky * c.dilations[0],
                        ix = ox * c.strides[1] - c.pads[1] + kx * c.dilations[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += static_cast<double>(x[((n * c.in_channels + g * cg + ci) * H + iy) * W + ix]) *
                     w[((o * cg + ci) * KH + ky) * KW + kx];
              }
          y[((n * c.out_channels + o) * OH + oy) * OW + ox] = static_cast<float>(s);
        }
  return y;
}

ReplayPlan conv_plan(DType dt, Precision p, ConvDims c, bool bias) {
  ReplayPlan plan;
  plan.node = 3;
  plan.precision = p;
  plan.inputs = {buffer(dt, {c.batch, c.in_channels, c.in_spatial[0], c.in_spatial[1]}),
                 buffer(dt, {c.out_channels, c.in_channels / c.groups, c.kernel[0], c.kernel[1]})};
  if (bias) plan.inputs.push_back(buffer(dt, {c.out_channels}));
  plan.outputs = {buffer(dt, {c.batch, c.out_channels, c.out_spatial[0], c.out_spatial[1]})};
  plan.kernel = ConvPlan{c, false, bias};
  return plan;
}

}  // namespace

TEST_CASE(
    "cuDNN 9 is found on this machine (--cudnn, ROOFLENS_CUDNN, the loader's path, Python's "
    "nvidia/cudnn/lib)",
    "[cudnn]") {
  const cudnn::Runtime& rt = cudnn::Runtime::load("");
  INFO(rt.status());
  REQUIRE(rt.available());
  CHECK(rt.plugin()->cudnn_version() >= 90000);
  CHECK(rt.status().rfind("cuDNN 9.", 0) == 0);
}

TEST_CASE(
    "convolution through cuDNN matches a direct host convolution: bias, stride, padding, groups, "
    "fp32 and bf16",
    "[cudnn]") {
  Context c(false);
  struct Case {
    DType dt;
    Precision p;
    ConvDims dims;
    bool bias;
    double tol;
  };
  // ResNet's 7x7 stem (stride 2, pad 3) shrunk, a grouped 3x3 with dilation, a 1x1 projection.
  std::vector<Case> cases{
      {DType::f32, Precision::fp32,
       ConvDims{2, 3, 16, 1, {20, 20}, {7, 7}, {10, 10}, {2, 2}, {3, 3, 3, 3}, {1, 1}, false}, true,
       1e-4},
      {DType::bf16, Precision::bf16,
       ConvDims{1, 32, 32, 4, {13, 11}, {3, 3}, {11, 9}, {1, 1}, {1, 1, 1, 1}, {2, 2}, false},
       false, 3e-2},
      {DType::bf16, Precision::bf16,
       ConvDims{2, 64, 128, 1, {7, 7}, {1, 1}, {7, 7}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}, true,
       3e-2},
  };
  for (const Case& k : cases) {
    DYNAMIC_SECTION(dtype_name(k.dt) << " " << k.dims.kernel[0] << "x" << k.dims.kernel[1]
                                     << " groups " << k.dims.groups) {
      LayerReplay r(conv_plan(k.dt, k.p, k.dims, k.bias), c.ctx, nullptr);
      CHECK(r.label().library == (c.ctx.cudnn ? "cuDNN" : "rooflens"));
      r.launch(nullptr);
      auto h = host_buffers(r);
      auto want = host_conv(h[0], h[1], k.bias ? &h[2] : nullptr, k.dims);
      CHECK(max_rel_error(h.back(), want, 0.5) < k.tol);
    }
  }
}

TEST_CASE(
    "attention through cuDNN SDPA matches the host: causal prefill, GQA, sliding window, decode "
    "over a cache",
    "[cudnn]") {
  Context c(false);
  struct Case {
    AttentionDims d;
    DType dt;
  };
  std::vector<Case> cases{
      {AttentionDims{2, 4, 2, 77, 77, 64, 64, true, 0}, DType::bf16},  // causal, GQA 2
      {AttentionDims{1, 6, 3, 70, 220, 128, 128, true, 0},
       DType::f16},  // the last 70 queries of 220 keys
      {AttentionDims{1, 4, 4, 96, 96, 64, 64, true, 32}, DType::bf16},    // sliding window of 32
      {AttentionDims{3, 8, 2, 1, 513, 128, 128, false, 0}, DType::bf16},  // decode step, GQA 4
  };
  for (const Case& k : cases) {
    const AttentionDims& d = k.d;
    DYNAMIC_SECTION("b" << d.batch << " h" << d.q_heads << "/" << d.kv_heads << " " << d.q_len
                        << "x" << d.kv_len << " w" << d.window) {
      ReplayPlan plan;
      plan.node = 5;
      plan.precision = k.dt == DType::f16 ? Precision::fp16 : Precision::bf16;
      plan.inputs = {buffer(k.dt, {d.batch, d.q_len, d.q_heads, d.head_dim_qk}),
                     buffer(k.dt, {d.batch, d.kv_heads, d.kv_len, d.head_dim_qk}),
                     buffer(k.dt, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v})};
      plan.outputs = {buffer(k.dt, {d.batch, d.q_len, d.q_heads, d.head_dim_v})};
      plan.kernel = AttentionPlan{d, false};
      LayerReplay r(plan, c.ctx, nullptr);
      INFO(r.label().text());
      if (c.ctx.cudnn) CHECK(r.label().library == "cuDNN");
      r.launch(nullptr);
      auto h = host_buffers(r);
      CHECK(max_rel_error(h[3], host_attention(h[0], h[1], &h[2], d), 0.05) < 3e-2);
    }
  }
}

TEST_CASE(
    "a prefill over an fp8 cache through cuDNN's fp8 attention matches the host on the same e4m3 "
    "tensors",
    "[cudnn]") {
  Context c(false);
  if (!c.ctx.cudnn) {
    WARN("skipped: " << c.ctx.cudnn_status);
    return;
  }
  // Llama's GQA of 4 at D 128 and an MHA at D 64, causal over the whole prompt, as engines prefill.
  for (AttentionDims d : {AttentionDims{2, 8, 2, 128, 128, 128, 128, true, 0},
                          AttentionDims{1, 4, 4, 256, 256, 64, 64, true, 0}}) {
    DYNAMIC_SECTION("h" << d.q_heads << "/" << d.kv_heads << " s" << d.q_len
                        << " D=" << d.head_dim_qk) {
      ReplayPlan plan;
      plan.node = 6;
      plan.precision = Precision::bf16;
      DType f8 = DType::f8e4m3fn;
      plan.inputs = {buffer(f8, {d.batch, d.q_len, d.q_heads, d.head_dim_qk}),
                     buffer(f8, {d.batch, d.kv_heads, d.kv_len, d.head_dim_qk}),
                     buffer(f8, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v})};
      plan.outputs = {buffer(f8, {d.batch, d.q_len, d.q_heads, d.head_dim_v})};
      plan.kernel = AttentionPlan{d, false};
      LayerReplay r(plan, c.ctx, nullptr);
      INFO(r.label().text());
      CHECK(r.label().library == "cuDNN");
      CHECK(r.label().detail.rfind("fp8 SDPA", 0) == 0);
      r.launch(nullptr);
      auto h = host_buffers(r);
      // The host attends in double over the same e4m3 values; the kernel rounds the softmax's
      // probabilities and its output to e4m3 (3 mantissa bits, 6% apart): outputs of ~0.03 land
      // within a few thousandths, where a misread layout is off by their whole size.
      CHECK(max_rel_error(h[3], host_attention(h[0], h[1], &h[2], d), 0.05) < 0.2);
    }
  }
}

TEST_CASE(
    "GEMM plans: every cuBLASLt algorithm and the GEMV candidate agree with the host; the fastest "
    "is labelled",
    "[vendor]") {
  Context c(true);
  // Eight decode rows folded into M against one [n, k] weight, with a bias.
  const int64_t m = 8, n = 192, k = 256;
  ReplayPlan plan;
  plan.node = 9;
  plan.precision = Precision::bf16;
  plan.inputs = {buffer(DType::bf16, {m, k}), buffer(DType::bf16, {n, k}),
                 buffer(DType::bf16, {n})};
  plan.outputs = {buffer(DType::bf16, {m, n})};
  plan.kernel = GemmPlan{GemmDims{1, m, n, k}, false, true, false, true};
  LayerReplay r(plan, c.ctx, nullptr);
  INFO(r.label().text());
  CHECK((r.label().library == "cuBLASLt" || r.label().library == "rooflens"));
  CHECK(r.label().note.rfind("fastest of ", 0) == 0);
  r.launch(nullptr);
  auto h = host_buffers(r);
  std::vector<float> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = h[2][j];
      for (int64_t q = 0; q < k; ++q) s += static_cast<double>(h[0][i * k + q]) * h[1][j * k + q];
      want[i * n + j] = static_cast<float>(s);
    }
  CHECK(max_rel_error(h[3], want, 0.5) < 3e-2);
  // An identical layer reuses the choice without timing again.
  LayerReplay again(plan, c.ctx, nullptr);
  CHECK(again.label().detail == r.label().detail);
  CHECK(again.label().note.find("identical layer") != std::string::npos);
}

TEST_CASE(
    "weight-only int4 GEMMs as the replay runs them (GEMV or dequantize + cuBLASLt) match "
    "the host",
    "[vendor]") {
  Context c(true);
  const int64_t n = 192, k = 1024, group = 128;
  for (int64_t m : {2, 100}) {  // a decode's rows (both candidates) and a prefill's (cuBLASLt)
    DYNAMIC_SECTION("m=" << m) {
      ReplayPlan plan;
      plan.node = 12;
      plan.precision = Precision::bf16;
      plan.inputs = {buffer(DType::bf16, {m, k}), buffer(DType::u8, {n, k / 2}),
                     buffer(DType::bf16, {n, k / group})};
      plan.inputs[1].index_bound = 256;
      plan.outputs = {buffer(DType::bf16, {m, n})};
      plan.kernel = WeightOnlyGemmPlan{GemmDims{1, m, n, k}, 4, group, false};
      LayerReplay r(plan, c.ctx, nullptr);
      INFO(r.label().text());
      if (m > kWeightOnlyGemvMaxRows) CHECK(r.label().library == "rooflens + cuBLASLt");
      r.launch(nullptr);
      auto h = host_buffers(r);
      // W as the winning kernel reads the bytes: the CUDA-core GEMV row-major, exact; the others
      // in the replay's tiles (kernels/weight_only.hpp), each weight rounded to bf16.
      bool row_major = r.label().detail.find("row-major") != std::string::npos;
      std::vector<float> w(static_cast<size_t>(n * k));
      if (row_major)
        for (int64_t at = 0; at < n * k; ++at) {
          auto byte = static_cast<int>(h[1][at / 2]);
          w[at] = static_cast<float>((at % 2 ? byte >> 4 : byte & 0xF) - 8) * h[2][at / group];
        }
      else
        for (int64_t rt = 0; rt < n / 16; ++rt)
          for (int64_t ct = 0; ct < k / 64; ++ct)
            for (int lane = 0; lane < 32; ++lane)
              for (int v = 0; v < 32; ++v) {
                TilePosition p = tile_position(4, lane, v);
                auto byte = static_cast<int>(h[1][tile_offset(4, k, rt, ct) + 16 * lane + p.byte]);
                int64_t row = rt * 16 + p.row, kk = ct * 64 + p.kk;
                w[row * k + kk] = round_to_bf16(static_cast<float>(((byte >> p.shift) & 0xF) - 8) *
                                                h[2][row * (k / group) + kk / group]);
              }
      std::vector<float> want(static_cast<size_t>(m * n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t t = 0; t < k; ++t) s += static_cast<double>(h[0][i * k + t]) * w[j * k + t];
          want[i * n + j] = static_cast<float>(s);
        }
      CHECK(max_rel_error(h[3], want, 1.0) < 1e-2);  // outputs of ~12, summed in fp32
    }
  }
}

TEST_CASE("MoE experts as batched cuBLASLt GEMMs match the host under uniform routing",
          "[vendor]") {
  Context c(true);
  for (int64_t tokens : {3, 40}) {  // decode-like (fewer assignments than experts) and prefill-like
    DYNAMIC_SECTION("tokens " << tokens) {
      MoeDims m{tokens, 64, 96, 8, 2, true};
      ReplayPlan plan;
      plan.node = 11;
      plan.precision = Precision::bf16;
      // Experts as engines store them, [E, n, k]: gate and up [E, inter, hidden], down
      // [E, hidden, inter].
      plan.inputs = {buffer(DType::bf16, {m.tokens, m.hidden}),
                     buffer(DType::bf16, {m.tokens, m.experts}),
                     buffer(DType::bf16, {m.experts, m.inter, m.hidden}),
                     buffer(DType::bf16, {m.experts, m.hidden, m.inter}),
                     buffer(DType::bf16, {m.experts, m.inter, m.hidden})};
      plan.outputs = {buffer(DType::bf16, {m.tokens, m.hidden})};
      plan.kernel = MoePlan{m};
      LayerReplay r(plan, c.ctx, nullptr);
      INFO(r.label().text());
      CHECK(r.label().library == "cuBLASLt + rooflens");
      r.launch(nullptr);
      auto h = host_buffers(r);
      const auto &x = h[0], &w1 = h[2], &w2 = h[3], &w3 = h[4];
      std::vector<float> want(static_cast<size_t>(m.tokens * m.hidden), 0.f);
      for (int64_t t = 0; t < m.tokens; ++t)
        for (int64_t j = 0; j < m.k; ++j) {
          int64_t e = (t * m.k + j) % m.experts;
          std::vector<double> act(static_cast<size_t>(m.inter));
          for (int64_t i = 0; i < m.inter; ++i) {
            double g = 0, u = 0;
            for (int64_t q = 0; q < m.hidden; ++q) {
              g += static_cast<double>(x[t * m.hidden + q]) * w1[(e * m.inter + i) * m.hidden + q];
              u += static_cast<double>(x[t * m.hidden + q]) * w3[(e * m.inter + i) * m.hidden + q];
            }
            act[i] = g / (1 + std::exp(-g)) * u;
          }
          for (int64_t o = 0; o < m.hidden; ++o) {
            double s = 0;
            for (int64_t i = 0; i < m.inter; ++i)
              s += act[i] * w2[(e * m.hidden + o) * m.inter + i];
            want[t * m.hidden + o] += static_cast<float>(s);
          }
        }
      CHECK(max_rel_error(h[5], want, 0.5) < 5e-2);
    }
  }
}

TEST_CASE(
    "cuDNN convolution in NHWC (the layout deployments run) matches the host on the same logical "
    "tensors",
    "[cudnn]") {
  const cudnn::Runtime& rt = cudnn::Runtime::load("");
  if (!rt.available()) {
    WARN("skipped: " << rt.status());
    return;
  }
  ConvDims c{2, 16, 32, 1, {9, 9}, {3, 3}, {5, 5}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false};
  cudnn::ConvSpec s{};
  s.nhwc = true;
  s.dtype = DType::f32;
  s.tensor_cores = false;
  s.n = 2, s.c = 16, s.h = 9, s.w = 9, s.k = 32, s.kh = 3, s.kw = 3, s.oh = 5, s.ow = 5;
  s.pad_h = s.pad_w = 1, s.stride_h = s.stride_w = 2;
  s.bias = true;
  cudnn::Built built = rt.plugin()->conv(s);
  INFO(built.error);
  REQUIRE(built.op);
  gpu_test::Tensor x(DType::f32, 2 * 16 * 81, 91), w(DType::f32, 32 * 16 * 9, 92),
      b(DType::f32, 32, 93), y(DType::f32, 2 * 32 * 25, 94);
  DeviceBuffer ws(static_cast<size_t>(std::max<int64_t>(built.op->workspace_bytes(0), 16)));
  REQUIRE(built.op->execute(0, {x.get(), w.get(), y.get(), b.get()}, ws.get(), nullptr).empty());
  // The device buffers hold NHWC (and KRSC filters): the host reference reads them so.
  auto hx = x.host(), hw = w.host(), hb = b.host(), hy = y.host();
  std::vector<float> x_nchw(hx.size()), w_kcrs(hw.size()), y_nchw(hy.size());
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < 16; ++ch)
      for (int i = 0; i < 81; ++i) x_nchw[(n * 16 + ch) * 81 + i] = hx[(n * 81 + i) * 16 + ch];
  for (int k = 0; k < 32; ++k)
    for (int ch = 0; ch < 16; ++ch)
      for (int i = 0; i < 9; ++i) w_kcrs[(k * 16 + ch) * 9 + i] = hw[(k * 9 + i) * 16 + ch];
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 32; ++k)
      for (int i = 0; i < 25; ++i) y_nchw[(n * 32 + k) * 25 + i] = hy[(n * 25 + i) * 32 + k];
  CHECK(max_rel_error(y_nchw, host_conv(x_nchw, w_kcrs, &hb, c), 0.5) < 1e-4);
}

TEST_CASE("a pick from the tuning cache runs untimed when its kernel is among the candidates",
          "[vendor][tuning]") {
  int timed = 0, launched = -1;
  auto candidates = [&] {
    std::vector<Runner> out;
    for (int i = 0; i < 3; ++i)
      out.emplace_back(ReplayLabel{"cuBLASLt", "algo " + std::to_string(i), ""},
                       [&launched, i](cudaStream_t) { launched = i; });
    return out;
  };
  KernelChoices cache{{"gemm", {2, 3, "cuBLASLt: algo 2", true}},
                      {"moved", {0, 3, "cuBLASLt: algo 1", true}},  // the index is stale
                      {"gone", {1, 3, "cuBLASLt: algo 9", true}}};  // no longer a candidate
  ReplayContext ctx;
  ctx.choices = &cache;
  // Candidate 0 times fastest, so a pick other than 0 can only have come from the cache.
  ctx.time = [&](const std::function<void(cudaStream_t)>& launch) {
    ++timed;
    launch(nullptr);
    return launched == 0 ? 1e-6 : 2e-6;
  };
  Runner r = pick_fastest(candidates(), ctx, "gemm", nullptr);
  CHECK(r.label().detail == "algo 2");
  CHECK(r.label().note == "fastest of 3 in the tuning cache");
  CHECK(timed == 0);
  CHECK(pick_fastest(candidates(), ctx, "moved", nullptr).label().detail == "algo 1");
  CHECK(timed == 0);
  // A kernel the cache names but this library no longer offers: timed afresh, the cache mended.
  CHECK(pick_fastest(candidates(), ctx, "gone", nullptr).label().detail == "algo 0");
  CHECK(timed > 0);
  CHECK(cache.at("gone").kernel == "cuBLASLt: algo 0");
  CHECK_FALSE(cache.at("gone").from_file);
  // A new problem is timed and added.
  CHECK(pick_fastest(candidates(), ctx, "new", nullptr).label().detail == "algo 0");
  CHECK(cache.at("new").index == 0);
}
