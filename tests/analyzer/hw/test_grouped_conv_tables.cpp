// Grouped 3x3 convolutions (ResNeXt, RegNet) from the shipped H100 profile's conv.bf16.g3s1/g3s2
// tables, against ResNeXt-50 32x4d's seven grouped layers replayed on the H100 (2026-11-27,
// tests/data/reference/h100-grouped-convs.json; the graph: scripts/gpu/make_grouped_convs.py).
// Their shapes are not the tables' points (128-1,024 channels of 4-32 a group over ResNeXt's
// images; the grid's 64-4,096 channels of 4, 16 and 64). On the roofline, before the tables,
// they read 87.6 us against 166 measured.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/hw/derived_profile.hpp"
#include "layer_reference.hpp"
#include "model_builder.hpp"

using namespace rooflens;

TEST_CASE("the grouped convolution tables predict ResNeXt-50's grouped layers on the H100",
          "[perf]") {
  std::ifstream in(test::data_path("tests/data/reference/h100-grouped-convs.json"));
  REQUIRE(in.good());
  nlohmann::json layers = nlohmann::json::parse(in)["layers"];
  AnalysisOptions o;
  o.calibrated = std::make_shared<const Device>(calibrated_device(*default_profile("H100-SXM")));
  o.precision = Precision::bf16;
  LoadOptions load;
  Analysis a =
      analyze_onnx(test::data_path("tests/data/onnx/resnext50-grouped-convs.onnx"), load, o);
  for (const NodeResult& n : a.nodes) {
    INFO(n.name);
    CHECK(n.roof.table.rfind("conv.bf16.g3s", 0) == 0);
  }
  test::LayerErrors e =
      test::against_measured(a, layers, [](const std::string& op) { return op == "Conv"; });
  CHECK(e.time_weighted < 0.12);
  CHECK(std::fabs(e.sum) < 0.05);
}
