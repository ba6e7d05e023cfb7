#pragma once
// Shared by the planner (plain C++) and the CUDA kernels: the element-wise functors the replay
// implements and the stride helpers. No CUDA and no library headers here.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace rooflens::profiler {

inline constexpr size_t kMaxReplayRank = 6;

enum class EwOp : int {
  // unary
  relu, gelu, gelu_tanh, sigmoid, swish, tanh_, exp_, erf_, sqrt_, neg, abs_, reciprocal, log_, softplus,
  leaky_relu, hard_sigmoid, hard_swish, identity, cast,
  // binary
  add, sub, mul, div, pow_, max_, min_,
  // ternary
  where, clip,
};

inline std::optional<EwOp> elementwise_op_from(std::string_view op) {
  struct Entry {
    std::string_view name;
    EwOp op;
  };
  static constexpr Entry table[] = {
      {"Relu", EwOp::relu}, {"Gelu", EwOp::gelu}, {"FastGelu", EwOp::gelu_tanh}, {"Sigmoid", EwOp::sigmoid},
      {"Swish", EwOp::swish}, {"Silu", EwOp::swish}, {"Tanh", EwOp::tanh_}, {"Exp", EwOp::exp_}, {"Erf", EwOp::erf_},
      {"Sqrt", EwOp::sqrt_}, {"Neg", EwOp::neg}, {"Abs", EwOp::abs_}, {"Reciprocal", EwOp::reciprocal},
      {"Log", EwOp::log_}, {"Softplus", EwOp::softplus}, {"LeakyRelu", EwOp::leaky_relu},
      {"HardSigmoid", EwOp::hard_sigmoid}, {"HardSwish", EwOp::hard_swish}, {"Identity", EwOp::identity},
      {"Cast", EwOp::cast}, {"Add", EwOp::add}, {"Sub", EwOp::sub}, {"Mul", EwOp::mul}, {"Div", EwOp::div},
      {"Pow", EwOp::pow_}, {"Max", EwOp::max_}, {"Min", EwOp::min_}, {"Where", EwOp::where}, {"Clip", EwOp::clip},
  };
  for (const Entry& e : table)
    if (e.name == op) return e.op;
  return std::nullopt;
}

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// Strides that read `in` broadcast to `out` (numpy rules): 0 along broadcast dims.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

}  // namespace rooflens::profiler
