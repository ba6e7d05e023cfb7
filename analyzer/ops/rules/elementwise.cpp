// Element-wise ops: unary, binary and variadic with numpy broadcast, Where, Clip, Cast.
// FLOPs per output element are the arithmetic operations the op defines (docs/ops.md).
#include <fmt/format.h>

#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

enum class Arity { unary, binary, variadic, where, clip, cast };

struct ElementwiseOp {
  const char* domain;
  const char* name;
  Arity arity;
  int64_t flops;  // per output element; variadic ops: per extra input
  bool to_bool;   // comparisons and logic produce bool
};

// clip = max + min = 2; sigmoid = neg, exp, add, divide = 4; softplus = exp, add, log = 3.
constexpr ElementwiseOp kOps[] = {
    {"", "Relu", Arity::unary, 1, false},
    {"", "LeakyRelu", Arity::unary, 2, false},
    {"", "Elu", Arity::unary, 3, false},
    {"", "Selu", Arity::unary, 4, false},
    {"", "Celu", Arity::unary, 4, false},
    {"", "ThresholdedRelu", Arity::unary, 1, false},
    {"", "Sigmoid", Arity::unary, 4, false},
    {"", "HardSigmoid", Arity::unary, 4, false},
    {"", "HardSwish", Arity::unary, 5, false},
    {"", "Softplus", Arity::unary, 3, false},
    {"", "Softsign", Arity::unary, 3, false},
    {"", "Mish", Arity::unary, 5, false},
    {"", "Tanh", Arity::unary, 1, false},
    {"", "Erf", Arity::unary, 1, false},
    {"", "Exp", Arity::unary, 1, false},
    {"", "Log", Arity::unary, 1, false},
    {"", "Sqrt", Arity::unary, 1, false},
    {"", "Reciprocal", Arity::unary, 1, false},
    {"", "Neg", Arity::unary, 1, false},
    {"", "Abs", Arity::unary, 1, false},
    {"", "Sign", Arity::unary, 1, false},
    {"", "Floor", Arity::unary, 1, false},
    {"", "Ceil", Arity::unary, 1, false},
    {"", "Round", Arity::unary, 1, false},
    {"", "Sin", Arity::unary, 1, false},
    {"", "Cos", Arity::unary, 1, false},
    {"", "Tan", Arity::unary, 1, false},
    {"", "Asin", Arity::unary, 1, false},
    {"", "Acos", Arity::unary, 1, false},
    {"", "Atan", Arity::unary, 1, false},
    {"", "Sinh", Arity::unary, 1, false},
    {"", "Cosh", Arity::unary, 1, false},
    {"", "Not", Arity::unary, 1, true},
    {"", "IsNaN", Arity::unary, 1, true},
    {"", "IsInf", Arity::unary, 1, true},
    {"", "BitwiseNot", Arity::unary, 1, false},
    {"", "Gelu", Arity::unary, 5, false},  // erf form; the tanh form is counted in gelu_flops
    {"", "Add", Arity::binary, 1, false},
    {"", "Sub", Arity::binary, 1, false},
    {"", "Mul", Arity::binary, 1, false},
    {"", "Div", Arity::binary, 1, false},
    {"", "Pow", Arity::binary, 1, false},
    {"", "Mod", Arity::binary, 1, false},
    {"", "PRelu", Arity::binary, 2, false},
    {"", "BitShift", Arity::binary, 1, false},
    {"", "BitwiseAnd", Arity::binary, 1, false},
    {"", "BitwiseOr", Arity::binary, 1, false},
    {"", "BitwiseXor", Arity::binary, 1, false},
    {"", "Equal", Arity::binary, 1, true},
    {"", "Less", Arity::binary, 1, true},
    {"", "Greater", Arity::binary, 1, true},
    {"", "LessOrEqual", Arity::binary, 1, true},
    {"", "GreaterOrEqual", Arity::binary, 1, true},
    {"", "And", Arity::binary, 1, true},
    {"", "Or", Arity::binary, 1, true},
    {"", "Xor", Arity::binary, 1, true},
    {"", "Min", Arity::variadic, 1, false},
    {"", "Max", Arity::variadic, 1, false},
    {"", "Sum", Arity::variadic, 1, false},
    {"", "Mean", Arity::variadic, 1, false},
    {"", "Where", Arity::where, 0, false},
    {"", "Clip", Arity::clip, 2, false},
    {"", "Cast", Arity::cast, 0, false},
    {"", "CastLike", Arity::cast, 0, false},
    // ONNX Runtime's fused activations (com.microsoft).
    {"com.microsoft", "FastGelu", Arity::binary, 9, false},  // tanh form; + bias when given
    {"com.microsoft", "BiasGelu", Arity::binary, 6, false},  // bias add + erf form
    {"com.microsoft", "QuickGelu", Arity::unary, 6, false},  // x * sigmoid(alpha * x)
    {"com.microsoft", "Gelu", Arity::unary, 5, false},
    // x * sigmoid(alpha * x) (ONNX opset 24; SiLU when alpha = 1): sigmoid 4, scale, multiply.
    {"", "Swish", Arity::unary, 5, false},
};

// Gelu's tanh approximation: x^3 (2), * 0.044715, + x, * sqrt(2/pi), tanh, + 1, * x, * 0.5.
int64_t gelu_flops(const Node& n, int64_t erf_form) {
  return n.attr_string("approximate", "none") == "tanh" ? 9 : erf_form;
}

double apply_binary(const std::string& op, double a, double b, bool integral) {
  if (op == "Add" || op == "Sum") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") {
    if (b == 0) throw NotInferable{"division by zero in shape arithmetic"};
    return integral ? std::trunc(a / b) : a / b;
  }
  if (op == "Mod") {
    if (b == 0) throw NotInferable{"modulo by zero in shape arithmetic"};
    if (!integral) return std::fmod(a, b);
    double r = std::fmod(a, b);  // integer Mod follows the divisor's sign (Python's %)
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  if (op == "Pow") return std::pow(a, b);
  if (op == "Min") return std::min(a, b);
  if (op == "Max") return std::max(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return (a != 0) && (b != 0);
  if (op == "Or") return (a != 0) || (b != 0);
  if (op == "Xor") return (a != 0) != (b != 0);
  throw NotInferable{"no folding for " + op};
}

double apply_unary(const std::string& op, double a) {
  if (op == "Neg") return -a;
  if (op == "Abs") return std::fabs(a);
  if (op == "Sqrt") return std::sqrt(a);
  if (op == "Floor") return std::floor(a);
  if (op == "Ceil") return std::ceil(a);
  if (op == "Round") return std::nearbyint(a);
  if (op == "Reciprocal") return 1.0 / a;
  if (op == "Exp") return std::exp(a);
  if (op == "Log") return std::log(a);
  if (op == "Not") return a == 0;
  if (op == "Sign") return (a > 0) - (a < 0);
  if (op == "Relu") return std::max(a, 0.0);
  throw NotInferable{"no folding for " + op};
}

Value make_value(DType dtype, std::vector<double> xs) {
  if (is_float(dtype)) return Value::of_reals(std::move(xs));
  std::vector<int64_t> v;
  v.reserve(xs.size());
  for (double d : xs) v.push_back(static_cast<int64_t>(d));
  return Value::of_ints(std::move(v));
}

// Folds the op over known small inputs; nullopt when any input value is unknown.
std::optional<Value> fold(const InferContext& ctx, const ElementwiseOp& op, DType out_dtype,
                          const Shape& out) {
  int64_t count = checked_product(out);
  if (count > kMaxFoldedElements) return std::nullopt;
  std::vector<const Value*> vals;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Value* v = ctx.value(i);
    if (!v) return std::nullopt;
    vals.push_back(v);
    shapes.push_back(ctx.shape(i));
  }
  std::string name = op.name;
  bool integral = !is_float(ctx.dtype(0));
  std::vector<double> r(count);
  try {
    for (int64_t e = 0; e < count; ++e) {
      auto at = [&](size_t i) {
        return vals[i]->real_at(broadcast_source_index(shapes[i], out, e));
      };
      if (op.arity == Arity::cast)
        r[e] = at(0);
      else if (op.arity == Arity::unary)
        r[e] = apply_unary(name, at(0));
      else if (op.arity == Arity::where)
        r[e] = at(0) != 0 ? at(1) : at(2);
      else if (op.arity == Arity::clip) {
        double x = at(0);
        if (vals.size() > 1) x = std::max(x, at(1));
        if (vals.size() > 2) x = std::min(x, at(2));
        r[e] = x;
      } else {
        double acc = at(0);
        for (size_t i = 1; i < vals.size(); ++i) acc = apply_binary(name, acc, at(i), integral);
        r[e] = name == "Mean" ? acc / vals.size() : acc;
      }
    }
  } catch (const NotInferable&) {
    return std::nullopt;
  }
  if (op.arity == Arity::cast && !is_float(out_dtype))
    for (double& x : r) x = std::trunc(x);
  return make_value(out_dtype, std::move(r));
}

DType output_dtype(const InferContext& ctx, const ElementwiseOp& op) {
  const Node& n = ctx.node();
  if (op.to_bool) return DType::boolean;
  if (op.arity == Arity::where) return ctx.dtype(1);
  if (op.arity == Arity::cast) {
    if (n.op_type == "CastLike") return ctx.dtype(1);
    auto to = dtype_from_onnx(static_cast<int32_t>(n.attr_int("to", 0)));
    if (!to || *to == DType::undefined) ctx.fail("Cast has no valid 'to' type");
    return *to;
  }
  return ctx.dtype(0);
}

void register_op(RuleRegistry& r, const ElementwiseOp& op) {
  auto infer = [op](InferContext& ctx) {
    Shape out = op.arity == Arity::cast   ? ctx.shape(0)
                : op.arity == Arity::clip ? ctx.shape(0)
                                          : rules::broadcast(ctx, rules::input_shapes(ctx));
    DType dt = output_dtype(ctx, op);
    auto value = fold(ctx, op, dt, out);
    ctx.set_output(0, dt, out, std::move(value));
  };
  auto cost = [op](const CostContext& ctx) {
    const Node& n = ctx.node();
    int64_t per = op.flops;
    std::string name = op.name;
    if (name == "Gelu") per = gelu_flops(n, op.flops);
    if (op.arity == Arity::variadic) {
      int64_t present = 0;
      for (int t : n.inputs) present += t >= 0;
      per = std::max<int64_t>(present - 1, 0) + (name == "Mean" ? 1 : 0);
    }
    if (name == "FastGelu" && ctx.has_input(1)) per += 1;
    if (op.arity == Arity::clip && n.opset < 11)
      per = 2;
    else if (op.arity == Arity::clip)
      per = (ctx.has_input(1) ? 1 : 0) + (ctx.has_input(2) ? 1 : 0);
    NodeCost c = rules::elementwise_cost(ctx, per);
    if (name == "Gelu" && n.attr_string("approximate", "none") == "tanh")
      c.instructions = static_cast<double>(ctx.out_elements(0)) * kTanhGeluInstructions;
    return c;
  };
  r.add({op.domain, op.name, OpFamily::elementwise, infer, cost});
}

}  // namespace

void register_elementwise_rules(RuleRegistry& r) {
  for (const auto& op : kOps) register_op(r, op);
}

}  // namespace rooflens
