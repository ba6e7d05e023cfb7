// Attribution inside torchvision CNNs (issue 27, item 4), on vanilla torch.profiler traces recorded
// on the H100 machine (scripts/gpu/timeline_models.py, bf16, batch 1, trimmed to 2 steps):
// ResNet-50 against its three ONNX exports and MobileNetV3-small against its TorchScript export.
// What is right comes from torchvision's code and the trace's own module calls: Bottleneck.forward
// calls its one `relu` three times (after bn1, after bn2, after the residual add); TorchScript
// scopes those calls relu, relu_1, relu_2 and folds each BatchNorm into the convolution before it;
// dynamo scopes the folded convolution by the BatchNorm's path. MobileNetV3's
// Conv2dNormActivation is a Sequential subclass of conv, BatchNorm and activation.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/timeline/kernel_names.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/trace_io.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

namespace {

struct Onnx {
  Graph graph;
  Analysis analysis;
};

Onnx onnx_model(const std::string& file) {
  AnalysisOptions o;
  o.precision = Precision::bf16;
  LoadOptions l;
  l.bind_unbound_dims = 1;
  Onnx m;
  m.analysis = analyze_onnx(ROOFLENS_SOURCE_DIR "/" + file, l, o, &m.graph);
  return m;
}

const std::string kResnetTrace =
    ROOFLENS_SOURCE_DIR "/tests/data/traces/h100/resnet50-forward.vanilla.h100.json.gz";
const std::string kMobilenetTrace =
    ROOFLENS_SOURCE_DIR "/tests/data/traces/h100-modes/mobilenet-forward.vanilla.json.gz";

std::map<std::string, const ModuleComparison*> by_path(const TimelineComparison& c) {
  std::map<std::string, const ModuleComparison*> out;
  for (const auto& m : c.modules) out[m.path] = &m;
  return out;
}

// The classes of the kernels a module ran (its top kernels: every distinct kernel of a module
// this small).
std::set<KernelClass> classes(const ModuleComparison& m) {
  std::set<KernelClass> out;
  for (const auto& k : m.top_kernels) out.insert(kernel_class(k.name));
  return out;
}

double predicted_sum(const TimelineComparison& c) {
  double s = 0;
  for (const auto& m : c.modules) s += m.predicted_s;
  return s;
}

}  // namespace

TEST_CASE(
    "ResNet-50: every module instance named (a reused relu called three times and BatchNorm "
    "folded into its convolution)",
    "[compare]") {
  Trace t = read_timeline(kResnetTrace);
  for (const char* file : {"samples/resnet50-opset17.onnx", "tests/data/onnx/resnet50-opset18.onnx",
                           "tests/data/onnx/resnet50-bn-unfolded.onnx"}) {
    INFO(file);
    Onnx m = onnx_model(file);
    TimelineComparison c = compare_timeline(m.analysis, m.graph, t, {kResnetTrace, 0});
    CHECK(c.unmapped_instances.empty());
    CHECK(c.matched_kernel_s >= 0.999 * c.total_kernel_s);
    // Every predicted node lands on a module of its own, none on the root.
    auto rows = by_path(c);
    if (rows.count("")) CHECK(rows.at("")->predicted_s == 0);
    CHECK(predicted_sum(c) == Approx(c.predicted_s).epsilon(1e-9));
    // 16 Bottlenecks x 3 relu calls + the stem's: one element-wise kernel each per step.
    int relu_kernels = 0;
    for (const auto& [path, row] : rows)
      if (path.find("relu") != std::string::npos) {
        INFO(path);
        CHECK(classes(*row) == std::set<KernelClass>{KernelClass::elementwise});
        relu_kernels += static_cast<int>(row->kernels);
      }
    CHECK(relu_kernels == 49);
  }
  // TorchScript, BatchNorm folded: relu, relu_1, relu_2 are the three calls of one module, each
  // one kernel; each convolution's module holds its convolution and the BatchNorm's kernels.
  Onnx ts = onnx_model("samples/resnet50-opset17.onnx");
  TimelineComparison c = compare_timeline(ts.analysis, ts.graph, t, {kResnetTrace, 0});
  auto rows = by_path(c);
  for (const char* relu : {"layer3.4.relu", "layer3.4.relu_1", "layer3.4.relu_2"}) {
    INFO(relu);
    REQUIRE(rows.count(relu));
    CHECK(rows.at(relu)->kernels == 1);
  }
  for (const char* conv : {"conv1", "layer1.0.conv1", "layer2.3.conv2", "layer4.0.downsample.0"}) {
    INFO(conv);
    REQUIRE(rows.count(conv));
    CHECK(classes(*rows.at(conv)).count(KernelClass::convolution) +
              classes(*rows.at(conv)).count(KernelClass::gemm) ==
          1);
    CHECK(classes(*rows.at(conv)).count(KernelClass::norm) +
              classes(*rows.at(conv)).count(KernelClass::elementwise) >=
          1);  // the BatchNorm eager PyTorch runs on its own
  }
  // A Bottleneck's own row holds only the residual add.
  REQUIRE(rows.count("layer2.1"));
  CHECK(rows.at("layer2.1")->kernels == 1);
  CHECK(classes(*rows.at("layer2.1")) == std::set<KernelClass>{KernelClass::elementwise});
  CHECK(c.notes.end() != std::find_if(c.notes.begin(), c.notes.end(), [](const std::string& n) {
          return n.find("53 module instance(s) have no node of their own") != std::string::npos;
        }));
  // Dynamo scopes all three relu calls as one module: three kernels there.
  Onnx dyn = onnx_model("tests/data/onnx/resnet50-opset18.onnx");
  TimelineComparison dyn_c = compare_timeline(dyn.analysis, dyn.graph, t, {kResnetTrace, 0});
  auto dyn_rows = by_path(dyn_c);
  REQUIRE(dyn_rows.count("layer3.4.relu"));
  CHECK(dyn_rows.at("layer3.4.relu")->kernels == 3);
  CHECK(dyn_rows.count("layer3.4.relu_1") == 0);
}

TEST_CASE("MobileNetV3-small: Conv2dNormActivation blocks and squeeze-excitation named by path",
          "[compare]") {
  Trace t = read_timeline(kMobilenetTrace);
  Onnx m = onnx_model("tests/data/onnx/mobilenet_v3_small-opset17.onnx");
  TimelineComparison c = compare_timeline(m.analysis, m.graph, t, {kMobilenetTrace, 0});
  CHECK(c.steps == 2);
  CHECK(c.unmapped_instances.empty());
  CHECK(c.matched_kernel_s >= 0.999 * c.total_kernel_s);
  CHECK(predicted_sum(c) == Approx(c.predicted_s).epsilon(1e-9));
  auto rows = by_path(c);
  // TorchScript scopes "/features/features.4/block/block.1/block.1.0/Conv": features.4.block.1.0,
  // the depthwise convolution of the fourth inverted residual (BatchNorm folded into it).
  for (const char* conv :
       {"features.0.0", "features.4.block.1.0", "features.11.block.3.0", "features.12.0"}) {
    INFO(conv);
    REQUIRE(rows.count(conv));
    CHECK(classes(*rows.at(conv)).count(KernelClass::convolution) +
              classes(*rows.at(conv)).count(KernelClass::gemm) >=
          1);
  }
  for (const char* act : {"features.0.2", "features.4.block.1.2", "features.4.block.2.activation",
                          "features.4.block.2.scale_activation"}) {
    INFO(act);
    REQUIRE(rows.count(act));
    CHECK(rows.at(act)->kernels == 1);
  }
  REQUIRE(rows.count("features.4.block.2.avgpool"));
  CHECK(rows.at("features.4.block.2.avgpool")->kernels >= 1);
}
