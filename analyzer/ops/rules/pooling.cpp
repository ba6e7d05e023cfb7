// Pooling: MaxPool, AveragePool, LpPool and their Global forms.
#include <fmt/format.h>

#include <algorithm>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

int64_t window_elements(const Node& n) {
  auto k = n.attr_ints("kernel_shape");
  return k ? checked_product(*k, "pool window") : 1;
}

void infer_pool(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape& x = ctx.shape(0);
  if (x.size() < 3) ctx.fail("pooling input needs (N, C, spatial...)");
  size_t sd = x.size() - 2;
  auto kernel = n.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != sd)
    ctx.fail("kernel_shape is missing or does not match the spatial rank");
  auto get = [&](const char* key, size_t count, int64_t fill) {
    auto v = n.attr_ints(key);
    return v ? *v : std::vector<int64_t>(count, fill);
  };
  auto strides = get("strides", sd, 1), dil = get("dilations", sd, 1),
       pads = get("pads", 2 * sd, 0);
  if (strides.size() != sd || dil.size() != sd || pads.size() != 2 * sd)
    ctx.fail("strides/dilations/pads do not match the spatial rank");
  bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  Shape out{x[0], x[1]};
  for (size_t i = 0; i < sd; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0) ctx.fail("strides and dilations must be positive");
    int64_t in = x[i + 2], eff = dil[i] * ((*kernel)[i] - 1) + 1, o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = ceil_div(in, strides[i]);
    } else {
      int64_t span = in + (auto_pad == "VALID" ? 0 : pads[i] + pads[i + sd]) - eff;
      o = (ceil_mode ? ceil_div(span, strides[i]) : span / strides[i]) + 1;
      // A window may not start in the end padding.
      if (ceil_mode && (o - 1) * strides[i] >= in + pads[i]) --o;
    }
    if (o <= 0) ctx.fail(fmt::format("spatial dim {} would be {}", i, o));
    out.push_back(o);
  }
  ctx.set_output(0, ctx.dtype(0), out);
  ctx.set_output(1, DType::i64, out);  // MaxPool indices
}

void infer_global_pool(InferContext& ctx) {
  Shape s = ctx.shape(0);
  if (s.size() < 3) ctx.fail("pooling input needs (N, C, spatial...)");
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  ctx.set_output(0, ctx.dtype(0), s);
}

NodeCost pool_cost(const CostContext& ctx, int64_t per_input, int64_t per_window_element,
                   int64_t per_output) {
  NodeCost c;
  ctx.read_input(c, 0);
  ctx.write_all_outputs(c);
  int64_t out = ctx.out_elements(0);
  c.flops = checked_add(
      checked_mul(ctx.in_elements(0), per_input),
      checked_mul(out, checked_add(checked_mul(window_elements(ctx.node()), per_window_element),
                                   per_output)));
  c.parallel_tiles = elementwise_tiles(std::max(out, ctx.in_elements(0) / 8));
  if (per_window_element > 0)
    c.instructions =
        static_cast<double>(out) *
        (kWindowKernelInstructions +
         kWindowInstructionsPerElement * static_cast<double>(window_elements(ctx.node())));
  return c;
}

// A global pool is a row reduction, one row of H x W per (image, channel): the kernel frameworks
// run (and the replay times) is the reduce kernel, so it is priced by the reduce table.
NodeCost global_pool_cost(const CostContext& ctx, int64_t per_output) {
  NodeCost c = pool_cost(ctx, 1, 0, per_output);
  c.kernel.memory = MemoryKernel::reduce;
  c.kernel.rows = ctx.out_elements(0);
  c.kernel.cols = ctx.in_elements(0) / std::max<int64_t>(c.kernel.rows, 1);
  return c;
}

}  // namespace

void register_pooling_rules(RuleRegistry& r) {
  // Max: one comparison per window element. Average: one add per window element, one divide.
  // Lp (p=2): square and add per window element, one root.
  r.add({"", "MaxPool", OpFamily::pooling, infer_pool,
         [](const CostContext& c) { return pool_cost(c, 0, 1, 0); }});
  r.add({"", "AveragePool", OpFamily::pooling, infer_pool,
         [](const CostContext& c) { return pool_cost(c, 0, 1, 1); }});
  r.add({"", "LpPool", OpFamily::pooling, infer_pool,
         [](const CostContext& c) { return pool_cost(c, 0, 2, 1); }});
  r.add({"", "GlobalAveragePool", OpFamily::pooling, infer_global_pool,
         [](const CostContext& c) { return global_pool_cost(c, 1); }});
  r.add({"", "GlobalMaxPool", OpFamily::pooling, infer_global_pool,
         [](const CostContext& c) { return global_pool_cost(c, 0); }});
  r.add({"", "GlobalLpPool", OpFamily::pooling, infer_global_pool,
         [](const CostContext& c) { return pool_cost(c, 2, 0, 1); }});
}

}  // namespace rooflens
