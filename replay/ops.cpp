#include "replay/ops.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "analyzer/core/checked.hpp"
#include "replay/plan.hpp"

namespace rooflens::replay {

std::optional<EwOp> elementwise_op_from(std::string_view op) {
  static constexpr std::array<std::pair<std::string_view, EwOp>, 29> table{{
      {"Relu", EwOp::relu},
      {"Gelu", EwOp::gelu},
      {"FastGelu", EwOp::gelu_tanh},
      {"Sigmoid", EwOp::sigmoid},
      {"Swish", EwOp::swish},
      {"Silu", EwOp::swish},
      {"Tanh", EwOp::tanh_},
      {"Exp", EwOp::exp_},
      {"Erf", EwOp::erf_},
      {"Sqrt", EwOp::sqrt_},
      {"Neg", EwOp::neg},
      {"Abs", EwOp::abs_},
      {"Reciprocal", EwOp::reciprocal},
      {"Log", EwOp::log_},
      {"Softplus", EwOp::softplus},
      {"LeakyRelu", EwOp::leaky_relu},
      {"HardSigmoid", EwOp::hard_sigmoid},
      {"HardSwish", EwOp::hard_swish},
      {"Identity", EwOp::identity},
      {"Cast", EwOp::cast},
      {"Add", EwOp::add},
      {"Sub", EwOp::sub},
      {"Mul", EwOp::mul},
      {"Div", EwOp::div},
      {"Pow", EwOp::pow_},
      {"Max", EwOp::max_},
      {"Min", EwOp::min_},
      {"Where", EwOp::where},
      {"Clip", EwOp::clip},
  }};
  for (const auto& [name, e] : table)
    if (name == op) return e;
  return std::nullopt;
}

std::optional<RowReduce> row_reduce_from(std::string_view op) {
  static constexpr std::array<std::pair<std::string_view, RowReduce>, 6> table{{
      {"ReduceSum", RowReduce::sum},
      {"ReduceMean", RowReduce::mean},
      {"ReduceMax", RowReduce::max},
      {"ReduceMin", RowReduce::min},
      {"ReduceSumSquare", RowReduce::sum_square},
      {"ReduceL2", RowReduce::l2},
  }};
  for (const auto& [name, r] : table)
    if (name == op) return r;
  return std::nullopt;
}

std::pair<int64_t, int64_t> rows_cols(const std::vector<int64_t>& s, int64_t axis) {
  int64_t cols = 1;
  for (size_t i = static_cast<size_t>(axis); i < s.size(); ++i) cols = checked_mul(cols, s[i]);
  return {checked_product(s, "rows") / std::max<int64_t>(cols, 1), cols};
}

bool decode_group_shape(const AttentionDims& d, bool separate_v) {
  int64_t G = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 0;
  return separate_v && d.head_dim_qk == d.head_dim_v &&
         (d.head_dim_qk == 64 || d.head_dim_qk == 128) && G >= 1 && G <= 8;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> cs = contiguous_strides(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    st[lead + i] = in[i] == 1 && out[lead + i] != 1 ? 0 : cs[i];
  return st;
}

std::string_view kind_name(const KernelPlan& k) {
  struct Names {
    std::string_view operator()(const GemmPlan&) const { return "gemm"; }
    std::string_view operator()(const WeightOnlyGemmPlan&) const { return "weight-only gemm"; }
    std::string_view operator()(const ConvPlan&) const { return "conv"; }
    std::string_view operator()(const AttentionPlan&) const { return "attention"; }
    std::string_view operator()(const MoePlan&) const { return "moe"; }
    std::string_view operator()(const ElementwisePlan&) const { return "elementwise"; }
    std::string_view operator()(const SoftmaxPlan&) const { return "softmax"; }
    std::string_view operator()(const NormPlan&) const { return "norm"; }
    std::string_view operator()(const BatchNormPlan&) const { return "batch_norm"; }
    std::string_view operator()(const ReducePlan&) const { return "reduce"; }
    std::string_view operator()(const TopKPlan&) const { return "topk"; }
    std::string_view operator()(const PoolPlan&) const { return "pool2d"; }
    std::string_view operator()(const CopyPlan&) const { return "strided_copy"; }
    std::string_view operator()(const ConcatSplitPlan&) const { return "concat_split"; }
    std::string_view operator()(const GatherPlan&) const { return "gather"; }
    std::string_view operator()(const RopePlan&) const { return "rope"; }
    std::string_view operator()(const CollectivePlan&) const { return "collective"; }
  };
  return std::visit(Names{}, k);
}

}  // namespace rooflens::replay
