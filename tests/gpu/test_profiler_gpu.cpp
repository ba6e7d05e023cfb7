// The harness on a real GPU: CUPTI sees every kernel with nothing dropped, NVTX ranges contain
// the launches attributed to them, a profile run measures every replayable layer, and
// calibrate's figures are plausible against the spec sheet.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>

#include "analyzer/hw/perf_model.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "gpu_helpers.hpp"
#include "kernels/calibrate_kernels.hpp"
#include "profiler/gpu/calibrate.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/harness.hpp"
#include "profiler/measure/prediction_error.hpp"
#include "profiler/timeline/attribution.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

TEST_CASE("CUPTI records every kernel launched under an external id, none dropped") {
  CuptiSession cupti;
  REQUIRE(cupti.ok());
  cupti.flush();
  for (int i = 0; i < 50; ++i) {
    cupti.push_external(external_id(7, i));
    kernels::empty_kernel(nullptr);
    cupti.pop_external();
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  Trace t = cupti.flush();
  CHECK(t.dropped == 0);
  Attribution a = attribute(t, {});
  CHECK(a.samples.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(a.samples[{7, i}].kernels == 1);
}

TEST_CASE(
    "profile of a GPT-2 decode step: every replayable layer measured, NVTX attribution right") {
  TransformerConfig c =
      load_transformer_config(gpu_test::checkout_file("samples/configs/gpt2/config.json"));
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.batch = 1;
  o.lowering.context = 256;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::f16;
  Graph g;
  Analysis a = analyze_transformer(c, o, &g);
  ProfileOptions po;
  po.max_samples = 10;
  Trace trace;
  ProfileMeasurements measured =
      run_profile(a, replay::plan_replay(a, g, std::nullopt), po, &trace);
  a = with_measurements(std::move(a), std::move(measured));
  REQUIRE(a.profile);
  CHECK(a.profile->timing == "cupti");
  CHECK(a.profile->valid);
  CHECK(a.profile->dropped_records == 0);
  CHECK(a.profile->measured > 50);
  std::map<int, std::string> paths;
  for (const NodeResult& n : a.nodes) {
    REQUIRE(n.measured);
    if (n.measured->status != ReplayStatus::measured) continue;
    CHECK(n.measured->time.n >= 10);
    CHECK(n.measured->kernels >= 1);
    CHECK(n.measured->time.median > 0);
    paths[n.index] = n.name;
  }
  Attribution at = attribute(trace, paths);
  CHECK(at.nvtx_checked > 0);
  CHECK(at.nvtx_mismatches == 0);
  for (auto& [index, name] : paths) CHECK(at.samples.count({index, 0}) == 1);
}

TEST_CASE("calibrate: figures plausible against the spec of this GPU") {
  CalibrateOptions o;
  o.quick = true;
  o.tables = false;
  DeviceProfile p = run_calibrate(o);
  Device spec = find_device(p.base_device);
  CHECK(p.hbm_bandwidth > 0.5 * spec.hbm_bandwidth);
  CHECK(p.hbm_bandwidth < 1.1 * spec.hbm_bandwidth);
  CHECK(p.l2_bandwidth > p.hbm_bandwidth);
  CHECK(p.tensor_flops.at("bf16") > 0.3 * spec.tensor_flops.at("bf16"));
  CHECK(p.tensor_flops.at("bf16") < 1.05 * spec.tensor_flops.at("bf16"));
  CHECK(p.launch_floor_s > 2e-7);
  CHECK(p.launch_floor_s < 2e-5);
  CHECK(p.gemm_floor_s > p.launch_floor_s);  // a GEMM loads its first tiles before any MMA
  CHECK(p.gemm_floor_s < 5e-5);
  CHECK(p.sm_clock_mhz > 500);
  CHECK(p.sm_clock_mhz < 3000);
}

TEST_CASE(
    "labels say what ran: a layer labelled with a vendor library ran that library's kernels, ours "
    "ran ours") {
  TransformerConfig c =
      load_transformer_config(gpu_test::checkout_file("samples/configs/gpt2/config.json"));
  for (Workload w : {Workload::prefill, Workload::decode}) {
    TransformerOptions o;
    o.workload = w;
    o.lowering.batch = 2;
    o.lowering.seq = 128;
    o.lowering.context = 300;
    o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
    Graph g;
    Analysis a = analyze_transformer(c, o, &g);
    ProfileOptions po;
    po.max_samples = 10;
    ProfileMeasurements measured =
        run_profile(a, replay::plan_replay(a, g, std::nullopt), po, nullptr);
    a = with_measurements(std::move(a), std::move(measured));
    REQUIRE(a.profile);
    int vendor = 0, ours = 0;
    for (const NodeResult& n : a.nodes) {
      if (!n.measured || n.measured->status != ReplayStatus::measured) continue;
      const Measurement& m = *n.measured;
      INFO(n.name << ": " << m.library << " " << m.algorithm << " ran "
                  << fmt::format("{}", fmt::join(m.kernel_names, ", ")));
      REQUIRE(!m.kernel_names.empty());
      int own = 0;
      for (const std::string& k : m.kernel_names)
        own += k.find("rooflens") != std::string::npos;  // our namespace, mangled
      int total = static_cast<int>(m.kernel_names.size());
      if (m.library == "rooflens") {
        CHECK(own == total);
        ++ours;
      } else if (m.library.find("rooflens") == std::string::npos) {
        CHECK(own == 0);
        ++vendor;
      } else {
        CHECK(own > 0);
        CHECK(own < total);
      }
    }
    CHECK(vendor > 0);  // every GEMM runs cuBLASLt or, where measured faster, our GEMV
    CHECK(ours > 0);
  }
}

TEST_CASE(
    "calibrate --quick measures its tables: timed points in every table, held-out errors, "
    "predictions read them") {
  CalibrateOptions o;
  o.quick = true;
  DeviceProfile p = run_calibrate(o);
  REQUIRE_FALSE(p.tables.empty());
  for (const TableGrid& g : calibration_grids(true)) {
    INFO(g.key);
    REQUIRE(p.tables.tables.count(g.key));
    const PerfTable& t = p.tables.tables.at(g.key);
    int timed = 0;
    for (double s : t.seconds) timed += s > 0;
    CHECK(timed > 0);
    CHECK(p.tables.validation.count(g.key));
  }
  // A decode-step GEMM inside the quick grid is predicted from the table.
  Device d = calibrated_device(p);
  NodeCost c;
  c.kernel.gemm = GemmDims{1, 8, 4096, 4096};
  c.flops = gemm_flops(*c.kernel.gemm);
  c.read_act = 8 * 4096 * 2;
  c.read_weight = 4096 * 4096 * 2;
  c.written = 8 * 4096 * 2;
  c.tensor_cores = true;
  RooflinePoint r = place_on_roofline(c, Precision::bf16, d);
  CHECK(r.source == PredictionSource::measured_table);
  CHECK(r.predicted > 5e-6);  // 32 MiB of weights at no more than ~3.35 TB/s
  CHECK(r.predicted < 50e-6);
}
