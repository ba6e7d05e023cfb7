// One hand-computed case for every rule not covered by the family tests, and a guard that
// every registered rule is covered somewhere: a new rule without a test fails here.
#include <catch2/catch.hpp>
#include <set>

#include "analyzer/ops/rule_registry.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

struct In {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

// A model with one node "y" (outputs y, y1, ...); returns its result.
NodeResult single(const std::string& op, std::vector<In> inputs, std::vector<Attr> attrs = {},
                  int64_t opset = 17, const std::string& domain = "", size_t outputs = 1,
                  std::vector<std::string> input_names = {}) {
  ModelBuilder b(opset);
  if (!domain.empty()) b.import(domain, 1);
  std::vector<std::string> names;
  for (const In& i : inputs) {
    std::vector<Dim> dims(i.shape.begin(), i.shape.end());
    b.input(i.name, i.dtype, dims);
    names.push_back(i.name);
  }
  if (!input_names.empty()) names = input_names;
  std::vector<std::string> outs{"y"};
  for (size_t k = 1; k < outputs; ++k) outs.push_back("y" + std::to_string(k));
  b.node(op, names, outs, attrs, domain);
  for (auto& o : outs) b.output(o);
  return node_named(analyze_model(b), "y");
}

In f32(const std::string& n, std::vector<int64_t> s) {
  return {n, DType::f32, std::move(s)};
}
In i64(const std::string& n, std::vector<int64_t> s) {
  return {n, DType::i64, std::move(s)};
}

}  // namespace

TEST_CASE("unary element-wise ops: FLOPs per element from docs/ops.md", "[rules][table]") {
  std::vector<std::pair<const char*, int64_t>> ops{
      {"Relu", 1},     {"LeakyRelu", 2},   {"Elu", 3},
      {"Selu", 4},     {"Celu", 4},        {"ThresholdedRelu", 1},
      {"Sigmoid", 4},  {"HardSigmoid", 4}, {"HardSwish", 5},
      {"Softplus", 3}, {"Softsign", 3},    {"Mish", 5},
      {"Tanh", 1},     {"Erf", 1},         {"Exp", 1},
      {"Log", 1},      {"Sqrt", 1},        {"Reciprocal", 1},
      {"Neg", 1},      {"Abs", 1},         {"Sign", 1},
      {"Floor", 1},    {"Ceil", 1},        {"Round", 1},
      {"Sin", 1},      {"Cos", 1},         {"Tan", 1},
      {"Asin", 1},     {"Acos", 1},        {"Atan", 1},
      {"Sinh", 1},     {"Cosh", 1}};
  for (auto [op, per] : ops) {
    INFO(op);
    NodeResult y = single(op, {f32("x", {10})}, {}, 18);
    CHECK(y.cost.flops == 10 * per);
    CHECK(y.cost.bytes() == 80);
  }
  CHECK(single("Gelu", {f32("x", {10})}, {}, 20).cost.flops == 50);
  CHECK(single("QuickGelu", {f32("x", {10})}, {}, 17, "com.microsoft").cost.flops == 60);
  CHECK(single("Gelu", {f32("x", {10})}, {}, 17, "com.microsoft").cost.flops == 50);
  for (const char* op : {"IsNaN", "IsInf"}) {
    NodeResult y = single(op, {f32("x", {10})});
    CHECK(y.cost.flops == 10);
    CHECK(y.cost.written == 10);  // bool
  }
  NodeResult n = single("Not", {{"x", DType::boolean, {10}}});
  CHECK(n.cost.bytes() == 20);
  CHECK(single("BitwiseNot", {{"x", DType::i32, {10}}}, {}, 18).cost.bytes() == 80);
}

TEST_CASE("binary element-wise ops", "[rules][table]") {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
    NodeResult y = single(op, {f32("a", {10}), f32("b", {10})});
    CHECK(y.cost.flops == 10);
    CHECK(y.cost.bytes() == 120);
  }
  CHECK(single("Mod", {f32("a", {10}), f32("b", {10})}, {{"fmod", int64_t{1}}}).cost.flops == 10);
  CHECK(single("PRelu", {f32("a", {10}), f32("slope", {1})}).cost.flops == 20);
  CHECK(single("BitShift", {{"a", DType::u32, {10}}, {"b", DType::u32, {10}}},
               {{"direction", std::string("LEFT")}})
            .cost.flops == 10);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    CHECK(single(op, {{"a", DType::i32, {10}}, {"b", DType::i32, {10}}}, {}, 18).cost.bytes() ==
          120);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    NodeResult y = single(op, {f32("a", {10}), f32("b", {10})});
    CHECK(y.cost.flops == 10);
    CHECK(y.cost.written == 10);
  }
  for (const char* op : {"And", "Or", "Xor"})
    CHECK(single(op, {{"a", DType::boolean, {10}}, {"b", DType::boolean, {10}}}).cost.bytes() ==
          30);
  for (const char* op : {"Min", "Max"})
    CHECK(single(op, {f32("a", {10}), f32("b", {10}), f32("c", {10})}).cost.flops == 20);
  CHECK(
      single("FastGelu", {f32("x", {10}), f32("bias", {10})}, {}, 17, "com.microsoft").cost.flops ==
      100);
  CHECK(
      single("BiasGelu", {f32("x", {10}), f32("bias", {10})}, {}, 17, "com.microsoft").cost.flops ==
      60);
  NodeResult w = single("Where", {{"c", DType::boolean, {10}}, f32("a", {10}), f32("b", {10})});
  CHECK(w.cost.flops == 0);
  CHECK(w.cost.bytes() == 10 + 80 + 40);
  CHECK(single("CastLike", {f32("x", {10}), {"like", DType::f16, {1}}}, {}, 15).cost.written == 20);
}

TEST_CASE("remaining GEMM - norm and attention rules", "[rules][table]") {
  NodeResult mi = single("MatMulInteger", {{"a", DType::u8, {4, 8}}, {"b", DType::u8, {8, 16}}});
  CHECK(mi.output_shapes[0] == "[4,16]");
  CHECK(mi.cost.flops == 1024);
  CHECK(mi.cost.bytes() == 32 + 128 + 64 * 4);  // int32 out
  NodeResult fm = single("FusedMatMul", {f32("a", {4, 8}), f32("b", {16, 8})},
                         {{"transB", int64_t{1}}, {"alpha", 0.5}}, 17, "com.microsoft");
  CHECK(fm.output_shapes[0] == "[4,16]");
  CHECK(fm.cost.flops == 1024 + 64);
  CHECK(single("InstanceNormalization", {f32("x", {2, 3, 4, 4}), f32("s", {3}), f32("b", {3})})
            .cost.flops == 96 * 7 + 6 * 4);
  CHECK(single("GroupNormalization", {f32("x", {2, 4, 3, 3}), f32("s", {4}), f32("b", {4})},
               {{"num_groups", int64_t{2}}}, 18)
            .cost.flops == 72 * 7 + 4 * 4);
  CHECK(single("LpNormalization", {f32("x", {4, 8})}).cost.flops == 96);
  CHECK(single("LogSoftmax", {f32("x", {2, 8})}).cost.flops == 80);
  CHECK(single("Hardmax", {f32("x", {2, 8})}).cost.flops == 16);
  NodeResult sln =
      single("SkipLayerNormalization",
             {f32("x", {2, 4, 8}), f32("skip", {2, 4, 8}), f32("g", {8}), f32("b", {8})}, {}, 17,
             "com.microsoft");
  CHECK(sln.cost.flops == 64 * 8 + 8 * 4);  // 6 + skip + beta per element
  CHECK(sln.output_shapes[0] == "[2,4,8]");
  CHECK(single("SkipSimplifiedLayerNormalization",
               {f32("x", {2, 4, 8}), f32("skip", {2, 4, 8}), f32("g", {8})}, {}, 17,
               "com.microsoft")
            .cost.flops == 64 * 5 + 8 * 3);
  CHECK(single("RMSNormalization", {f32("x", {4, 8}), f32("s", {8})}, {}, 23).cost.flops ==
        32 * 4 + 4 * 3);
  CHECK(single("SimplifiedLayerNormalization", {f32("x", {4, 8}), f32("s", {8})}).cost.flops ==
        32 * 4 + 4 * 3);
  NodeResult mha = single("MultiHeadAttention",
                          {f32("q", {1, 4, 16}), f32("k", {1, 6, 16}), f32("v", {1, 6, 16})},
                          {{"num_heads", int64_t{2}}}, 17, "com.microsoft");
  CHECK(mha.output_shapes[0] == "[1,4,16]");
  CHECK(mha.cost.flops == 2 * 4 * 6 * 38);  // head dim 8: 2*8 + 1 + 5 + 2*8 per score
}

TEST_CASE("remaining reductions and pooling", "[rules][table]") {
  std::vector<std::pair<const char*, int64_t>> reduce{
      {"ReduceMax", 6}, {"ReduceMin", 6},        {"ReduceProd", 6},   {"ReduceL1", 12},
      {"ReduceL2", 14}, {"ReduceSumSquare", 12}, {"ReduceLogSum", 8}, {"ReduceLogSumExp", 14}};
  for (auto [op, flops] : reduce) {
    INFO(op);
    NodeResult y = single(op, {f32("x", {2, 3})}, {{"axes", std::vector<int64_t>{1}}}, 13);
    CHECK(y.output_shapes[0] == "[2,1]");
    CHECK(y.cost.flops == flops);
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    NodeResult y = single(op, {f32("x", {2, 3})}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}});
    CHECK(y.output_shapes[0] == "[2]");
    CHECK(y.cost.written == 16);  // int64
  }
  CHECK(single("CumSum", {f32("x", {2, 3}), i64("axis", {})}).cost.flops == 6);
  std::vector<Attr> k2s2{{"kernel_shape", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}}};
  CHECK(single("AveragePool", {f32("x", {1, 1, 4, 4})}, k2s2).cost.flops == 4 * 5);
  CHECK(single("LpPool", {f32("x", {1, 1, 4, 4})}, k2s2).cost.flops == 4 * 9);
  CHECK(single("GlobalMaxPool", {f32("x", {1, 2, 3, 3})}).cost.flops == 18);
  CHECK(single("GlobalLpPool", {f32("x", {1, 2, 3, 3})}).cost.flops == 36 + 2);
}

TEST_CASE("remaining data movement rules", "[rules][table]") {
  CHECK(single("Size", {f32("x", {2, 3})}).status == NodeStatus::folded);
  NodeResult ge =
      single("GatherElements", {f32("d", {4, 5}), i64("i", {4, 2})}, {{"axis", int64_t{1}}});
  CHECK(ge.output_shapes[0] == "[4,2]");
  CHECK(ge.cost.bytes() == 32 + 64 + 32);
  NodeResult gn = single("GatherND", {f32("d", {3, 4, 5}), i64("i", {2, 2})});
  CHECK(gn.output_shapes[0] == "[2,5]");
  CHECK(gn.cost.bytes() == 40 + 32 + 40);
  NodeResult sn = single("ScatterND", {f32("d", {4, 5}), i64("i", {2, 1}), f32("u", {2, 5})});
  CHECK(sn.cost.read_act == 80 + 16 + 40);
  CHECK(sn.cost.written == 80 + 40);
  NodeResult se = single("ScatterElements", {f32("d", {4, 5}), i64("i", {4, 2}), f32("u", {4, 2})});
  CHECK(se.cost.bytes() == (80 + 64 + 32) + (80 + 32));
  CHECK(single("DepthToSpace", {f32("x", {1, 8, 2, 2})}, {{"blocksize", int64_t{2}}})
            .output_shapes[0] == "[1,2,4,4]");
  CHECK(single("SpaceToDepth", {f32("x", {1, 2, 4, 4})}, {{"blocksize", int64_t{2}}})
            .output_shapes[0] == "[1,8,2,2]");
  CHECK(single("Trilu", {f32("x", {4, 4})}, {}, 14).cost.bytes() == 128);
  NodeResult ab = single("Identity", {f32("x", {2, 3})});
  CHECK(ab.cost.bytes() == 0);
  CHECK(single("Dropout", {f32("x", {2, 3})}, {}, 13).cost.bytes() == 0);
  CHECK(single("Flatten", {f32("x", {2, 3, 4})}).output_shapes[0] == "[2,12]");
}

TEST_CASE("rules whose arguments are constants", "[rules][table]") {
  ModelBuilder b(13);
  b.input("x", DType::f32, {1, 3, 1}).ints("axes", {0}).node("Squeeze", {"x", "axes"}, {"sq"});
  b.input("t", DType::f32, {2, 3}).ints("reps", {2, 2}).node("Tile", {"t", "reps"}, {"tile"});
  b.input("ids", DType::i64, {3}).int_scalar("depth", 5).weight("values", DType::f32, {2});
  b.node("OneHot", {"ids", "depth", "values"}, {"oh"});
  b.node("Constant", {}, {"c"}, {{"value_ints", std::vector<int64_t>{4, 5}}});
  for (const char* o : {"sq", "tile", "oh", "c"}) b.output(o);
  Analysis a = analyze_model(b);
  CHECK(node_named(a, "sq").output_shapes[0] == "[3,1]");
  CHECK(node_named(a, "tile").output_shapes[0] == "[4,6]");
  CHECK(node_named(a, "tile").cost.bytes() == 24 + 96);
  CHECK(node_named(a, "oh").output_shapes[0] == "[3,5]");
  CHECK(node_named(a, "oh").cost.bytes() == 24 + 60);
  CHECK(node_named(a, "c").status == NodeStatus::folded);

  ModelBuilder up(9);
  up.input("x", DType::f32, {1, 1, 2, 2});
  up.floats("scales", {1, 1, 2, 2});
  up.node("Upsample", {"x", "scales"}, {"u"}).output("u");
  Analysis u = analyze_model(up);
  CHECK(node_named(u, "u").output_shapes[0] == "[1,1,4,4]");
  CHECK(node_named(u, "u").cost.flops == 0);  // nearest
}

TEST_CASE("every registered rule has a hand-computed test", "[rules][table]") {
  // Where each rule's test lives; adding a rule means adding its test and its name here.
  const std::set<std::string> tested{
      // test_rules_gemm_conv.cpp
      "::MatMul", "::Gemm", "::Einsum", "::Conv", "::ConvTranspose",
      // test_rules_elementwise_norm.cpp
      "::Add", "::Gelu", "::Sigmoid", "::Relu", "::Clip", "::Sum", "::Mean", "::Cast", "::Equal",
      "::Mul", "::LayerNormalization", "com.microsoft::SimplifiedLayerNormalization",
      "::BatchNormalization", "::Softmax", "::ReduceMean", "::ReduceSum", "::TopK", "::MaxPool",
      "::GlobalAveragePool",
      // test_rules_attention.cpp
      "com.microsoft::Attention", "com.microsoft::GroupQueryAttention", "::Attention",
      // test_rules_data_movement.cpp and test_shape_folding.cpp
      "::Gather", "::Slice", "::Transpose", "::Concat", "::Reshape", "::Pad", "::Expand",
      "::Resize", "::Split", "::NonZero", "::Shape", "::Unsqueeze", "::Range", "::ConstantOfShape",
      // this file
      "::LeakyRelu", "::Elu", "::Selu", "::Celu", "::ThresholdedRelu", "::HardSigmoid",
      "::HardSwish", "::Softplus", "::Softsign", "::Mish", "::Tanh", "::Erf", "::Exp", "::Log",
      "::Sqrt", "::Reciprocal", "::Neg", "::Abs", "::Sign", "::Floor", "::Ceil", "::Round", "::Sin",
      "::Cos", "::Tan", "::Asin", "::Acos", "::Atan", "::Sinh", "::Cosh",
      "com.microsoft::QuickGelu", "com.microsoft::Gelu", "::IsNaN", "::IsInf", "::Not",
      "::BitwiseNot", "::Sub", "::Div", "::Pow", "::Mod", "::PRelu", "::BitShift", "::BitwiseAnd",
      "::BitwiseOr", "::BitwiseXor", "::Less", "::Greater", "::LessOrEqual", "::GreaterOrEqual",
      "::And", "::Or", "::Xor", "::Min", "::Max", "com.microsoft::FastGelu",
      "com.microsoft::BiasGelu", "::Where", "::CastLike", "::MatMulInteger",
      "com.microsoft::FusedMatMul", "::InstanceNormalization", "::GroupNormalization",
      "::LpNormalization", "::LogSoftmax", "::Hardmax", "com.microsoft::SkipLayerNormalization",
      "com.microsoft::SkipSimplifiedLayerNormalization", "::RMSNormalization",
      "::SimplifiedLayerNormalization", "com.microsoft::MultiHeadAttention", "::ReduceMax",
      "::ReduceMin", "::ReduceProd", "::ReduceL1", "::ReduceL2", "::ReduceSumSquare",
      "::ReduceLogSum", "::ReduceLogSumExp", "::ArgMax", "::ArgMin", "::CumSum", "::AveragePool",
      "::LpPool", "::GlobalMaxPool", "::GlobalLpPool", "::Size", "::GatherElements", "::GatherND",
      "::ScatterND", "::ScatterElements", "::DepthToSpace", "::SpaceToDepth", "::Trilu",
      "::Identity", "::Dropout", "::Flatten", "::Squeeze", "::Tile", "::OneHot", "::Constant",
      "::Upsample",
      // test_rules_transformer.cpp
      "::Swish", "com.microsoft::RotaryEmbedding", "com.microsoft::MoE", "rooflens::AllReduce",
      "rooflens::AllToAll",
      // test_rules_ssm.cpp
      "rooflens::SelectiveScan", "rooflens::CausalConv1d", "rooflens::LinearAttention",
      // test_quantized_onnx.cpp
      "::QuantizeLinear", "::DequantizeLinear", "::DynamicQuantizeLinear", "::ConvInteger",
      "::QLinearConv", "::QLinearMatMul", "com.microsoft::MatMulNBits",
      "com.microsoft::GatherBlockQuantized"};
  for (const OpRule* r : builtin_rules().all()) {
    std::string key = r->domain + "::" + r->op_type;
    INFO(key);
    CHECK(tested.count(key) == 1);
  }
  CHECK(tested.size() == builtin_rules().size());
}
