// The replay planner on the CPU: which kernel each node gets, with which dims and buffers, and
// a reason for every node that is not replayed.
#include <catch2/catch.hpp>

#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"
#include "replay/ops.hpp"
#include "replay/plan.hpp"

using namespace rooflens;
using namespace rooflens::replay;
using namespace rooflens::test;

namespace {

struct Planned {
  Analysis a;
  Graph g;
  std::vector<ReplayDecision> d;
  const ReplayDecision& of(const std::string& name) const {
    for (size_t i = 0; i < a.nodes.size(); ++i)
      if (a.nodes[i].name == name) return d[i];
    FAIL("no node " << name);
    throw 0;
  }
};

Planned plan_onnx(const std::string& path, std::optional<Precision> forced = std::nullopt) {
  Planned p;
  AnalysisOptions o;
  o.precision = forced;
  p.a = analyze_onnx(path, {}, o, &p.g);
  p.d = plan_replay(p.a, p.g, forced);
  return p;
}

Planned plan_config(const std::string& name, Workload w, DType weights = DType::bf16,
                    DType kv = DType::bf16) {
  Planned p;
  TransformerConfig c = load_transformer_config(std::string(ROOFLENS_SOURCE_DIR) +
                                                "/samples/configs/" + name + "/config.json");
  TransformerOptions o;
  o.workload = w;
  o.lowering.seq = 128;
  o.lowering.context = 512;
  o.lowering.weights = weights;
  o.lowering.activations = DType::bf16;
  o.lowering.kv = kv;
  p.a = analyze_transformer(c, o, &p.g);
  p.d = plan_replay(p.a, p.g, std::nullopt);
  return p;
}

}  // namespace

TEST_CASE("ResNet-50: every costed node with a kernel is planned with conv and GEMM dims as costed",
          "[replay]") {
  Planned p = plan_onnx(ROOFLENS_SOURCE_DIR "/samples/resnet50-opset17.onnx");
  int convs = 0;
  for (size_t i = 0; i < p.a.nodes.size(); ++i) {
    const NodeResult& n = p.a.nodes[i];
    const ReplayDecision& d = p.d[i];
    INFO(n.name << ": " << d.reason);
    if (n.op == "Flatten") {
      CHECK(d.status == ReplayStatus::no_kernel);
      continue;
    }
    REQUIRE(d.status == ReplayStatus::measured);
    if (n.op == "Conv") {
      ++convs;
      REQUIRE(d.plan->is<ConvPlan>());
      CHECK(d.plan->as<ConvPlan>().conv.out_spatial == n.cost.kernel.conv->out_spatial);
    }
  }
  CHECK(convs == 53);
  // conv1: 7x7 stride 2 pad 3 over 3x224x224 -> 64x112x112, with the folded BatchNorm's bias.
  const ConvPlan& c1 = p.of("/conv1/Conv").plan->as<ConvPlan>();
  CHECK(c1.conv.kernel == std::vector<int64_t>{7, 7});
  CHECK(c1.conv.pads == std::vector<int64_t>{3, 3, 3, 3});
  CHECK_FALSE(c1.pointwise);
  CHECK(c1.bias);
  // Its im2col lowering: per image, 64 x (3*7*7) weights times (3*7*7) x (112*112) columns.
  GemmDims g = conv_image_gemm(c1.conv);
  CHECK(g.batch == 1);
  CHECK(g.m == 64);
  CHECK(g.n == 112 * 112);
  CHECK(g.k == 147);
  // layer1's first 1x1 convolution needs no im2col.
  CHECK(p.of("/layer1/layer1.0/conv1/Conv").plan->as<ConvPlan>().pointwise);
  // The fc layer: Gemm 1x2048 by 2048x1000 with transB, bias of 1000.
  const GemmPlan& fc = p.of("/fc/Gemm").plan->as<GemmPlan>();
  CHECK(fc.dims.m == 1);
  CHECK(fc.dims.n == 1000);
  CHECK(fc.dims.k == 2048);
  CHECK(fc.b_shared);
  CHECK_FALSE(fc.b_kn);  // transB: stored [n, k]
  CHECK(fc.bias);
  // MaxPool 3x3 stride 2 pad 1; the global average pool as a row reduction of 2048 rows of 49.
  const Pool2d& mp = p.of("/maxpool/MaxPool").plan->as<PoolPlan>().pool;
  CHECK(mp.kh == 3);
  CHECK(mp.kw == 3);
  CHECK(mp.sh == 2);
  CHECK(mp.ph == 1);
  CHECK(mp.max);
  const ReducePlan& gap = p.of("/avgpool/GlobalAveragePool").plan->as<ReducePlan>();
  CHECK(gap.rows == 2048);
  CHECK(gap.cols == 49);
  CHECK(gap.op == RowReduce::mean);
  // --dtype bf16 stores every float buffer in bf16, as the prediction assumed.
  Planned b = plan_onnx(ROOFLENS_SOURCE_DIR "/samples/resnet50-opset17.onnx", Precision::bf16);
  CHECK(b.of("/conv1/Conv").plan->inputs[0].dtype == DType::bf16);
  CHECK(b.of("/conv1/Conv").plan->inputs[0].bytes == 3 * 224 * 224 * 2);
}

TEST_CASE(
    "Llama decode: split-KV attention and RMS norm and rope and embedding gather with weights as "
    "stored",
    "[replay]") {
  Planned p = plan_config("llama-2-7b", Workload::decode);
  const ReplayPlan& attn = *p.of("model.layers.0.self_attn.attn").plan;
  REQUIRE(attn.is<AttentionPlan>());
  CHECK(attn.as<AttentionPlan>().decode());
  CHECK(attn.as<AttentionPlan>().dims.kv_len == 513);  // 512 cached + the new token
  // K cache read: 1 x 32 heads x 513 x 128 bf16.
  CHECK(attn.inputs[1].bytes == 32 * 513 * 128 * 2);
  const NormPlan& norm = p.of("model.layers.0.input_layernorm").plan->as<NormPlan>();
  CHECK(norm.rms);
  CHECK_FALSE(norm.residual);
  CHECK(norm.rows == 1);
  CHECK(norm.cols == 4096);
  const ReplayPlan& rope = *p.of("model.layers.0.self_attn.q_rope").plan;
  CHECK(rope.as<RopePlan>().head_dim == 128);
  CHECK(rope.inputs[1].index_bound ==
        513);  // positions index the cos/sin rows of the 513 positions the step uses
  const ReplayPlan& emb = *p.of("model.embed_tokens").plan;
  CHECK(emb.is<GatherPlan>());
  CHECK(emb.inputs[1].index_bound == 32000);
  const GemmPlan& q = p.of("model.layers.0.self_attn.q_proj").plan->as<GemmPlan>();
  CHECK(q.dims.m == 1);
  CHECK(q.dims.n == 4096);
  CHECK_FALSE(q.b_kn);  // nn.Linear stores [out, in]
}

TEST_CASE("Mistral decode: a sliding window that covers the whole cache is planned as no window",
          "[replay]") {
  // Mistral-7B v0.1's window is 4096 keys; at context 512 the one query sees all 513: the window
  // masks nothing, and a kernel that refuses windows (cuDNN over 1,024 keys) must still be a
  // candidate.
  Planned p = plan_config("mistral-7b", Workload::decode);
  for (const NodeResult& n : p.a.nodes)
    if (n.name == "model.layers.0.self_attn.attn") {
      REQUIRE(n.cost.kernel.attention);
      CHECK(n.cost.kernel.attention->window == 4096);  // the analysis keeps the config's window
    }
  const AttentionPlan& attn = p.of("model.layers.0.self_attn.attn").plan->as<AttentionPlan>();
  CHECK(attn.dims.kv_len == 513);
  CHECK(attn.dims.window == 0);
}

TEST_CASE("fp8 W8A8 decode: the activations' quantizing Cast and the fp8 GEMM are both planned",
          "[replay]") {
  TransformerConfig c = load_transformer_config(std::string(ROOFLENS_SOURCE_DIR) +
                                                "/samples/configs/llama-3.1-8b/config.json");
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.context = 512;
  o.lowering.weights = o.lowering.activations = DType::f8e4m3fn;
  o.lowering.kv = DType::bf16;
  Planned p;
  p.a = analyze_transformer(c, o, &p.g);
  p.d = plan_replay(p.a, p.g, std::nullopt);
  const ReplayDecision& cast = p.of("model.layers.0.input_layernorm.quantize");
  REQUIRE(cast.plan);
  CHECK(cast.plan->as<ElementwisePlan>().op == EwOp::cast);
  CHECK(cast.plan->outputs[0].dtype == DType::f8e4m3fn);
  CHECK(cast.plan->outputs[0].bytes == 4096);  // one token's 4096 features, a byte each
  const ReplayDecision& q = p.of("model.layers.0.self_attn.q_proj");
  REQUIRE(q.plan);
  CHECK(q.plan->precision == Precision::fp8);
}

TEST_CASE("an fp8 KV cache is replayed in fp8 under bf16 queries, MLA's latent over one is refused",
          "[replay]") {
  Planned p = plan_config("llama-3.1-8b", Workload::decode, DType::bf16, DType::f8e4m3fn);
  const ReplayPlan& attn = *p.of("model.layers.0.self_attn.attn").plan;
  CHECK(attn.inputs[0].dtype == DType::bf16);
  // K and V caches: 8 KV heads x 513 keys x 128, a byte each.
  for (size_t i : {1u, 2u}) {
    CHECK(attn.inputs[i].dtype == DType::f8e4m3fn);
    CHECK(attn.inputs[i].bytes == 8 * 513 * 128);
  }
  CHECK(attn.outputs[0].dtype == DType::bf16);
  Planned mla = plan_config("deepseek-v2-lite", Workload::decode, DType::bf16, DType::f8e4m3fn);
  const ReplayDecision& latent = mla.of("model.layers.0.self_attn.attn");
  CHECK_FALSE(latent.plan);
  CHECK_THAT(latent.reason, Catch::Contains("fp8 latent cache"));
}

TEST_CASE("a prefill over an fp8 KV cache is replayed as fp8 attention, its queries quantized too",
          "[replay]") {
  Planned p = plan_config("llama-3.1-8b", Workload::prefill, DType::bf16, DType::f8e4m3fn);
  const ReplayDecision& decision = p.of("model.layers.0.self_attn.attn");
  REQUIRE(decision.plan);
  const ReplayPlan& attn = *decision.plan;
  const AttentionDims& d = attn.as<AttentionPlan>().dims;
  REQUIRE(d.q_len == 128);
  CHECK(d.causal);
  // Q: 128 tokens x 32 heads x 128 dims, a byte each; K and V: 8 KV heads, a byte each.
  CHECK(attn.inputs[0].dtype == DType::f8e4m3fn);
  CHECK(attn.inputs[0].bytes == 128 * 32 * 128);
  for (size_t i : {1u, 2u}) {
    CHECK(attn.inputs[i].dtype == DType::f8e4m3fn);
    CHECK(attn.inputs[i].bytes == d.batch * 8 * d.kv_len * 128);
  }
  CHECK(attn.outputs[0].dtype == DType::f8e4m3fn);  // what cuDNN's fp8 attention writes
  CHECK_THAT(attn.description, Catch::Contains("fp8 causal attention"));
  for (const NodeResult& n : p.a.nodes)  // the report says why it is priced as fp8
    if (n.name == "model.layers.0.self_attn.attn")
      CHECK_THAT(n.cost.note, Catch::Contains("fp8 attention over an fp8 cache"));
}

TEST_CASE("MoE, MLA and what is not replayed, each with its reason", "[replay]") {
  Planned mix = plan_config("mixtral-8x7b", Workload::decode);
  const MoePlan& moe = mix.of("model.layers.0.mlp.experts").plan->as<MoePlan>();
  CHECK(moe.dims.experts == 8);
  CHECK(moe.dims.k == 2);
  CHECK(mix.of("model.layers.0.mlp.gate.topk").plan->as<TopKPlan>().k == 2);

  Planned ds = plan_config("deepseek-v3", Workload::decode);
  const ReplayPlan& mla = *ds.of("model.layers.0.self_attn.attn").plan;
  CHECK(mla.as<AttentionPlan>().v_in_k);  // V is the latent prefix of K: no V buffer
  CHECK(mla.inputs.size() == 2);
  CHECK(mla.as<AttentionPlan>().dims.head_dim_qk == 576);

  ModelBuilder b;
  b.input("x", DType::f32, {2, 3, 4, 5})
      .node("Transpose", {"x"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  b.input("y", DType::f32, {2, 4, 3, 5}).node("Concat", {"t", "y"}, {"c"}, {{"axis", int64_t{3}}});
  b.node("Hardmax", {"c"}, {"h"}).output("h").output("c");
  Planned m = plan_onnx(b.save());
  const CopyPlan& tr = m.d[0].plan->as<CopyPlan>();
  // out (2,4,3,5) reads x (2,3,4,5) with strides 60, 5, 20, 1.
  CHECK(tr.parts[0].src_strides == std::vector<int64_t>{60, 5, 20, 1});
  CHECK(tr.elem_bytes == 4);
  // One launch: c is [2*4*3 rows, 10 columns]; t owns the first 5 columns of each row, y the
  // next 5.
  const ConcatSplitPlan& cat = m.d[1].plan->as<ConcatSplitPlan>();
  CHECK_FALSE(cat.split);
  CHECK(cat.outer == 24);
  CHECK(cat.part_cols == std::vector<int64_t>{5, 5});
  CHECK(m.d[2].status == ReplayStatus::not_replayed);
}

TEST_CASE("every element-wise functor name maps, and broadcast strides follow numpy", "[replay]") {
  for (const char* op :
       {"Relu", "Gelu", "Swish", "Add", "Mul", "Where", "Cast", "Clip", "Div", "Tanh"})
    CHECK(elementwise_op_from(op).has_value());
  CHECK_FALSE(elementwise_op_from("Mod").has_value());
  CHECK(broadcast_strides({3, 1}, {4, 3, 8}) == std::vector<int64_t>{0, 1, 0});
  CHECK(broadcast_strides({8}, {4, 3, 8}) == std::vector<int64_t>{0, 0, 1});
  CHECK(contiguous_strides({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
}

TEST_CASE(
    "tensor parallel: the all-reduces are planned through NCCL when the replay has their GPUs",
    "[replay][tp]") {
  TransformerConfig c = load_transformer_config(std::string(ROOFLENS_SOURCE_DIR) +
                                                "/samples/configs/llama-3.1-8b/config.json");
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.batch = 8;
  o.lowering.context = 1024;
  o.lowering.tp = 2;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
  Graph g;
  Analysis a = analyze_transformer(c, o, &g);
  std::vector<ReplayDecision> two = plan_replay(a, g, std::nullopt, 2),
                              one = plan_replay(a, g, std::nullopt, 1),
                              four = plan_replay(a, g, std::nullopt, 4);
  int all_reduces = 0;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (a.nodes[i].op != "rooflens.AllReduce") continue;
    ++all_reduces;
    REQUIRE(two[i].status == ReplayStatus::measured);
    const ReplayPlan& p = *two[i].plan;
    REQUIRE(p.is<CollectivePlan>());
    // The hidden state of 8 tokens: 8 x 4096 bf16 = 65,536 bytes, all-reduced over 2 GPUs.
    CHECK(p.as<CollectivePlan>().bytes == 8 * 4096 * 2);
    CHECK(p.as<CollectivePlan>().ranks == 2);
    CHECK(p.inputs[0].bytes == 65536);
    CHECK(one[i].status == ReplayStatus::not_replayed);
    CHECK(one[i].reason.find("--tp 2") != std::string::npos);
    CHECK(four[i].status == ReplayStatus::not_replayed);
  }
  // Two a layer (attention output, MLP output) over 32 layers, and the embedding's.
  CHECK(all_reduces == 2 * 32 + 1);
}

TEST_CASE("expert parallel: every node of a GPU's share is planned, the all-to-alls through NCCL",
          "[replay][ep]") {
  TransformerConfig c = load_transformer_config(std::string(ROOFLENS_SOURCE_DIR) +
                                                "/samples/configs/mixtral-8x7b/config.json");
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.batch = 32;
  o.lowering.context = 1024;
  o.lowering.ep = 4;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
  Graph g;
  Analysis a = analyze_transformer(c, o, &g);
  std::vector<ReplayDecision> four = plan_replay(a, g, std::nullopt, 4);
  int all_to_alls = 0;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    INFO(a.nodes[i].name << ": " << four[i].reason);
    // The dispatch's permute, the probabilities' split, the local experts and the combine's sum
    // replay as well as the rest: nothing is left out.
    CHECK(four[i].status != ReplayStatus::not_replayed);
    if (a.nodes[i].name == "model.layers.0.mlp.experts.combine_sum") {
      // [8 tokens, top-2, 4096] summed over its middle dim.
      REQUIRE(four[i].plan->is<ReducePlan>());
      const ReducePlan& r = four[i].plan->as<ReducePlan>();
      CHECK((r.rows == 8 && r.cols == 2 && r.inner == 4096));
    }
    if (a.nodes[i].op != "rooflens.AllToAll") continue;
    ++all_to_alls;
    REQUIRE(four[i].plan->is<CollectivePlan>());
    const CollectivePlan& p = four[i].plan->as<CollectivePlan>();
    CHECK(p.op == Collective::all_to_all);
    CHECK(p.bytes == 8 * 2 * 4096 * 2);  // 8 tokens x top-2 rows of 4096 bf16
    CHECK(p.ranks == 4);
  }
  CHECK(all_to_alls == 2 * 32);
}

TEST_CASE("a QDQ graph's quantized kernels are not replayed and say why, the rest is planned",
          "[replay]") {
  // ONNX Runtime's quantize_static QDQ output around a residual Add and a MaxPool
  // (tests/data/onnx/quantized): the Conv, Add, MaxPool and MatMul run on int8 tensors.
  Planned p =
      plan_onnx(std::string(ROOFLENS_SOURCE_DIR) + "/tests/data/onnx/quantized/qdq_residual.onnx");
  for (const char* name : {"conv", "add", "pool", "fc"}) {
    INFO(name);
    CHECK(p.of(name).status == ReplayStatus::not_replayed);
    CHECK(p.of(name).reason.find("int8 kernel on quantized tensors") != std::string::npos);
  }
  // The output's DequantizeLinear reads int8 itself: not one of them (its own reason, if any).
  CHECK(p.of("y_DequantizeLinear").reason.find("quantized tensors") == std::string::npos);
}

TEST_CASE("weight-only int4/int8 GEMMs are planned with the graph's weight bytes and groups",
          "[replay]") {
  // Llama-2-7B's down projection, k = 11008 inputs, n = 4096 outputs.
  Planned q4 = plan_config("llama-2-7b", Workload::decode, DType::i4);
  const ReplayDecision& d4 = q4.of("model.layers.0.mlp.down_proj");
  REQUIRE(d4.plan);
  const auto& w4 = d4.plan->as<WeightOnlyGemmPlan>();
  CHECK(w4.bits == 4);
  CHECK(w4.group == 128);  // --group-size's default: 86 scales a row
  CHECK(w4.dims.m == 1);
  CHECK(w4.dims.n == 4096);
  CHECK(w4.dims.k == 11008);
  // Packed: half a byte a weight; one bf16 scale per 128: the graph's int4 weight and fp16 scales.
  CHECK(d4.plan->inputs[1].bytes == 4096 * 11008 / 2);
  CHECK(d4.plan->inputs[2].bytes == 4096 * 86 * 2);
  CHECK(d4.plan->precision == Precision::bf16);

  Planned q8 = plan_config("llama-2-7b", Workload::decode, DType::i8);
  const auto& w8 = q8.of("model.layers.0.mlp.down_proj").plan->as<WeightOnlyGemmPlan>();
  CHECK(w8.bits == 8);
  CHECK(w8.group == 11008);  // int8 per output channel: one scale a row

  // com.microsoft MatMulNBits: A [2, 4096] fp16 times a 4-bit [1024, 4096] weight, blocks of 128,
  // with a bias (input 5); and one whose K = 144 is not whole blocks of 32 (4.5): not replayed.
  ModelBuilder b;
  b.import("com.microsoft", 1)
      .input("a", DType::f16, {2, 4096})
      .weight("q", DType::u8, {1024, 32, 64})
      .weight("s", DType::f16, {1024 * 32})
      .weight("bias", DType::f16, {1024})
      .node("MatMulNBits", {"a", "q", "s", "", "", "bias"}, {"y"},
            {{"K", int64_t{4096}},
             {"N", int64_t{1024}},
             {"bits", int64_t{4}},
             {"block_size", int64_t{128}}},
            "com.microsoft")
      .output("y");
  Planned m = plan_onnx(b.save());
  const ReplayPlan& nb = *m.d[0].plan;
  CHECK(nb.as<WeightOnlyGemmPlan>().group == 128);
  CHECK(nb.as<WeightOnlyGemmPlan>().bias);
  CHECK(nb.inputs[1].bytes == 1024 * 4096 / 2);
  CHECK(nb.inputs[3].bytes == 1024 * 2);
  CHECK(nb.precision == Precision::fp16);

  Planned odd = plan_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/quantized/nbits.onnx");
  const ReplayDecision& fc = odd.d.back();
  CHECK(fc.status == ReplayStatus::not_replayed);
  CHECK(fc.reason.find("k=144 in groups of 32") != std::string::npos);
}
