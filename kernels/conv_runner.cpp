// Convolution layers: cuDNN's engines (bias fused), the fastest kept; where cuDNN is absent or
// has no engine, our im2col + cuBLASLt lowering, labelled with the reason.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/cudnn_plugin_api.hpp"
#include "kernels/memory_kernels.hpp"
#include "kernels/runner.hpp"

namespace rooflens::kernels {

namespace {

int elem_bytes(DType d) {
  return dtype_bits(d) / 8;
}

cudnn::ConvSpec conv_spec(const replay::ReplayPlan& p) {
  const auto& plan = p.as<replay::ConvPlan>();
  const ConvDims& c = plan.conv;
  bool two_d = c.kernel.size() > 1;
  cudnn::ConvSpec s;
  s.dtype = p.inputs[0].dtype;
  s.tensor_cores = p.precision != Precision::fp32;
  s.n = c.batch;
  s.c = c.in_channels;
  s.h = c.in_spatial[0];
  s.w = two_d ? c.in_spatial[1] : 1;
  s.k = c.out_channels;
  s.kh = c.kernel[0];
  s.kw = two_d ? c.kernel[1] : 1;
  s.groups = c.groups;
  s.oh = c.out_spatial[0];
  s.ow = two_d ? c.out_spatial[1] : 1;
  // ONNX pads are (begin..., end...); cuDNN takes one symmetric pad per dim.
  s.pad_h = c.pads[0];
  s.pad_w = two_d ? c.pads[1] : 0;
  s.stride_h = c.strides[0];
  s.stride_w = two_d ? c.strides[1] : 1;
  s.dil_h = c.dilations[0];
  s.dil_w = two_d ? c.dilations[1] : 1;
  s.bias = plan.bias;
  return s;
}

bool symmetric_pads(const ConvDims& c) {
  size_t n = c.kernel.size();
  for (size_t i = 0; i < n; ++i)
    if (c.pads[i] != c.pads[i + n]) return false;
  return true;
}

// im2col (skipped for pointwise convolutions) and one cuBLASLt GEMM per image, then the bias.
Runner im2col_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                     const std::string& why) {
  const auto& plan = p.as<replay::ConvPlan>();
  const ConvDims& c = plan.conv;
  DType dt = p.inputs[0].dtype;
  GemmShape g;
  g.precision = p.precision;
  g.out = p.outputs[0].dtype;
  g.dims = conv_image_gemm(c);
  g.a_shared = false;
  g.b_shared = false;
  g.b_kn = true;
  struct State {
    std::unique_ptr<Gemm> gemm;
    DeviceBuffer columns;
  };
  auto st = std::make_shared<State>();
  st->gemm = std::make_unique<Gemm>(*ctx.lt, g);
  int64_t kel = 1, osp = 1;
  for (int64_t k : c.kernel) kel *= k;
  for (int64_t o : c.out_spatial) osp *= o;
  if (!plan.pointwise)
    st->columns = DeviceBuffer(static_cast<size_t>(c.in_channels * kel * osp * elem_bytes(dt)));
  bool two_d = c.kernel.size() > 1;
  int64_t kh = c.kernel[0], kw = two_d ? c.kernel[1] : 1, h = c.in_spatial[0],
          w = two_d ? c.in_spatial[1] : 1;
  int64_t oh = c.out_spatial[0], ow = two_d ? c.out_spatial[1] : 1, sh = c.strides[0],
          sw = two_d ? c.strides[1] : 1;
  int64_t dh = c.dilations[0], dw = two_d ? c.dilations[1] : 1, ph = c.pads[0],
          pw = two_d ? c.pads[1] : 0;
  int64_t image_in = c.in_channels * h * w, image_out = c.out_channels * oh * ow;
  int eb = elem_bytes(dt);
  const char* x = static_cast<const char*>(b.in(0));
  const void* weights = b.in(1);
  const void* bias = plan.bias ? b.in(2) : nullptr;
  char* y = static_cast<char*>(b.out(0));
  Shape out_shape = p.outputs[0].shape;
  int64_t batch = c.batch, in_channels = c.in_channels, out_channels = c.out_channels;
  State* raw = st.get();
  auto launch = [=](cudaStream_t s) {
    for (int64_t n = 0; n < batch; ++n) {
      const char* image = x + n * image_in * eb;
      const void* cols = image;
      if (raw->columns.get()) {
        im2col(image, raw->columns.get(), dt, in_channels, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh,
               dw, s);
        cols = raw->columns.get();
      }
      raw->gemm->run(weights, cols, y + n * image_out * eb, nullptr, s);
    }
    if (bias)
      elementwise(EwOp::add, {{y, dt, out_shape}, {bias, dt, {out_channels, 1, 1}}}, y, dt,
                  out_shape, s);
  };
  std::string detail =
      plan.pointwise ? "cuBLASLt GEMM per image" : "im2col + cuBLASLt GEMM per image";
  if (plan.bias) detail += " + bias kernel";
  return Runner(ReplayLabel{"rooflens", detail, why}, launch, st);
}

// Our depthwise kernels take 1-D and 2-D windows.
bool depthwise(const ConvDims& c) {
  return is_depthwise(c) && c.kernel.size() <= 2;
}

// Depthwise convolutions on our window kernels (a thread per output pixel, or per four along a
// row), as PyTorch's own depthwise kernels run them: cuDNN's engines for NCHW are several times
// slower on them (MobileNetV3, docs/profile.md), and where one is faster it wins the timing.
std::vector<Runner> depthwise_runners(const replay::ReplayPlan& p, const LayerBuffers& b,
                                      const std::string& why) {
  const ConvDims& c = p.as<replay::ConvPlan>().conv;
  bool two_d = c.kernel.size() > 1;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  DepthwiseConv2d d{i32(c.batch),          i32(c.in_channels),
                    i32(c.in_spatial[0]),  i32(two_d ? c.in_spatial[1] : 1),
                    i32(c.out_spatial[0]), i32(two_d ? c.out_spatial[1] : 1),
                    i32(c.kernel[0]),      i32(two_d ? c.kernel[1] : 1),
                    i32(c.strides[0]),     i32(two_d ? c.strides[1] : 1),
                    i32(c.pads[0]),        i32(two_d ? c.pads[1] : 0),
                    i32(c.dilations[0]),   i32(two_d ? c.dilations[1] : 1)};
  DType dt = p.inputs[0].dtype;
  const void *x = b.in(0), *w = b.in(1), *bias = p.as<replay::ConvPlan>().bias ? b.in(2) : nullptr;
  void* y = b.out(0);
  std::vector<Runner> out;
  out.emplace_back(ReplayLabel{"rooflens", "depthwise window kernel", why},
                   [=](cudaStream_t s) { depthwise_conv2d(x, w, bias, y, dt, d, s); });
  if (depthwise_rows_takes(d))
    out.emplace_back(
        ReplayLabel{
            "rooflens",
            fmt::format("depthwise window kernel, {} outputs a thread", kDepthwiseRowOutputs), why},
        [=](cudaStream_t s) { depthwise_conv2d(x, w, bias, y, dt, d, s, true); });
  return out;
}

// A depthwise convolution with a bias as PyTorch's channels_last runs it: cuDNN's NHWC engines
// without the bias (one is its specialised depthwise kernel), then a bias add.
void add_nhwc_then_bias_candidates(const replay::ReplayPlan& p, const LayerBuffers& b,
                                   const ReplayContext& ctx, cudnn::ConvSpec spec,
                                   std::vector<Runner>& candidates) {
  spec.bias = false;
  spec.nhwc = true;
  const Shape& nchw = p.outputs[0].shape;
  if (nchw.size() != 4) return;
  cudnn::Built built = ctx.cudnn->conv(spec);
  if (!built.op) return;
  DType dt = p.inputs[0].dtype;
  void* y = b.out(0);
  const void* bias = b.in(2);
  std::vector<void*> tensors{b.in(0), b.in(1), y, nullptr};
  std::shared_ptr<cudnn::Operation> op(std::move(built.op));
  // The bias along the channels, innermost in NHWC.
  Shape out{nchw[0], nchw[2], nchw[3], nchw[1]}, along{nchw[1]};
  for (int i = 0; i < op->plan_count(); ++i) {
    auto ws = std::make_shared<DeviceBuffer>(static_cast<size_t>(op->workspace_bytes(i)));
    auto state = std::make_shared<
        std::pair<std::shared_ptr<cudnn::Operation>, std::shared_ptr<DeviceBuffer>>>(op, ws);
    candidates.emplace_back(
        ReplayLabel{"cuDNN", fmt::format("NHWC {} + bias kernel", op->plan_name(i)), ""},
        [op, ws, i, tensors, y, bias, dt, out, along](cudaStream_t st) {
          std::string err = op->execute(i, tensors, ws->get(), st);
          if (!err.empty()) throw CudaError("cuDNN convolution: " + err);
          elementwise(EwOp::add, {{y, dt, out}, {bias, dt, along}}, y, dt, out, st);
        },
        state);
  }
}

}  // namespace

Runner conv_runner(const replay::ReplayPlan& p, const LayerBuffers& b, const ReplayContext& ctx,
                   cudaStream_t s) {
  const ConvDims& c = p.as<replay::ConvPlan>().conv;
  std::string why;
  if (!ctx.cudnn)
    why = ctx.cudnn_status;
  else if (!symmetric_pads(c))
    why = "cuDNN takes symmetric padding only";
  else {
    // Both layouts' engines as candidates: NCHW as the graph stores it, NHWC as deployments
    // run it; the buffers are the same bytes either way.
    cudnn::ConvSpec spec = conv_spec(p);
    std::vector<void*> tensors{b.in(0), b.in(1), b.out(0), spec.bias ? b.in(2) : nullptr};
    std::vector<Runner> candidates;
    std::vector<std::string> errors;
    // A depthwise convolution with a bias: cuDNN's NHWC engines then a bias add, and our window
    // kernels with the bias in them (below). cuDNN's engines with the bias fused and its NCHW ones
    // never won on the depthwise layers of MobileNetV3, EfficientNet-B0 and ConvNeXt-T (several to
    // a hundred times slower, H100, docs/profile.md), and each took a quarter of a second to build.
    bool depthwise_bias = depthwise(c) && spec.bias;
    for (bool nhwc : {false, true}) {
      if (depthwise_bias) break;
      spec.nhwc = nhwc;
      cudnn::Built built = ctx.cudnn->conv(spec);
      if (!built.op) {
        errors.push_back(fmt::format("{}: {}", nhwc ? "NHWC" : "NCHW", built.error));
        continue;
      }
      std::shared_ptr<cudnn::Operation> op(std::move(built.op));
      for (int i = 0; i < op->plan_count(); ++i) {
        auto ws = std::make_shared<DeviceBuffer>(static_cast<size_t>(op->workspace_bytes(i)));
        auto state = std::make_shared<
            std::pair<std::shared_ptr<cudnn::Operation>, std::shared_ptr<DeviceBuffer>>>(op, ws);
        candidates.emplace_back(
            ReplayLabel{"cuDNN", fmt::format("{} {}", nhwc ? "NHWC" : "NCHW", op->plan_name(i)),
                        ""},
            [op, ws, i, tensors](cudaStream_t st) {
              std::string err = op->execute(i, tensors, ws->get(), st);
              if (!err.empty()) throw CudaError("cuDNN convolution: " + err);
            },
            state);
      }
    }
    if (depthwise(c)) {
      for (Runner& r : depthwise_runners(p, b, "")) candidates.push_back(std::move(r));
      if (spec.bias) add_nhwc_then_bias_candidates(p, b, ctx, spec, candidates);
    }
    if (!candidates.empty()) {
      std::string key =
          fmt::format("conv {} {}x{}x{}x{} k{} {}x{} g{} p{}{} s{}{} d{}{} b{} tc{}",
                      dtype_name(spec.dtype), spec.n, spec.c, spec.h, spec.w, spec.k, spec.kh,
                      spec.kw, spec.groups, spec.pad_h, spec.pad_w, spec.stride_h, spec.stride_w,
                      spec.dil_h, spec.dil_w, spec.bias, spec.tensor_cores);
      return pick_fastest(std::move(candidates), ctx, key, s);
    }
    why = "cuDNN has no engine: " + fmt::format("{}", fmt::join(errors, "; "));
  }
  if (depthwise(c)) {
    std::string key =
        fmt::format("depthwise {} n{} c{} in {} k {} s {} p {} d {}", dtype_name(p.inputs[0].dtype),
                    c.batch, c.in_channels, fmt::join(c.in_spatial, "x"), fmt::join(c.kernel, "x"),
                    fmt::join(c.strides, "x"), fmt::join(c.pads, "x"), fmt::join(c.dilations, "x"));
    return pick_fastest(depthwise_runners(p, b, why), ctx, key, s);
  }
  return im2col_runner(p, b, ctx, why);
}

}  // namespace rooflens::kernels
