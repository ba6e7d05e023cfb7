#pragma once
// Helpers shared by the rule families: broadcasting, the standard traffic of a kernel that
// reads its inputs and writes its outputs once, and small value folding.
#include <vector>

#include "analyzer/ops/rule_registry.hpp"

namespace rooflens::rules {

// Numpy broadcast of several shapes; incompatible shapes are an input error of the node.
Shape broadcast(const InferContext& ctx, const std::vector<Shape>& shapes);
std::vector<Shape> input_shapes(const InferContext& ctx);

// flops_per_element * output elements, every input read once, every output written once.
NodeCost elementwise_cost(const CostContext& ctx, int64_t flops_per_element);
// Reads only the inputs listed (the others are shape arguments consumed on the host).
NodeCost data_inputs_cost(const CostContext& ctx, std::initializer_list<size_t> data_inputs);

// Output shape with the given axes removed or kept as 1.
Shape reduce_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims);

// Axes for ops whose axes moved from an attribute to input `input_index` in newer opsets.
std::optional<std::vector<int64_t>> axes_from(const InferContext& ctx, const char* attr,
                                              size_t input_index);

// Values of integer tensors that come out of shape arithmetic.
std::vector<int64_t> ints_of(const InferContext& ctx, size_t i, const char* what);

}  // namespace rooflens::rules
