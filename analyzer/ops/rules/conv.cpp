// Convolutions: Conv (groups, depthwise, dilations, strides, pads, auto_pad) and ConvTranspose;
// the quantized ConvInteger (int32 out, no bias) and QLinearConv (requantized, bias at input 8).
#include <fmt/format.h>

#include <algorithm>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

struct ConvGeometry {
  int64_t batch, in_channels, out_channels, groups;
  Shape in_spatial, kernel, out_spatial;
  std::vector<int64_t> strides, pads, dilations;
};

std::vector<int64_t> attr_or(const Node& n, const char* key, size_t count, int64_t fill) {
  auto v = n.attr_ints(key);
  return v ? *v : std::vector<int64_t>(count, fill);
}

ConvGeometry conv_geometry(const Node& n, const Shape& x, const Shape& w, const InferContext* ctx) {
  auto fail = [&](const std::string& m) {
    if (ctx) ctx->fail(m);
    throw std::logic_error(m);
  };
  if (x.size() < 3 || w.size() != x.size())
    fail(fmt::format("input rank {} and weight rank {} do not fit a convolution", x.size(),
                     w.size()));
  bool transpose = n.op_type == "ConvTranspose";
  size_t sd = x.size() - 2;
  ConvGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.groups = n.attr_int("group", 1);
  if (g.groups <= 0) fail("group must be positive");
  g.in_spatial.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (auto ks = n.attr_ints("kernel_shape"); ks && ks->size() == sd) g.kernel = *ks;
  if (!transpose) {
    if (checked_mul(w[1], g.groups) != g.in_channels)
      fail(fmt::format("weight expects {} input channels x {} groups, input has {}", w[1], g.groups,
                       g.in_channels));
    g.out_channels = w[0];
  } else {
    if (w[0] != g.in_channels)
      fail(fmt::format("weight expects {} input channels, input has {}", w[0], g.in_channels));
    g.out_channels = checked_mul(w[1], g.groups);
  }
  auto strides = attr_or(n, "strides", sd, 1), dil = attr_or(n, "dilations", sd, 1);
  auto pads = attr_or(n, "pads", 2 * sd, 0);
  auto out_pad = attr_or(n, "output_padding", sd, 0);
  if (strides.size() != sd || dil.size() != sd || pads.size() != 2 * sd || out_pad.size() != sd)
    fail("strides/dilations/pads/output_padding do not match the spatial rank");
  if (transpose && g.out_channels == 0) fail("no output channels");
  g.strides = strides;
  g.dilations = dil;
  g.pads = pads;
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  auto out_shape = n.attr_ints("output_shape");
  for (size_t i = 0; i < sd; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0) fail("strides and dilations must be positive");
    int64_t eff_k = dil[i] * (g.kernel[i] - 1) + 1, in = g.in_spatial[i], out;
    if (transpose) {
      if (out_shape && out_shape->size() >= sd)
        out = (*out_shape)[out_shape->size() - sd + i];
      else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
        out = in * strides[i];
      else if (auto_pad == "VALID")
        out = strides[i] * (in - 1) + out_pad[i] + eff_k;
      else
        out = strides[i] * (in - 1) + out_pad[i] + eff_k - pads[i] - pads[i + sd];
    } else {
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out = ceil_div(in, strides[i]);
        int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[i] + eff_k - in);  // implied padding
        g.pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        g.pads[i + sd] = total - g.pads[i];
      } else if (auto_pad == "VALID") {
        out = (in - eff_k) / strides[i] + 1;
        g.pads[i] = g.pads[i + sd] = 0;
      } else {
        out = (in + pads[i] + pads[i + sd] - eff_k) / strides[i] + 1;
      }
    }
    if (out <= 0)
      fail(
          fmt::format("spatial dim {} would be {} (input {}, kernel {})", i, out, in, g.kernel[i]));
    g.out_spatial.push_back(out);
  }
  return g;
}

// Where the weight and the bias are: QLinearConv interleaves scales and zero points; ConvInteger's
// third input is a zero point, not a bias.
size_t weight_input(const Node& n) {
  return n.op_type == "QLinearConv" ? 3 : 1;
}
int bias_input(const Node& n) {
  return n.op_type == "QLinearConv" ? 8 : n.op_type == "ConvInteger" ? -1 : 2;
}

void infer_conv(InferContext& ctx) {
  const Node& n = ctx.node();
  ConvGeometry g = conv_geometry(n, ctx.shape(0), ctx.shape(weight_input(n)), &ctx);
  int bias = bias_input(n);
  if (bias >= 0 && ctx.has_input(bias) && ctx.shape(bias) != Shape{g.out_channels})
    ctx.fail(fmt::format("bias has shape {}, expected [{}]", shape_string(ctx.shape(bias)),
                         g.out_channels));
  Shape out{g.batch, g.out_channels};
  out.insert(out.end(), g.out_spatial.begin(), g.out_spatial.end());
  DType dtype = n.op_type == "ConvInteger"                       ? DType::i32
                : n.op_type == "QLinearConv" && ctx.has_input(7) ? ctx.dtype(7)
                                                                 : ctx.dtype(0);
  ctx.set_output(0, dtype, out);
}

NodeCost cost_conv(const CostContext& ctx) {
  const Node& n = ctx.node();
  ConvGeometry g = conv_geometry(n, ctx.in_shape(0), ctx.in_shape(weight_input(n)), nullptr);
  int64_t k = checked_product(g.kernel, "kernel"),
          out_sp = checked_product(g.out_spatial, "conv output");
  int64_t in_sp = checked_product(g.in_spatial, "conv input");
  NodeCost c;
  if (n.op_type ==
      "ConvTranspose")  // each input element scatters into out_channels/groups * k outputs
    c.macs = conv_macs(g.batch, g.in_channels, in_sp, g.out_channels / g.groups, k);
  else
    c.macs = conv_macs(g.batch, g.out_channels, out_sp, g.in_channels / g.groups, k);
  c.flops = checked_mul(2, *c.macs, "conv FLOPs");
  if (int bias = bias_input(n); bias >= 0 && ctx.has_input(bias))
    c.flops = checked_add(c.flops, ctx.out_elements(0), "conv FLOPs");
  // QLinearConv requantizes its int32 accumulators: a multiply and an add per output.
  if (n.op_type == "QLinearConv")
    c.flops = checked_add(c.flops, checked_mul(2, ctx.out_elements(0)), "conv FLOPs");
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  // Implicit GEMM: M = batch * output pixels, N = output channels, K = reduction per output.
  c.parallel_tiles = gemm_tiles(GemmDims{1, checked_mul(g.batch, out_sp), g.out_channels,
                                         checked_mul(g.in_channels / g.groups, k)});
  // Depthwise convolutions (one input channel per group) have no reduction for the matrix units.
  c.tensor_cores = g.in_channels / g.groups > 1;
  c.tiled = c.tensor_cores && checked_mul(g.batch, out_sp) > kGemvMaxRows;
  if (!c.tensor_cores && n.op_type == "Conv")  // a depthwise window kernel on the CUDA cores
    c.instructions =
        static_cast<double>(ctx.out_elements(0)) *
        (kDepthwiseKernelInstructions + kDepthwiseInstructionsPerElement * static_cast<double>(k));
  c.kernel.conv = ConvDims{g.batch,
                           g.in_channels,
                           g.out_channels,
                           g.groups,
                           g.in_spatial,
                           g.kernel,
                           g.out_spatial,
                           g.strides,
                           g.pads,
                           g.dilations,
                           n.op_type == "ConvTranspose"};
  return c;
}

}  // namespace

void register_conv_rules(RuleRegistry& r) {
  r.add({"", "Conv", OpFamily::conv, infer_conv, cost_conv});
  r.add({"", "ConvTranspose", OpFamily::conv, infer_conv, cost_conv});
  r.add({"", "ConvInteger", OpFamily::conv, infer_conv, cost_conv});
  r.add({"", "QLinearConv", OpFamily::conv, infer_conv, cost_conv});
}

}  // namespace rooflens
