// Real exporter output (torch 2.11 TorchScript and dynamo exporters,
// scripts/gpu/export_samples.py), checked against published figures. Weights are external and not
// shipped: the analyzer must never need them.
#include <catch2/catch.hpp>

#include "model_builder.hpp"
#include "reports/sink.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis analyze_file(const std::string& rel, std::map<std::string, int64_t> dims = {}) {
  LoadOptions load;
  load.dims = std::move(dims);
  return analyze_onnx(data_path(rel), load, AnalysisOptions{});
}

int64_t sum_over(const Analysis& a, std::initializer_list<const char*> ops, bool macs) {
  int64_t s = 0;
  for (const auto& n : a.nodes)
    for (const char* op : ops)
      if (n.op == op) s += macs ? n.cost.macs.value_or(0) : n.cost.flops;
  return s;
}

}  // namespace

TEST_CASE("ResNet-50 has 4.09 GMACs (8.18 GFLOPs) in Conv+Gemm from both exporters", "[real]") {
  // torchvision's model card: 4.09 GFLOPS counted as multiply-accumulates at 1x3x224x224.
  for (const char* file :
       {"samples/resnet50-opset17.onnx", "tests/data/onnx/resnet50-opset18.onnx"}) {
    INFO(file);
    Analysis a = analyze_file(file);
    CHECK(a.coverage.not_costed == 0);
    CHECK(sum_over(a, {"Conv", "Gemm"}, true) == Approx(4.09e9).epsilon(0.005));
    CHECK(sum_over(a, {"Conv", "Gemm"}, false) == Approx(8.18e9).epsilon(0.005));
  }
}

TEST_CASE("ResNet-50 exported with BatchNorm unfolded has torch's 25 557 032 params", "[real]") {
  Analysis a = analyze_file("tests/data/onnx/resnet50-bn-unfolded.onnx");
  CHECK(a.totals.params == 25557032);  // sum(p.numel() for p in resnet50().parameters())
  // Running mean and var of every BatchNorm: 2 * (sum of BN channels = 26,560).
  CHECK(a.totals.buffers == 53120);
  CHECK(a.coverage.not_costed == 0);
}

TEST_CASE("the BN-folded export holds conv biases instead of BN parameters", "[real]") {
  // 25,557,032 - 53,120 BN scale/shift + 26,560 folded conv biases.
  CHECK(analyze_file("samples/resnet50-opset17.onnx").totals.params == 25530472);
}

TEST_CASE("GPT-2-style decoder from the TorchScript exporter folds its shape chains", "[real]") {
  Analysis a = analyze_file("samples/gpt2-style-opset17.onnx", {{"batch", 1}, {"seq", 128}});
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.coverage.folded > 900);  // Shape/Gather/Unsqueeze/Concat chains and weight Identities
  const NodeResult& head = node_named(a, "/lm_head/MatMul");
  CHECK(head.output_shapes[0] == "[1,128,50257]");
  CHECK(*head.cost.macs == 128LL * 768 * 50257);
  // Twelve QK^T products of [1,12,128,64] x [1,12,64,128].
  int qk = 0;
  for (const auto& n : a.nodes)
    if (n.op == "MatMul" && n.output_shapes[0] == "[1,12,128,128]") {
      ++qk;
      CHECK(*n.cost.macs == 12LL * 128 * 128 * 64);
    }
  CHECK(qk == 12);
}

TEST_CASE("GPT-2 from the dynamo exporter (opset 18) analyzes once seq is bound", "[real]") {
  Analysis a = analyze_file("tests/data/onnx/gpt2-opset18.onnx", {{"seq", 64}});
  CHECK(a.coverage.not_costed == 0);
  int gemms = 0;
  for (const auto& n : a.nodes) gemms += n.op == "Gemm";
  CHECK(gemms == 48);  // 4 linear layers in each of 12 blocks
  // Named by their module paths (the file's pkg.torch.onnx.name_scopes: node_pow_1 is in
  // m.transformer.h.0.mlp.act, one pow per block), and --by block folds the 12 blocks into one row.
  CHECK(node_named(a, "m.transformer.h.0.mlp.act/pow_1").op == "Pow");
  bool folded = false;
  for (const reports::BlockRow& r : reports::fold_blocks(a))
    if (r.block == "m.transformer.h.*.mlp.act/pow") folded = r.count == 12;
  CHECK(folded);
}

TEST_CASE("ViT-B/16 has 17.56 GMACs", "[real]") {
  // torchvision's model card for vit_b_16: 17.56 GFLOPS (multiply-accumulates).
  Analysis a = analyze_file("tests/data/onnx/vit_b_16-opset17.onnx");
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.macs == Approx(17.56e9).epsilon(0.005));
}
