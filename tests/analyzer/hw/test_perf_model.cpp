// The measured performance tables on the CPU: interpolation (exact at grid points, power laws
// reproduced between them, nothing beyond the grid), which table a node reads and at which
// coordinates, predictions from a table with their source, and device profiles that carry tables.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/hw/perf_model.hpp"
#include "analyzer/hw/roofline.hpp"
#include "replay/grid_plans.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;

namespace {

// t = 1e-9 * m * n * k / 1e3 (a compute-bound GEMM at 2 TFLOP/s of MACs, say) on a pow2 grid.
PerfTable power_law_table() {
  PerfTable t;
  t.axes = {"m", "n", "k"};
  t.grid = {{16, 64, 256, 1024}, {256, 1024, 4096}, {256, 4096}};
  for (double m : t.grid[0])
    for (double n : t.grid[1])
      for (double k : t.grid[2]) t.seconds.push_back(1e-12 * m * n * k);
  return t;
}

}  // namespace

TEST_CASE(
    "table lookup: exact at grid points, exact on power laws between them, nothing beyond the grid",
    "[perf]") {
  PerfTable t = power_law_table();
  CHECK(*t.lookup({64, 1024, 4096}) == Approx(1e-12 * 64 * 1024 * 4096));
  // Between grid points on every axis: log-linear interpolation reproduces t ~ m n k exactly.
  CHECK(*t.lookup({100, 2000, 1000}) == Approx(1e-12 * 100 * 2000 * 1000));
  CHECK(*t.lookup({16, 256, 256}) == Approx(1e-12 * 16 * 256 * 256));  // the lowest corner
  CHECK(*t.lookup({1024, 4096, 4096}) == Approx(1e-12 * 1024 * 4096 * 4096));
  CHECK_FALSE(t.lookup({8, 1024, 1024}));   // below the grid
  CHECK_FALSE(t.lookup({64, 8192, 1024}));  // beyond it
  CHECK_FALSE(t.lookup({64, 1024}));        // wrong rank
  CHECK(t.clamp({8, 8192, 1000}) == std::vector<double>{16, 4096, 1000});
  // A corner not measured: no interpolation across it.
  PerfTable holed = t.without(t.flat_index({1, 1, 1}));
  CHECK_FALSE(holed.lookup({100, 2000, 1000}));
  CHECK(holed.lookup({300, 2000, 300}));  // a cell away from the hole
}

TEST_CASE("beyond a table's edge the time scales with the work, and below it only above the floor",
          "[perf]") {
  PerfTable t;
  t.axes = {"bytes"};
  t.grid = {{4096, 65536}};
  t.seconds = {3.0e-6, 5.0e-6};
  auto bytes = [](const std::vector<double>& x) { return x[0]; };
  // Four times the largest point's bytes: 4 x 5 us.
  CHECK(*t.extrapolate({262144}, bytes, 1.5e-6) == Approx(20e-6));
  // A sixteenth of the smallest point's: the 1.5 us floor plus a sixteenth of the 1.5 us above it.
  CHECK(*t.extrapolate({256}, bytes, 1.5e-6) == Approx(1.5e-6 + 1.5e-6 / 16));
  // No floor given: proportional all the way down (the previous rule, still the default).
  CHECK(*t.extrapolate({256}, bytes) == Approx(3.0e-6 / 16));
}

TEST_CASE("table lookup is monotonic where the measured times are", "[perf]") {
  PerfTable t;
  t.axes = {"bytes"};
  t.grid = {{4096, 65536, 1048576, 16777216}};
  t.seconds = {2.0e-6, 2.4e-6, 4.0e-6, 9.0e-6};  // a floor, then bandwidth
  double last = 0;
  for (double b = 4096; b <= 16777216; b *= 1.37) {
    double v = *t.lookup({b});
    CHECK(v >= last);
    last = v;
  }
}

TEST_CASE(
    "which table a node reads: GEMM alignment classes, attention, convolution, memory kernels",
    "[perf]") {
  CHECK(gemm_alignment(4096, 4096) == 128);
  CHECK(gemm_alignment(50264, 768) == 8);
  CHECK(gemm_alignment(50257, 768) == 1);
  CHECK(gemm_alignment(1000, 768) == 8);
  CHECK(gemm_alignment(11008, 4096) == 128);  // 11008 = 86 * 128

  NodeCost g;
  g.kernel.gemm = GemmDims{1, 1000, 50257, 768};
  auto q = perf_query(g, Precision::bf16);
  REQUIRE(q);
  CHECK(q->table == "gemm.bf16");
  CHECK(q->x == std::vector<double>{1, 1000, 50257, 768});
  CHECK(perf_query(g, Precision::fp16)->table == "gemm.bf16");  // fp16 runs at bf16's speed
  CHECK(perf_query(g, Precision::fp8)->table == "gemm.fp8");
  CHECK_FALSE(perf_query(g, Precision::int8));

  NodeCost a;
  a.kernel.attention = AttentionDims{2, 32, 8, 1, 4097, 128, 128, true, 0};
  q = perf_query(a, Precision::bf16);
  REQUIRE(q);
  CHECK(q->table == "attn_decode.bf16");
  CHECK(q->x == std::vector<double>{128, 4, 16, 4097});
  a.kernel.attention_fp8_cache = true;  // the same step over an fp8 cache: its own table
  CHECK(perf_query(a, Precision::bf16)->table == "attn_decode.bf16.kv_fp8");
  CHECK(perf_query(a, Precision::bf16)->x == std::vector<double>{128, 4, 16, 4097});
  a.kernel.attention_fp8_cache = false;
  // Causal prefill of 1000 tokens: 500,500 scores per head, the square causal self-attention of
  // 1000.
  a.kernel.attention = AttentionDims{1, 12, 12, 1000, 1000, 64, 64, true, 0};
  q = perf_query(a, Precision::bf16);
  CHECK(q->table == "attn_prefill.bf16.causal");
  CHECK(q->x[1] == 12);
  CHECK(q->x[2] == Approx(1000));
  a.kernel.attention_fp8_cache = true;  // over an fp8 cache the prefill runs fp8 attention
  CHECK(perf_query(a, Precision::bf16)->table == "attn_prefill.fp8.causal");
  a.kernel.attention_fp8_cache = false;
  // A sliding window of 256 over 4096 tokens executes about as many scores as 1,400 causal ones.
  a.kernel.attention = AttentionDims{1, 8, 8, 4096, 4096, 128, 128, true, 256};
  double pairs = static_cast<double>(attention_pairs(4096, 4096, true, 256));
  double s = perf_query(a, Precision::bf16)->x[2];
  CHECK(s * (s + 1) / 2 == Approx(pairs));
  a.kernel.attention = AttentionDims{1, 16, 1, 1, 300, 576, 512, true, 0};  // MLA: no table
  CHECK_FALSE(perf_query(a, Precision::bf16));

  NodeCost c;
  c.kernel.conv =
      ConvDims{32, 256, 64, 1, {56, 56}, {1, 1}, {56, 56}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  q = perf_query(c, Precision::bf16);
  CHECK(q->table == "conv.bf16.k1s1");
  CHECK(q->x == std::vector<double>{32.0 * 56 * 56, 64, 256});
  c.kernel.conv->groups = 32;  // grouped: no table
  CHECK_FALSE(perf_query(c, Precision::bf16));

  NodeCost n;
  n.read_act = 4096 * 2;
  n.written = 4096 * 2;
  n.kernel.memory = MemoryKernel::norm;
  n.kernel.rows = 1;
  n.kernel.cols = 4096;
  CHECK(perf_query(n, Precision::bf16)->x == std::vector<double>{8, 1, 4096});
  CHECK(perf_query(n, Precision::fp32)->x ==
        std::vector<double>{8, 1, 8192});  // twice the bytes per row
  n.kernel.cols = 197;  // ViT's attention rows: not whole 16-byte vectors, the scalar path
  CHECK(perf_query(n, Precision::bf16)->x == std::vector<double>{1, 1, 197});
  n.kernel.cols = 4096;
  n.kernel.memory = MemoryKernel::transpose;
  CHECK(perf_query(n, Precision::bf16)->table == "mem.transpose");
  CHECK(perf_query(n, Precision::bf16)->x == std::vector<double>{16384});
  n.kernel.memory = MemoryKernel::none;
  CHECK_FALSE(perf_query(n, Precision::bf16));
}

TEST_CASE("weight-only int4/int8 GEMMs read the woq tables, fp8 and 2-bit weights none", "[perf]") {
  NodeCost g;
  g.kernel.gemm = GemmDims{1, 1000, 50257, 768};
  // fp8 weights under bf16 activations (half the bytes): no table of their kernel.
  g.kernel.gemm_b_shared = true;
  g.read_weight = 50257 * 768;
  CHECK_FALSE(perf_query(g, Precision::bf16));
  // Weight-only integer weights: int4 a quarter of dense bf16 ones, int8 half; other kernels,
  // with tables of their own (rows, n, k). 16-bit activations only; 2-bit weights have none.
  g.kernel.gemm_weight_only = true;
  g.read_weight = 50257 * 768 / 2 + 50257 * 6 * 2;  // packed nibbles and a scale per 128
  auto q = perf_query(g, Precision::bf16);
  REQUIRE(q);
  CHECK(q->table == "woq.int4");
  CHECK(q->x == std::vector<double>{1000, 50257, 768});
  g.read_weight = 50257 * 768;
  CHECK(perf_query(g, Precision::fp16)->table == "woq.int8");
  CHECK_FALSE(perf_query(g, Precision::fp32));
  g.read_weight = 50257 * 768 / 4;
  CHECK_FALSE(perf_query(g, Precision::bf16));
}

TEST_CASE(
    "predictions: the table inside the grid, the table scaled by the roofline beyond it, the "
    "roofline without one",
    "[perf]") {
  Device d = find_device("H100-SXM");
  NodeCost c;
  c.kernel.gemm = GemmDims{1, 1000, 2304, 768};
  c.flops = gemm_flops(*c.kernel.gemm);
  c.read_act = 1000 * 768 * 2;
  c.read_weight = 2304 * 768 * 2;
  c.written = 1000 * 2304 * 2;
  c.tensor_cores = true;
  c.parallel_tiles = gemm_tiles(*c.kernel.gemm);
  RooflinePoint spec = place_on_roofline(c, Precision::bf16, d);
  CHECK(spec.source == PredictionSource::roofline);

  PerfTable t;
  t.axes = {"align", "m", "n", "k"};
  t.grid = {{8, 128}, {512, 1024}, {2048, 4096}, {512, 1024}};
  t.seconds.assign(t.size(), 7.5e-6);
  auto db = std::make_shared<PerfDatabase>();
  db->tables["gemm.bf16"] = t;
  d.perf = db;
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::measured_table);
  CHECK(p.table == "gemm.bf16");
  CHECK(p.predicted == Approx(7.5e-6));
  // The class follows the fraction of the roofs Nsight Compute would see: the tensor FLOP time
  // with the issue beside it (x kTensorIssueOverhead) over 7.5 us and the window ncu adds to a
  // kernel's duration; DRAM sees the 4.6 MB output not at all (it stays in L2) and the 5.1 MB read
  // in 1.5 us, far less.
  CHECK(p.roof_fraction ==
        Approx(p.t_compute * kTensorIssueOverhead / (7.5e-6 + kNsightDurationOverhead)));
  CHECK(p.bound == (p.roof_fraction < kLatencyThreshold ? Bound::latency : Bound::compute));

  // Twice the rows of the grid's largest: the edge's time, scaled as the roofline scales.
  c.kernel.gemm->m = 2048;
  c.flops = gemm_flops(*c.kernel.gemm);
  p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::fitted);
  GridWork edge = grid_work("gemm.bf16", {8, 1024, 2304, 768}),
           far = grid_work("gemm.bf16", {8, 2048, 2304, 768});
  auto ideal = [&](const GridWork& w) {
    return std::max(w.flops / d.tensor_flops.at("bf16"), w.bytes / d.hbm_bandwidth);
  };
  CHECK(p.predicted == Approx(7.5e-6 * ideal(far) / ideal(edge)));
  // Inside the grid where a corner of the cell was not measured: the nearest measured point of
  // the same class in log coordinates, scaled as the roofline scales. For 1500 x 2304 x 768 with
  // m = 2048 unmeasured that is m 1024 (log distance 0.38), n 2048 (0.12), k 1024 (0.29).
  PerfTable holes = t;
  holes.grid[1] = {512, 1024, 2048};
  holes.seconds.assign(holes.size(), 7.5e-6);
  for (double n : {2048.0, 4096.0})
    for (double k : {512.0, 1024.0})
      for (double align : {8.0, 128.0}) {
        std::vector<size_t> i{align == 8 ? 0u : 1u, 2, n == 2048 ? 0u : 1u, k == 512 ? 0u : 1u};
        holes.seconds[holes.flat_index(i)] = std::numeric_limits<double>::quiet_NaN();
      }
  db->tables["gemm.bf16"] = holes;
  c.kernel.gemm->m = 1500;
  c.flops = gemm_flops(*c.kernel.gemm);
  p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::fitted);
  GridWork inside = grid_work("gemm.bf16", {8, 1500, 2304, 768}),
           nearest = grid_work("gemm.bf16", {8, 1024, 2048, 1024});
  CHECK(p.predicted == Approx(7.5e-6 * ideal(inside) / ideal(nearest)));
  db->tables["gemm.bf16"] = t;
  // An alignment below every measured class: the roofline, not an aligned kernel's time.
  c.kernel.gemm->n = 2305;
  CHECK(place_on_roofline(c, Precision::bf16, d).source == PredictionSource::roofline);
}

TEST_CASE("an aligned GEMM reads the aligned kernels' times, never the unaligned ones'", "[perf]") {
  Device d = find_device("H100-SXM");
  NodeCost c;
  c.kernel.gemm = GemmDims{1, 1000, 2320, 768};
  c.flops = gemm_flops(*c.kernel.gemm);
  c.tensor_cores = true;
  PerfTable quick;
  quick.axes = {"align", "m", "n", "k"};
  quick.grid = {{1, 128}, {512, 1024}, {2048, 4096}, {512, 1024}};
  // calibrate --quick's alignment classes: the unaligned kernels and the 128-aligned ones, the
  // unaligned ten times slower here. A 16-aligned GEMM (n = 2320) runs an aligned kernel and
  // reads the aligned time, not a log-interpolation 43% of the way toward the unaligned one; an
  // unaligned GEMM (n = 2305) reads the unaligned time.
  quick.seconds.assign(quick.size(), 7.5e-6);
  for (size_t i = 0; i < quick.size() / 2; ++i) quick.seconds[i] = 75e-6;
  auto db = std::make_shared<PerfDatabase>();
  db->tables["gemm.bf16"] = quick;
  d.perf = db;
  REQUIRE(gemm_alignment(2320, 768) == 16);
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.source == PredictionSource::measured_table);
  CHECK(p.predicted == Approx(7.5e-6));
  c.kernel.gemm->n = 2305;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted == Approx(75e-6));
}

TEST_CASE("device profiles carry their tables, and bad tables are input errors that name the table",
          "[perf]") {
  auto dir = test::scratch_dir("perfprof");
  DeviceProfile p;
  p.base_device = "H100-SXM";
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.hbm_bandwidth = 3.0e12;
  p.tensor_flops["bf16"] = 7.6e14;
  p.launch_floor_s = 1.5e-6;
  PerfTable t = power_law_table();
  t.seconds[3] = std::numeric_limits<double>::quiet_NaN();  // a point calibrate did not time
  p.tables.tables["gemm.bf16"] = t;
  p.tables.validation["gemm.bf16"] = {20, 0.031, 0.08};
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  };
  DeviceProfile back = read_device_profile(write("tables.json", device_profile_json(p)));
  const PerfTable& b = back.tables.tables.at("gemm.bf16");
  CHECK(b.grid == t.grid);
  CHECK(std::isnan(b.seconds[3]));
  CHECK(b.seconds[5] == Approx(t.seconds[5]).epsilon(1e-3));  // stored to four digits
  CHECK(back.tables.validation.at("gemm.bf16").shapes == 20);
  CHECK(calibrated_device(back).perf);

  auto j = nlohmann::json::parse(device_profile_json(p));
  // How the file was made survives a read and a write (calibrate --add-to rewrites the file).
  auto with_provenance = j;
  with_provenance["provenance"] = {{"script", "rooflens calibrate"}, {"date", "2026-11-26"}};
  auto kept = nlohmann::json::parse(
      device_profile_json(read_device_profile(write("provenance.json", with_provenance.dump()))));
  CHECK(kept["provenance"] == with_provenance["provenance"]);
  auto bad = [&](const std::string& name, const std::function<void(nlohmann::json&)>& spoil,
                 const std::string& needle) {
    auto k = j;
    spoil(k);
    CHECK_THROWS_WITH(read_device_profile(write(name, k.dump())), Catch::Contains(needle));
  };
  bad(
      "neg.json", [](auto& k) { k["tables"]["gemm.bf16"]["seconds"][0] = -1e-6; },
      "table gemm.bf16");
  bad(
      "short.json", [](auto& k) { k["tables"]["gemm.bf16"]["seconds"].erase(0); },
      "times for a grid of");
  bad(
      "order.json",
      [](auto& k) {
        k["tables"]["gemm.bf16"]["grid"][0] = {64, 16, 256, 1024};
      },
      "ascending");
  bad(
      "axes.json", [](auto& k) { k["tables"]["gemm.bf16"]["axes"] = {"m"}; },
      "axes and grid disagree");
  bad(
      "missing.json", [](auto& k) { k["tables"]["gemm.bf16"].erase("seconds"); },
      "not a device profile");
  bad(
      "future.json", [](auto& k) { k["schema_version"] = 9; }, "reads 1 to");
  // A profile written before the tables (schema 1) still loads, without tables.
  auto old = j;
  old["schema_version"] = 1;
  old.erase("tables");
  old.erase("validation");
  CHECK_FALSE(calibrated_device(read_device_profile(write("v1.json", old.dump()))).perf);
}

TEST_CASE("calibrate's plans for table points are the kernels a node with those coordinates runs",
          "[perf]") {
  // An alignment class is measured on N next to the power of two (K, a hidden size, stays
  // aligned) and scaled back by the work.
  replay::GridPlan g = replay::plan_for_grid_point("gemm.bf16", {8, 64, 1024, 4096});
  const auto& gp = g.plan.as<replay::GemmPlan>();
  CHECK(gp.dims.n == 1032);
  CHECK(gp.dims.k == 4096);
  CHECK(gemm_alignment(gp.dims.n, gp.dims.k) == 8);
  CHECK(g.scale == Approx(1024.0 / 1032.0));
  CHECK(gemm_alignment(replay::plan_for_grid_point("gemm.bf16", {1, 64, 1024, 4096})
                           .plan.as<replay::GemmPlan>()
                           .dims.n,
                       4096) == 1);
  // The element-wise sweep runs the vector path: whole 16-byte vectors.
  CHECK(replay::plan_for_grid_point("mem.elementwise", {4096}).plan.inputs[0].shape[0] % 8 == 0);
  // A ViT patch embedding is a table point of its own class.
  replay::GridPlan patch = replay::plan_for_grid_point("conv.bf16.k16s16", {196, 1024, 3});
  NodeCost pc;
  pc.kernel.conv = patch.plan.as<replay::ConvPlan>().conv;
  CHECK(perf_query(pc, Precision::bf16)->x == std::vector<double>{196, 1024, 3});
  // A decode point: 64 KV heads in all as 8 sequences of 8, each with groups of 4 query heads.
  replay::GridPlan decode_point =
      replay::plan_for_grid_point("attn_decode.bf16", {128, 4, 64, 1024});
  const auto& ap = decode_point.plan.as<replay::AttentionPlan>();
  CHECK(ap.dims.batch * ap.dims.kv_heads == 64);
  CHECK(ap.dims.q_heads == 4 * ap.dims.kv_heads);
  NodeCost decode;
  decode.kernel.attention = ap.dims;
  CHECK(perf_query(decode, Precision::bf16)->x == std::vector<double>{128, 4, 64, 1024});
  // The same point over an fp8 cache: K and V of 64 heads x 1024 keys x 128, a byte each; the
  // table's work counts those bytes and the bf16 queries (64 x 4 heads x 128 x 2 B, in and out).
  replay::GridPlan fp8_point =
      replay::plan_for_grid_point("attn_decode.bf16.kv_fp8", {128, 4, 64, 1024});
  CHECK(fp8_point.plan.inputs[0].dtype == DType::bf16);
  for (size_t i : {1u, 2u}) CHECK(fp8_point.plan.inputs[i].dtype == DType::f8e4m3fn);
  CHECK(fp8_point.plan.inputs[1].bytes == 64 * 1024 * 128);
  CHECK(grid_work("attn_decode.bf16.kv_fp8", {128, 4, 64, 1024}).bytes ==
        2.0 * 64 * 1024 * 128 + 2.0 * 64 * 4 * 128 * 2);
  CHECK(grid_work("attn_decode.bf16", {128, 4, 64, 1024}).bytes ==
        2.0 * 64 * 1024 * 128 * 2 + 2.0 * 64 * 4 * 128 * 2);
  // A convolution point maps back to its coordinates.
  replay::GridPlan cv = replay::plan_for_grid_point("conv.bf16.k3s2", {3136, 256, 64});
  NodeCost conv;
  conv.kernel.conv = cv.plan.as<replay::ConvPlan>().conv;
  auto q = perf_query(conv, Precision::bf16);
  CHECK(q->table == "conv.bf16.k3s2");
  CHECK(q->x == std::vector<double>{3136, 256, 64});
  CHECK_THROWS_AS(replay::plan_for_grid_point("gemm.bf16", {1, 2}), InputError);
  // A depthwise point: ConvNeXt's first stage, 32 images of 56 x 56 with 96 channels, its bias.
  replay::GridPlan dw = replay::plan_for_grid_point("conv.bf16.dw7s1", {32 * 56 * 56, 96});
  const auto& dwp = dw.plan.as<replay::ConvPlan>();
  CHECK(dwp.conv.groups == 96);
  CHECK(dwp.conv.batch == 32);
  CHECK(dwp.conv.out_spatial == std::vector<int64_t>{56, 56});
  CHECK(dwp.bias);
  // Every convolution table calibrate measures, quick or full, has plans for its first and last
  // points, and they map back to that table and point; every other table has a plan for its first.
  for (bool quick : {false, true})
    for (const TableGrid& t : calibration_grids(quick)) {
      std::vector<double> first, last;
      for (const auto& axis : t.grid) first.push_back(axis.front()), last.push_back(axis.back());
      INFO(t.key << (quick ? " (quick)" : ""));
      if (t.key.rfind("conv.", 0) != 0) {
        CHECK_NOTHROW(replay::plan_for_grid_point(t.key, first));
        continue;
      }
      for (const auto& x : {first, last}) {
        NodeCost point;
        point.kernel.conv = replay::plan_for_grid_point(t.key, x).plan.as<replay::ConvPlan>().conv;
        auto back = perf_query(point, Precision::bf16);
        REQUIRE(back);
        CHECK(back->table.substr(back->table.find('.', 5)) ==
              t.key.substr(t.key.find('.', 5)));  // the class, whatever the dtype
        CHECK(back->x == x);
      }
    }
}

TEST_CASE("an fp8 prefill table point is fp8 attention over q, k and v in e4m3", "[perf]") {
  // q, k, v and the output of 16 heads x 2048 tokens x 128, a byte each; the causal square's
  // 2048 x 2049 / 2 scores per head, each two products of 2 x 128 FLOPs, the scale and the
  // softmax's 5 (formulas.hpp).
  replay::GridPlan fp8_prefill =
      replay::plan_for_grid_point("attn_prefill.fp8.causal", {128, 16, 2048});
  for (size_t i : {0u, 1u, 2u}) CHECK(fp8_prefill.plan.inputs[i].dtype == DType::f8e4m3fn);
  CHECK(fp8_prefill.plan.inputs[0].bytes == 16 * 2048 * 128);
  GridWork fp8_work = grid_work("attn_prefill.fp8.causal", {128, 16, 2048});
  CHECK(fp8_work.precision == Precision::fp8);
  CHECK(fp8_work.bytes == 4.0 * 16 * 2048 * 128);
  CHECK(fp8_work.flops == Approx(16.0 * 2048 * 2049 / 2 * (4 * 128 + 1 + 5)));
  CHECK(grid_work("attn_prefill.bf16.causal", {128, 16, 2048}).bytes == 2 * fp8_work.bytes);
}

TEST_CASE("a grouped 3x3 convolution maps to its table and a table point back to it", "[perf]") {
  // A ResNeXt-50 stage-2 opening: 256 channels in 32 groups of 8, stride 2, 4 images of 28 x 28
  // out.
  replay::GridPlan g = replay::plan_for_grid_point("conv.bf16.g3s2", {3136, 256, 8});
  const ConvDims& cv = g.plan.as<replay::ConvPlan>().conv;
  CHECK(cv.groups == 32);
  CHECK(cv.in_channels == 256);
  CHECK(cv.out_channels == 256);
  CHECK(cv.out_spatial == std::vector<int64_t>{28, 28});
  CHECK(cv.batch == 4);
  NodeCost conv;
  conv.kernel.conv = cv;
  auto q = perf_query(conv, Precision::bf16);
  REQUIRE(q);
  CHECK(q->table == "conv.bf16.g3s2");
  CHECK(q->x == std::vector<double>{3136, 256, 8});
  // Each output pixel and channel: 8 inputs x 9 taps, a multiply-add each. Bytes: the input at
  // twice the side, the output, the [256, 8, 3, 3] filters, 2 bytes an element.
  GridWork w = grid_work("conv.bf16.g3s2", {3136, 256, 8});
  CHECK(w.flops == 2.0 * 3136 * 256 * 8 * 9);
  CHECK(w.bytes == (3136.0 * 4 * 256 + 3136.0 * 256 + 256.0 * 8 * 9) * 2);
  CHECK(w.tensor_cores);
  // Grouped, but with more channels out than in: no table.
  ConvDims wide = cv;
  wide.out_channels = 512;
  conv.kernel.conv = wide;
  CHECK_FALSE(perf_query(conv, Precision::bf16));
}
