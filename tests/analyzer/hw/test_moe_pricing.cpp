// MoE nodes on the measured tables, on the CPU: the replay's batched expert GEMMs from the GEMM
// table or the expert tables, serve's engine kernels (grouped, fused, fused MXFP4) standing in for
// them, the experts a random routing touches, and what an expert table point measures.
#include <catch2/catch.hpp>
#include <cmath>

#include "analyzer/core/formulas.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/hw/perf_model.hpp"
#include "analyzer/hw/roofline.hpp"
#include "replay/grid_plans.hpp"

using namespace rooflens;
using Catch::Detail::Approx;

namespace {

// 16 tokens, top-2 of 4 gated experts, hidden 512, width 1024: 32 assignments, all 4 experts
// active with 8 rows each; every expert read (3 projections of 512 x 1024 bf16).
NodeCost small_moe_node() {
  NodeCost c;
  c.kernel.moe = MoeDims{16, 512, 1024, 4, 2, true};
  c.tensor_cores = c.tiled = true;
  c.flops = 32LL * 3 * 2 * 512 * 1024;
  c.read_weight = static_cast<int64_t>(expected_distinct_experts(4, 2, 16) * 3 * 512 * 1024 * 2);
  return c;
}

// A table that takes `seconds` at every point.
PerfTable constant_table(std::vector<std::string> axes, std::vector<std::vector<double>> grid,
                         double seconds) {
  PerfTable t;
  t.axes = std::move(axes);
  t.grid = std::move(grid);
  t.seconds.assign(t.size(), seconds);
  return t;
}

}  // namespace

TEST_CASE("a MoE node is priced as the replay runs it: batched expert GEMMs from the GEMM table",
          "[perf][moe]") {
  Device d = find_device("H100-SXM");
  PerfTable t = constant_table({"align", "m", "n", "k"},
                               {{8, 128}, {16, 64}, {512, 2048}, {256, 1024}}, 7.5e-6);
  auto db = std::make_shared<PerfDatabase>();
  db->tables["gemm.bf16"] = t;
  d.perf = db;
  NodeCost c = small_moe_node();
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::measured_table);
  CHECK(p.table == "gemm.bf16");
  // Each projection: one GEMM of 4 x 8 = 32 rows from the table (7.5 us), above 4 experts' 1 MiB
  // of weights at the HBM rate. Then the memory kernels: the router's 16 x 4, the dispatch's 32
  // rows read and written, gate, up and their product over 32 x 1024, the outputs and the 16 sums.
  REQUIRE(d.gemm_floor_s == 0);  // the spec device: a tiled kernel pays the launch floor
  double weights = 4.0 * 512 * 1024 * 2 / d.hbm_bandwidth + d.launch_floor_s;
  REQUIRE(weights < 7.5e-6);
  double moved = 16 * 4 * 2 + 2 * 32 * 512 * 2 + 3 * 32 * 1024 * 2 + 32 * 512 * 2 + 16 * 512 * 2;
  CHECK(p.predicted == Approx(3 * 7.5e-6 + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  // A table ten times faster: the weights' stream sets each projection's time.
  PerfTable fast = t;
  fast.seconds.assign(t.size(), 0.75e-6);
  auto faster = std::make_shared<PerfDatabase>();
  faster->tables["gemm.bf16"] = fast;
  d.perf = faster;
  p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.predicted ==
        Approx(3 * std::max(0.75e-6, weights) + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  // No GEMM table for the precision: the roofline.
  CHECK(place_on_roofline(c, Precision::fp8, d).source == PredictionSource::roofline);
}

TEST_CASE("MXFP4 experts are priced from serve's fused MXFP4 table where the profile has one",
          "[perf][moe]") {
  // small_moe_node with its experts in MXFP4: half a byte a weight and an e8m0 scale per 32.
  NodeCost c = small_moe_node();
  c.kernel.moe->mxfp4_weights = true;
  c.read_weight = static_cast<int64_t>(expected_distinct_experts(4, 2, 16) * 3 * 512 * 1024 *
                                       (0.5 + 1.0 / kMxfp4Block));
  Device d = find_device("H100-SXM");
  auto db = std::make_shared<PerfDatabase>();
  db->tables["moe_fused.mxfp4"] = constant_table(
      {"experts", "rows", "n", "k"}, {{2, 8}, {4, 16}, {512, 2048}, {256, 1024}}, 12e-6);
  d.perf = db;
  // Outside serve (the replay's batched kernel has no MXFP4 table): not the fused table.
  CHECK(place_on_roofline(c, Precision::bf16, d).table != "moe.mxfp4");
  // serve's fused kernel: each of the three projections at the table's 12 us, and the same memory
  // kernels as the bf16 node's (bf16 rows).
  ExpertTables fused = with_expert_kernel(db, ExpertKernel::fused);
  CHECK(fused.priced == ExpertKernel::fused);
  d.perf = fused.db;
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::measured_table);
  CHECK(p.table == "moe.mxfp4");
  double moved = 16 * 4 * 2 + 2 * 32 * 512 * 2 + 3 * 32 * 1024 * 2 + 32 * 512 * 2 + 16 * 512 * 2;
  CHECK(p.predicted == Approx(3 * 12e-6 + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  // The table's work: bf16 rows and outputs, 0.5 + 1/32 bytes a weight.
  GridWork w = grid_work("moe_fused.mxfp4", {4, 8, 512, 1024});
  CHECK(w.precision == Precision::bf16);
  CHECK(w.bytes == Approx(4 * (2.0 * 8 * 1024 + 512.0 * 1024 * (0.5 + 1.0 / 32) + 2.0 * 8 * 512)));
  CHECK(w.flops == Approx(4 * 2.0 * 8 * 512 * 1024));
}

TEST_CASE("a MoE node's projections come from the expert table where the profile has one",
          "[perf][moe]") {
  Device d = find_device("H100-SXM");
  auto db = std::make_shared<PerfDatabase>();
  PerfTable experts = constant_table({"experts", "rows", "n", "k"},
                                     {{2, 8}, {4, 16}, {512, 2048}, {256, 1024}}, 20e-6);
  db->tables["moe.bf16"] = experts;
  d.perf = db;
  NodeCost c = small_moe_node();
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::measured_table);
  CHECK(p.table == "moe.bf16");
  // Three projections at the table's 20 us (a constant table interpolates to itself), the same
  // memory kernels as above.
  double moved = 16 * 4 * 2 + 2 * 32 * 512 * 2 + 3 * 32 * 1024 * 2 + 32 * 512 * 2 + 16 * 512 * 2;
  CHECK(p.predicted == Approx(3 * 20e-6 + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  // 64 experts are beyond the grid: fitted, the weights' stream scaled 8x from the 8-expert edge.
  NodeCost wide = c;
  wide.kernel.moe = MoeDims{256, 512, 1024, 64, 2, true};
  wide.read_weight =
      static_cast<int64_t>(expected_distinct_experts(64, 2, 256) * 3 * 512 * 1024 * 2);
  CHECK(place_on_roofline(wide, Precision::bf16, d).source == PredictionSource::fitted);
  // int4 weights (a quarter of bf16's bytes) are another kernel: not the expert table's.
  NodeCost int4 = c;
  int4.read_weight = c.read_weight / 4;
  CHECK(place_on_roofline(int4, Precision::bf16, d).table != "moe.bf16");
  // fp8 experts read the fp8 table, which this profile lacks: no table, the roofline.
  CHECK(place_on_roofline(c, Precision::fp8, d).source == PredictionSource::roofline);
  // So do fp8-stored experts under bf16 activations (engines quantize the routed rows).
  NodeCost fp8_experts = c;
  fp8_experts.kernel.moe->fp8_weights = true;
  fp8_experts.read_weight = c.read_weight / 2;
  CHECK(place_on_roofline(fp8_experts, Precision::bf16, d).source == PredictionSource::roofline);
  // serve's engines run their own kernels: a profile's moe_grouped table stands in for moe's
  // (here twice as slow), and moe_fused for the engines that run the fused kernel.
  PerfTable grouped = experts, fused = experts;
  grouped.seconds.assign(grouped.size(), 40e-6);
  fused.seconds.assign(fused.size(), 30e-6);
  auto with_grouped = std::make_shared<PerfDatabase>(*db);
  with_grouped->tables["moe_grouped.bf16"] = grouped;
  ExpertTables g = with_expert_kernel(with_grouped, ExpertKernel::grouped);
  CHECK(g.priced == ExpertKernel::grouped);
  d.perf = g.db;
  CHECK(d.perf->tables.at("moe.bf16").seconds.front() == 40e-6);
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted ==
        Approx(3 * 40e-6 + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  // The fused kernel wanted where the profile has only grouped tables: the grouped ones, said so.
  ExpertTables f = with_expert_kernel(with_grouped, ExpertKernel::fused);
  CHECK(f.priced == ExpertKernel::grouped);
  CHECK(f.db->tables.at("moe.bf16").seconds.front() == 40e-6);
  auto with_both = std::make_shared<PerfDatabase>(*with_grouped);
  with_both->tables["moe_fused.bf16"] = fused;
  f = with_expert_kernel(with_both, ExpertKernel::fused);
  CHECK(f.priced == ExpertKernel::fused);
  d.perf = f.db;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted ==
        Approx(3 * 30e-6 + moved / d.hbm_bandwidth + 4 * d.launch_floor_s));
  CHECK(with_expert_kernel(with_both, ExpertKernel::grouped)
            .db->tables.at("moe.bf16")
            .seconds.front() == 40e-6);
  // Without the engines' tables (or asked for the batched kernel) the database is the one given.
  CHECK(with_expert_kernel(db, ExpertKernel::fused).db == db);
  CHECK(with_expert_kernel(db, ExpertKernel::fused).priced == ExpertKernel::batched);
  CHECK(with_expert_kernel(with_both, ExpertKernel::batched).db == with_both);
}

TEST_CASE("serve's engines route a MoE layer's tokens at random: the experts they touch",
          "[perf][moe]") {
  // 16 tokens, top-8 of 128 experts (Qwen3-30B-A3B's decode at batch 16): 128 assignments. The
  // replay sends them round-robin, one row to every expert; a random top-8 touches
  // 128 (1 - (1 - 8/128)^16) = 82.4 experts on average, 82 of them with ceil(128 / 82) = 2 rows.
  // A table whose time is proportional to the experts (1 us each) interpolates exactly in log
  // space, so the projections say how many experts were priced.
  Device d = find_device("H100-SXM");
  auto db = std::make_shared<PerfDatabase>();
  PerfTable t = constant_table({"experts", "rows", "n", "k"},
                               {{2, 128}, {1, 4}, {512, 2048}, {512, 2048}}, 0);
  for (size_t i = 0; i < t.size(); ++i) t.seconds[i] = i < t.size() / 2 ? 2e-6 : 128e-6;
  db->tables["moe.bf16"] = t;
  d.perf = db;
  NodeCost c;
  c.kernel.moe = MoeDims{16, 2048, 768, 128, 8, true};
  c.tensor_cores = c.tiled = true;
  c.read_weight = static_cast<int64_t>(expected_distinct_experts(128, 8, 16) * 3 * 2048 * 768 * 2);
  auto moved = [](double slots) {  // router, dispatch, gate/up/product, outputs, sums
    return 16 * 128 * 2 + 2 * 128 * 2048 * 2 + 3 * slots * 768 * 2 + slots * 2048 * 2 +
           16 * 2048 * 2;
  };
  double floors = 4 * d.launch_floor_s;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted ==
        Approx(3 * 128e-6 + moved(128) / d.hbm_bandwidth + floors));
  // Engines also run the gate and up projections as one (1,536 wide, the table's time for 82
  // experts again: it is constant in n): two projections, not three.
  d.engine_routing = true;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted ==
        Approx(2 * 82e-6 + moved(128) / d.hbm_bandwidth + floors));
}

TEST_CASE("an expert table point is one batched GEMM of its experts' rows", "[perf][moe]") {
  // 2 experts x 3 rows against [4, 5] weights each, in bf16: 2 * 2*3*4*5 FLOPs; rows, weights and
  // outputs of both experts.
  GridWork w = grid_work("moe.bf16", {2, 3, 4, 5});
  CHECK(w.flops == 240);
  CHECK(w.bytes == 2 * (3 * 5 + 4 * 5) * 2 + 2 * 3 * 4 * 2);
  CHECK(w.tensor_cores);
  // fp8: one byte an operand element, bf16 outputs.
  CHECK(grid_work("moe.fp8", {2, 3, 4, 5}).bytes == 2 * (3 * 5 + 4 * 5) + 2 * 3 * 4 * 2);
  replay::GridPlan g = replay::plan_for_grid_point("moe.fp8", {4, 16, 512, 1024});
  const auto& gp = g.plan.as<replay::GemmPlan>();
  CHECK(gp.dims.batch == 4);
  CHECK(gp.dims.m == 16);
  CHECK_FALSE(gp.b_shared);
  CHECK_FALSE(gp.b_kn);  // [experts, n, k], as engines store experts
  CHECK(g.plan.inputs[1].bytes == 4 * 512 * 1024);
  CHECK(g.plan.outputs[0].dtype == DType::bf16);
  CHECK(expert_gemm_query(Precision::fp16, 4, 16, 512, 1024)->table == "moe.bf16");
  CHECK_FALSE(expert_gemm_query(Precision::int8, 4, 16, 512, 1024));
}
