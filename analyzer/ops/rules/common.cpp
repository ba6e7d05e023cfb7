#include "analyzer/ops/rules/common.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens::rules {

Shape broadcast(const InferContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t d = s[s.size() - 1 - k];
      int64_t& o = out[rank - 1 - k];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      ctx.fail(fmt::format("shapes cannot broadcast (dim {} vs {})", o, d));
    }
  }
  return out;
}

std::vector<Shape> input_shapes(const InferContext& ctx) {
  std::vector<Shape> v;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) v.push_back(ctx.shape(i));
  return v;
}

NodeCost elementwise_cost(const CostContext& ctx, int64_t flops_per_element) {
  NodeCost c;
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  int64_t n = ctx.out_elements(0);
  c.flops = checked_mul(n, flops_per_element, "element-wise FLOPs");
  c.parallel_tiles = elementwise_tiles(n);
  bool broadcast = false;
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i)
    if (ctx.has_input(i) && ctx.in_elements(i) != n) broadcast = true;
  c.kernel.memory = broadcast ? MemoryKernel::broadcast : MemoryKernel::elementwise;
  return c;
}

NodeCost data_inputs_cost(const CostContext& ctx, std::initializer_list<size_t> data_inputs) {
  NodeCost c;
  for (size_t i : data_inputs) ctx.read_input(c, i);
  ctx.write_all_outputs(c);
  c.parallel_tiles = elementwise_tiles(ctx.out_elements(0));
  c.kernel.memory = MemoryKernel::copy;
  return c;
}

Shape reduce_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (size_t a = 0; a < in.size(); ++a) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) != axes.end();
    if (!reduced)
      out.push_back(in[a]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

std::optional<std::vector<int64_t>> axes_from(const InferContext& ctx, const char* attr,
                                              size_t input_index) {
  if (ctx.has_input(input_index)) return ints_of(ctx, input_index, "axes");
  return ctx.node().attr_ints(attr);
}

std::vector<int64_t> ints_of(const InferContext& ctx, size_t i, const char* what) {
  return ctx.required_value(i, what).as_ints();
}

}  // namespace rooflens::rules
