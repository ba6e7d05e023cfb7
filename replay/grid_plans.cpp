#include "replay/grid_plans.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/perf_model.hpp"

namespace rooflens::replay {

namespace {

BufferSpec buffer(DType d, Shape s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return BufferSpec{d, std::move(s), storage_bytes(d, n), 0};
}

int64_t as_int(double v) {
  return std::max<int64_t>(1, std::llround(v));
}

// A dim of alignment exactly `align` next to `v` (a multiple of 128).
int64_t aligned_dim(int64_t v, int64_t align) {
  return align >= 128 ? v : v + align;
}

std::vector<std::string> split(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos;
       start = dot + 1, dot = key.find('.', start))
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

ReplayPlan gemm_plan(Precision p, int64_t m, int64_t n, int64_t k) {
  ReplayPlan plan;
  plan.precision = p;
  DType in = storage_dtype(p), out = p == Precision::fp8 ? DType::bf16 : in;
  plan.inputs = {buffer(in, {m, k}), buffer(in, {n, k})};
  plan.outputs = {buffer(out, {m, n})};
  plan.kernel = GemmPlan{GemmDims{1, m, n, k}, false, true, false, false};
  return plan;
}

// One MoE projection as engines lay it out: each expert's rows contiguous (sorted by expert),
// weights [experts, n, k]; one batched GEMM over the experts.
ReplayPlan expert_gemm_plan(Precision p, int64_t experts, int64_t rows, int64_t n, int64_t k) {
  ReplayPlan plan;
  plan.precision = p;
  DType in = storage_dtype(p), out = p == Precision::fp8 ? DType::bf16 : in;
  plan.inputs = {buffer(in, {experts, rows, k}), buffer(in, {experts, n, k})};
  plan.outputs = {buffer(out, {experts, rows, n})};
  plan.kernel = GemmPlan{GemmDims{experts, rows, n, k}, false, false, false, false};
  return plan;
}

// A weight-only quantized GEMM of bf16 activations: `bits`-bit weights [n, k] in the tables' groups
// (a per-channel int8 scale is 1.6% fewer bytes).
ReplayPlan weight_only_plan(int bits, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kGroup = kWeightOnlyTableGroup;
  ReplayPlan plan;
  plan.precision = Precision::bf16;
  DType t = DType::bf16;
  plan.inputs = {buffer(t, {m, k}), buffer(DType::u8, {n, k * bits / 8}),
                 buffer(t, {n, k / kGroup})};
  plan.inputs[1].index_bound = 256;
  plan.outputs = {buffer(t, {m, n})};
  plan.kernel = WeightOnlyGemmPlan{GemmDims{1, m, n, k}, bits, kGroup, false};
  return plan;
}

// Over an fp8 cache a prefill's queries are fp8 too (the planner's rule).
ReplayPlan attention_plan(AttentionDims d, DType cache = DType::bf16) {
  ReplayPlan plan;
  plan.precision = Precision::bf16;
  DType t = DType::bf16, q = d.q_len > 1 ? cache : t;
  plan.inputs = {buffer(q, {d.batch, d.q_len, d.q_heads, d.head_dim_qk}),
                 buffer(cache, {d.batch, d.kv_heads, d.kv_len, d.head_dim_qk}),
                 buffer(cache, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v})};
  plan.outputs = {buffer(q, {d.batch, d.q_len, d.q_heads, d.head_dim_v})};
  plan.kernel = AttentionPlan{d, false};
  return plan;
}

// `pixels` output pixels as square images of side `image` (as many as make them up) or one
// smaller square image; groups = in = out for a depthwise class. Every class has a bias: every
// convolution of an exported CNN has one (the BatchNorm the export folds into it, or its own; all
// 209 of ResNet-50's, EfficientNet-B0's, ConvNeXt-T's and MobileNetV3-small's), and cuDNN picks
// other engines for it (MobileNetV3-small b64's 22 spatial pointwise layers: 160 us with their
// biases, 125 us without, on the H100).
ReplayPlan conv_plan(Precision p, int64_t kernel, int64_t stride, int64_t pixels, int64_t out,
                     int64_t in, int64_t groups = 1, int64_t image = 112) {
  int64_t batch = pixels > image * image ? pixels / (image * image) : 1;
  auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(pixels / batch))));
  int64_t pad = kernel == stride ? 0 : kernel / 2;  // patch embeddings do not pad
  ConvDims c{batch,
             in,
             out,
             groups,
             {side * stride, side * stride},
             {kernel, kernel},
             {side, side},
             {stride, stride},
             {pad, pad, pad, pad},
             {1, 1},
             false};
  DType t = storage_dtype(p);
  ReplayPlan plan;
  plan.precision = p;
  plan.inputs = {buffer(t, {batch, in, side * stride, side * stride}),
                 buffer(t, {out, in / groups, kernel, kernel})};
  plan.inputs.push_back(buffer(t, {out}));  // the bias
  plan.outputs = {buffer(t, {batch, out, side, side})};
  plan.kernel = ConvPlan{c, kernel == 1 && stride == 1, /*bias=*/true};
  return plan;
}

ReplayPlan memory_plan(const std::string& cls, const std::vector<double>& x) {
  ReplayPlan plan;
  plan.precision = Precision::bf16;
  DType t = DType::bf16;
  if (x.size() == 3) {  // rows of cols; align 1: rows that are not whole 16-byte vectors
    int64_t rows = as_int(x[1]), cols = as_int(x[2]) + (x[0] < 8 ? 1 : 0);
    plan.inputs = {buffer(t, {rows, cols})};
    if (cls == "norm") {
      plan.inputs.push_back(buffer(t, {cols}));
      plan.outputs = {buffer(t, {rows, cols})};
      plan.kernel = NormPlan{rows, cols, true, false, false};
    } else if (cls == "softmax") {
      plan.outputs = {buffer(t, {rows, cols})};
      plan.kernel = SoftmaxPlan{rows, cols, false};
    } else {
      plan.outputs = {buffer(t, {rows, 1})};
      plan.kernel = ReducePlan{rows, cols, RowReduce::sum};
    }
    return plan;
  }
  double bytes = x[0];
  if (cls ==
      "elementwise") {  // a + b: two reads and a write of 2-byte elements, whole 16-byte vectors
    int64_t n = std::max<int64_t>(8, as_int(bytes / 6) / 8 * 8);
    plan.inputs = {buffer(t, {n}), buffer(t, {n})};
    plan.outputs = {buffer(t, {n})};
    plan.kernel = ElementwisePlan{EwOp::add};
  } else if (cls == "broadcast") {  // a bias add over rows of 1024
    int64_t rows = as_int(bytes / 4096);
    plan.inputs = {buffer(t, {rows, 1024}), buffer(t, {1024})};
    plan.outputs = {buffer(t, {rows, 1024})};
    plan.kernel = ElementwisePlan{EwOp::add};
  } else if (cls == "transpose") {  // a square matrix
    auto side = std::max<int64_t>(1, std::llround(std::sqrt(bytes / 4)));
    plan.inputs = {buffer(t, {side, side})};
    plan.outputs = {buffer(t, {side, side})};
    plan.kernel = CopyPlan{{CopyPart{0, 1, {side, side}, {1, side}, {side, 1}, 0, 0}}, 2};
  } else if (cls == "copy") {  // a concat of two halves along the rows' last dim
    int64_t rows = as_int(bytes / 4096);
    plan.inputs = {buffer(t, {rows, 512}), buffer(t, {rows, 512})};
    plan.outputs = {buffer(t, {rows, 1024})};
    plan.kernel = ConcatSplitPlan{false, {512, 512}, rows, 2};
  } else if (cls == "gather") {  // embedding rows of 512 from a 65536-row table
    int64_t rows = as_int(bytes / 2048);
    plan.inputs = {buffer(t, {65536, 512}), buffer(DType::i64, {rows})};
    plan.inputs[1].index_bound = 65536;
    plan.outputs = {buffer(t, {rows, 512})};
    plan.kernel = GatherPlan{1, 65536, rows, 512, 2};
  } else {
    throw InputError(fmt::format("no calibration plan for mem.{}", cls));
  }
  return plan;
}

}  // namespace

GridPlan plan_for_grid_point(const std::string& table, const std::vector<double>& x) {
  std::vector<std::string> k = split(table);
  GridPlan g;
  if (k[0] == "gemm" && x.size() == 4) {
    auto p = precision_from_name(k[1]);
    if (!p) throw InputError(fmt::format("table {}: unknown precision", table));
    // The class is set by N (output features, a vocabulary); K, a hidden size, stays aligned.
    int64_t align = as_int(x[0]), m = as_int(x[1]), n = as_int(x[2]), kk = as_int(x[3]);
    int64_t n2 = aligned_dim(n, align);
    g.plan = gemm_plan(*p, m, n2, kk);
    g.scale = static_cast<double>(n) / static_cast<double>(n2);
  } else if (k[0] == "moe" && x.size() == 4) {
    auto p = precision_from_name(k[1]);
    if (!p) throw InputError(fmt::format("table {}: unknown precision", table));
    g.plan = expert_gemm_plan(*p, as_int(x[0]), as_int(x[1]), as_int(x[2]), as_int(x[3]));
  } else if (k[0] == "woq" && x.size() == 3 && (k[1] == "int4" || k[1] == "int8")) {
    g.plan = weight_only_plan(k[1] == "int4" ? 4 : 8, as_int(x[0]), as_int(x[1]), as_int(x[2]));
  } else if (k[0] == "attn_prefill" && x.size() == 3) {
    int64_t d = as_int(x[0]), heads = as_int(x[1]), s = as_int(x[2]);
    g.plan = attention_plan(AttentionDims{1, heads, heads, s, s, d, d, k[2] == "causal", 0},
                            k[1] == "fp8" ? DType::f8e4m3fn : DType::bf16);
  } else if (k[0] == "attn_decode" && x.size() == 4) {
    int64_t d = as_int(x[0]), group = as_int(x[1]), kvh = as_int(x[2]), ctx = as_int(x[3]);
    int64_t per_seq =
        std::min<int64_t>(kvh, 8);  // sequences of 8 KV heads, as Llama-3 and Mixtral have
    g.plan = attention_plan(
        AttentionDims{kvh / per_seq, per_seq * group, per_seq, 1, ctx, d, d, false, 0},
        k.size() > 2 && k[2] == "kv_fp8" ? DType::f8e4m3fn : DType::bf16);
  } else if (k[0] == "conv" && (k.size() == 3 || k.size() == 4) &&
             x.size() == (is_depthwise_class(k[2]) ? 2u : 3u)) {
    auto p = precision_from_name(k[1]);
    auto cls = conv_kernel_stride(k[2]);
    if (!p || !cls) throw InputError(fmt::format("table {}: unknown convolution class", table));
    int64_t ch = as_int(x[1]);
    if (is_depthwise_class(k[2]))
      g.plan = conv_plan(*p, cls->first, cls->second, as_int(x[0]), ch, ch, ch,
                         depthwise_image_side(ch));
    else if (is_grouped_class(k[2]))  // x[2]: channels a group, at most all of them
      g.plan = conv_plan(*p, cls->first, cls->second, as_int(x[0]), ch, ch,
                         ch / std::clamp<int64_t>(as_int(x[2]), 1, ch), grouped_image_side(ch));
    else
      g.plan = conv_plan(*p, cls->first, cls->second, as_int(x[0]), as_int(x[1]), as_int(x[2]));
  } else if (k[0] == "mem" && k.size() == 2) {
    g.plan = memory_plan(k[1], x);
  } else {
    throw InputError(fmt::format("no calibration plan for table {}", table));
  }
  g.plan.path = table;
  g.plan.description = table;
  return g;
}

}  // namespace rooflens::replay
