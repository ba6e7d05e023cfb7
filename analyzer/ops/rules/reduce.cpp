// Reductions: Reduce*, ArgMax/ArgMin, TopK, CumSum.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

struct ReduceOp {
  const char* name;
  int64_t per_input;   // FLOPs per input element
  int64_t per_output;  // FLOPs per output element (mean's divide, L2's sqrt, ...)
};

constexpr ReduceOp kReduceOps[] = {
    {"ReduceSum", 1, 0},       {"ReduceMean", 1, 1},      {"ReduceMax", 1, 0},
    {"ReduceMin", 1, 0},       {"ReduceProd", 1, 0},      {"ReduceL1", 2, 0},
    {"ReduceL2", 2, 1},        {"ReduceSumSquare", 2, 0}, {"ReduceLogSum", 1, 1},
    {"ReduceLogSumExp", 2, 1},
};

// Axes normalized and sorted; empty means "all" unless noop_with_empty_axes says identity.
std::vector<int64_t> reduce_axes(const InferContext& ctx, int64_t rank, bool& identity) {
  const Node& n = ctx.node();
  auto axes = rules::axes_from(ctx, "axes", 1);
  identity = false;
  std::vector<int64_t> out;
  if (!axes || axes->empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) {
      identity = true;
      return out;
    }
    for (int64_t a = 0; a < rank; ++a) out.push_back(a);
    return out;
  }
  for (int64_t a : *axes) out.push_back(ctx.axis(a, rank));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<Value> fold_reduce(const std::string& op, const Value& in, const Shape& in_shape,
                                 const std::vector<int64_t>& axes, int64_t out_count) {
  if (op != "ReduceSum" && op != "ReduceProd" && op != "ReduceMax" && op != "ReduceMin" &&
      op != "ReduceMean")
    return std::nullopt;
  double init = op == "ReduceProd"  ? 1
                : op == "ReduceMax" ? -std::numeric_limits<double>::infinity()
                : op == "ReduceMin" ? std::numeric_limits<double>::infinity()
                                    : 0;
  std::vector<double> acc(out_count, init);
  std::vector<int64_t> seen(out_count, 0);
  for (size_t e = 0; e < in.size(); ++e) {
    size_t rem = e, out_index = 0, stride = 1;
    for (size_t k = 0; k < in_shape.size(); ++k) {
      size_t axis = in_shape.size() - 1 - k;
      size_t coord = rem % in_shape[axis];
      rem /= in_shape[axis];
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(axis)) == axes.end()) {
        out_index += coord * stride;
        stride *= in_shape[axis];
      }
    }
    double x = in.real_at(e);
    double& a = acc[out_index];
    if (op == "ReduceProd")
      a *= x;
    else if (op == "ReduceMax")
      a = std::max(a, x);
    else if (op == "ReduceMin")
      a = std::min(a, x);
    else
      a += x;
    ++seen[out_index];
  }
  if (op == "ReduceMean")
    for (int64_t i = 0; i < out_count; ++i) acc[i] /= std::max<int64_t>(seen[i], 1);
  if (in.is_float) return Value::of_reals(acc);
  std::vector<int64_t> ints(acc.begin(), acc.end());
  return Value::of_ints(ints);
}

void infer_reduce(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  bool identity;
  auto axes = reduce_axes(ctx, static_cast<int64_t>(x.size()), identity);
  if (identity) {
    ctx.set_output(0, ctx.dtype(0), x,
                   ctx.value(0) ? std::optional<Value>(*ctx.value(0)) : std::nullopt);
    return;
  }
  Shape out = rules::reduce_shape(x, axes, ctx.node().attr_int("keepdims", 1) != 0);
  std::optional<Value> v;
  if (const Value* in = ctx.value(0))
    v = fold_reduce(ctx.node().op_type, *in, x, axes, checked_product(out));
  ctx.set_output(0, ctx.dtype(0), out, std::move(v));
}

NodeCost reduce_cost(const CostContext& ctx, int64_t per_input, int64_t per_output) {
  NodeCost c;
  ctx.read_input(c, 0);
  ctx.write_all_outputs(c);
  int64_t in = ctx.in_elements(0), out = ctx.out_elements(0);
  c.flops = checked_add(checked_mul(in, per_input), checked_mul(out, per_output));
  c.parallel_tiles = std::max(elementwise_tiles(in) / 4, std::min(out, elementwise_tiles(in)));
  c.kernel.memory = MemoryKernel::reduce;
  c.kernel.rows = out;
  c.kernel.cols = in / std::max<int64_t>(out, 1);
  return c;
}

void infer_arg(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(x.size()));
  ctx.set_output(0, DType::i64,
                 rules::reduce_shape(x, {axis}, ctx.node().attr_int("keepdims", 1) != 0));
}

int64_t topk_k(const InferContext& ctx) {
  if (ctx.has_input(1)) {
    auto k = rules::ints_of(ctx, 1, "k");
    if (k.size() != 1) ctx.fail("k must hold one value");
    return k[0];
  }
  return ctx.node().attr_int("k", 1);
}

void infer_topk(InferContext& ctx) {
  Shape x = ctx.shape(0);
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(x.size()));
  int64_t k = topk_k(ctx);
  if (k < 0 || k > x[axis]) ctx.fail(fmt::format("k={} is outside [0, {}]", k, x[axis]));
  x[axis] = k;
  ctx.set_output(0, ctx.dtype(0), x);
  ctx.set_output(1, DType::i64, x);
}

NodeCost cost_topk(const CostContext& ctx) {
  // A heap selection: about log2(k) comparisons per input element.
  const Node& n = ctx.node();
  const Shape& out = ctx.out_shape(0);
  int64_t axis = n.attr_int("axis", -1);
  int64_t k = out.empty() ? 1 : out[axis < 0 ? axis + static_cast<int64_t>(out.size()) : axis];
  int64_t per =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::log2(std::max<int64_t>(k, 2)))));
  NodeCost c = reduce_cost(ctx, per, 0);
  return c;
}

}  // namespace

void register_reduce_rules(RuleRegistry& r) {
  for (const auto& op : kReduceOps) {
    int64_t pi = op.per_input, po = op.per_output;
    r.add({"", op.name, OpFamily::reduce, infer_reduce,
           [pi, po](const CostContext& c) { return reduce_cost(c, pi, po); }});
  }
  for (const char* name : {"ArgMax", "ArgMin"})
    r.add({"", name, OpFamily::reduce, infer_arg,
           [](const CostContext& c) { return reduce_cost(c, 1, 0); }});
  r.add({"", "TopK", OpFamily::reduce, infer_topk, cost_topk});
  r.add({"", "CumSum", OpFamily::reduce,
         [](InferContext& c) { c.set_output(0, c.dtype(0), c.shape(0)); },
         [](const CostContext& c) { return rules::elementwise_cost(c, 1); }});
}

}  // namespace rooflens
