// Normalizations and softmax: LayerNormalization, RMSNormalization, BatchNormalization,
// InstanceNormalization, GroupNormalization, LpNormalization, Softmax, LogSoftmax, Hardmax,
// and ONNX Runtime's fused Skip/Simplified layer norms (com.microsoft).
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

// Per element: mean (add), subtract, square, variance (add), normalize (mul), scale (mul),
// + bias (add) when present. Per row: two divides, + eps, rsqrt.
constexpr int64_t kLayerNormPerElement = 6;
constexpr int64_t kLayerNormPerRow = 4;
// RMS: square, add, normalize, scale per element; divide, + eps, rsqrt per row.
constexpr int64_t kRmsNormPerElement = 4;
constexpr int64_t kRmsNormPerRow = 3;

struct RowSplit {
  int64_t rows, row_size;
};

RowSplit split_at(const Shape& s, int64_t axis) {
  RowSplit r{1, 1};
  for (size_t i = 0; i < s.size(); ++i)
    (static_cast<int64_t>(i) < axis ? r.rows : r.row_size) *= s[i];
  return r;
}

int64_t norm_axis(const Node& n, int64_t rank) {
  int64_t a = n.attr_int("axis", -1);
  return a < 0 ? a + rank : a;
}

// Mean / inverse-std-dev side outputs: the leading dims, then 1 for every normalized dim.
Shape stats_shape(const Shape& x, int64_t axis) {
  Shape s(x.begin(), x.begin() + axis);
  s.resize(x.size(), 1);
  return s;
}

void infer_layer_norm_like(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(x.size()));
  bool skip = ctx.node().domain == "com.microsoft" && ctx.node().op_type.rfind("Skip", 0) == 0;
  ctx.set_output(0, ctx.dtype(0), x);
  if (skip) {
    ctx.set_output(1, DType::f32, stats_shape(x, axis));
    ctx.set_output(2, DType::f32, stats_shape(x, axis));
    ctx.set_output(3, ctx.dtype(0), x);
  } else {
    ctx.set_output(1, DType::f32, stats_shape(x, axis));
    ctx.set_output(2, DType::f32, stats_shape(x, axis));
  }
}

NodeCost cost_layer_norm_like(const CostContext& ctx, bool rms) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  RowSplit rs = split_at(x, norm_axis(n, static_cast<int64_t>(x.size())));
  bool skip = n.domain == "com.microsoft" && n.op_type.rfind("Skip", 0) == 0;
  // Inputs: X, [skip], scale, [bias]. Skip variants: X, skip, gamma, [beta], [bias].
  int64_t per = rms ? kRmsNormPerElement : kLayerNormPerElement;
  if (skip) {
    per += 1;                                  // + skip
    if (!rms && ctx.has_input(3)) per += 1;    // beta
    if (ctx.has_input(rms ? 3 : 4)) per += 1;  // + bias
  } else if (!rms && ctx.has_input(2)) {
    per += 1;  // bias
  }
  NodeCost c;
  int64_t elems = checked_mul(rs.rows, rs.row_size);
  c.flops = checked_add(checked_mul(elems, per),
                        checked_mul(rs.rows, rms ? kRmsNormPerRow : kLayerNormPerRow));
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.parallel_tiles = rs.rows;
  c.kernel.memory = MemoryKernel::norm;
  c.kernel.rows = rs.rows;
  c.kernel.cols = rs.row_size;
  return c;
}

void infer_same_as_input(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// Softmax family: the axis must exist (default 1 before opset 13, -1 after).
void infer_softmax(InferContext& ctx) {
  const Node& n = ctx.node();
  ctx.axis(n.attr_int("axis", n.opset < 13 ? 1 : -1), ctx.rank(0));
  infer_same_as_input(ctx);
}

void infer_instance_group_norm(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.size() < 3) ctx.fail("input needs (N, C, spatial...)");
  if (ctx.node().op_type == "GroupNormalization") {
    int64_t groups = ctx.node().attr_int("num_groups", 0);
    if (groups <= 0 || x[1] % groups != 0)
      ctx.fail(fmt::format("num_groups {} does not divide {} channels", groups, x[1]));
  }
  infer_same_as_input(ctx);
}

void infer_batch_norm(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.size() < 2) ctx.fail("BatchNormalization input needs a channel dim");
  for (size_t i = 1; i < 5 && i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.shape(i) != Shape{x[1]})
      ctx.fail(
          fmt::format("input {} has shape {}, expected [{}]", i, shape_string(ctx.shape(i)), x[1]));
  ctx.set_output(0, ctx.dtype(0), x);
  for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, ctx.dtype(1), Shape{x[1]});
}

NodeCost cost_batch_norm(const CostContext& ctx) {
  // Inference folds the statistics into one scale and shift: 2 FLOPs per element. Training
  // mode computes batch statistics like a layer norm over (N, spatial).
  bool training = ctx.node().attr_int("training_mode", 0) != 0;
  NodeCost c = rules::elementwise_cost(ctx, training ? kLayerNormPerElement + 1 : 2);
  return c;
}

NodeCost cost_instance_group_norm(const CostContext& ctx) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  int64_t groups = n.op_type == "GroupNormalization" ? n.attr_int("num_groups", 1) : x[1];
  int64_t rows = checked_mul(x[0], groups);
  NodeCost c;
  int64_t elems = ctx.in_elements(0);
  c.flops = checked_add(checked_mul(elems, kLayerNormPerElement + 1),
                        checked_mul(rows, kLayerNormPerRow));
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.parallel_tiles = rows;
  return c;
}

NodeCost cost_softmax(const CostContext& ctx, int64_t per_element) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = n.attr_int("axis", n.opset < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  NodeCost c = rules::elementwise_cost(ctx, per_element);
  // Before opset 13 the input is coerced to 2-D at `axis`; after, the softmax runs along it.
  int64_t row = n.opset < 13 ? split_at(x, axis).row_size : x[axis];
  c.parallel_tiles = ctx.in_elements(0) / std::max<int64_t>(row, 1);
  c.kernel.memory = MemoryKernel::softmax;
  c.kernel.rows = c.parallel_tiles;
  c.kernel.cols = row;
  return c;
}

}  // namespace

void register_norm_rules(RuleRegistry& r) {
  auto ln = [](const CostContext& c) { return cost_layer_norm_like(c, false); };
  auto rms = [](const CostContext& c) { return cost_layer_norm_like(c, true); };
  r.add({"", "LayerNormalization", OpFamily::norm, infer_layer_norm_like, ln});
  r.add({"", "RMSNormalization", OpFamily::norm, infer_layer_norm_like, rms});
  r.add({"com.microsoft", "SkipLayerNormalization", OpFamily::norm, infer_layer_norm_like, ln});
  r.add({"com.microsoft", "SimplifiedLayerNormalization", OpFamily::norm, infer_layer_norm_like,
         rms});
  r.add({"", "SimplifiedLayerNormalization", OpFamily::norm, infer_layer_norm_like, rms});
  r.add({"com.microsoft", "SkipSimplifiedLayerNormalization", OpFamily::norm, infer_layer_norm_like,
         rms});
  r.add({"", "BatchNormalization", OpFamily::norm, infer_batch_norm, cost_batch_norm});
  r.add({"", "InstanceNormalization", OpFamily::norm, infer_instance_group_norm,
         cost_instance_group_norm});
  r.add({"", "GroupNormalization", OpFamily::norm, infer_instance_group_norm,
         cost_instance_group_norm});
  // p=2: square, add, divide per element.
  r.add({"", "LpNormalization", OpFamily::norm, infer_softmax,
         [](const CostContext& c) { return rules::elementwise_cost(c, 3); }});
  r.add({"", "Softmax", OpFamily::softmax, infer_softmax,
         [](const CostContext& c) { return cost_softmax(c, kSoftmaxFlopsPerElement); }});
  // max, subtract, exp, sum, subtract log-sum.
  r.add({"", "LogSoftmax", OpFamily::softmax, infer_softmax,
         [](const CostContext& c) { return cost_softmax(c, 5); }});
  r.add({"", "Hardmax", OpFamily::softmax, infer_softmax,
         [](const CostContext& c) { return cost_softmax(c, 1); }});
}

}  // namespace rooflens
