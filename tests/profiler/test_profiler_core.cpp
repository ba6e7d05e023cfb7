// The harness's plain-C++ half, without a GPU: statistics, external ids, attribution (on hand
// traces and on a trace recorded on an H100), prediction-vs-measurement and the error summary.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/formulas.hpp"
#include "profiler/measure/prediction_error.hpp"
#include "profiler/timeline/attribution.hpp"
#include "profiler/trace/trace_io.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

TEST_CASE("sample statistics: median, quartiles by interpolation, spread", "[profiler]") {
  SampleStats s = summarize_samples({4, 1, 3, 2});
  CHECK(s.n == 4);
  CHECK(s.median == Approx(2.5));
  CHECK(s.q1 == Approx(1.75));  // 0.25 * 3 = 0.75 between 1 and 2
  CHECK(s.q3 == Approx(3.25));
  CHECK(s.min == 1);
  CHECK(s.max == 4);
  CHECK(s.spread() == Approx(1.5 / 2.5));
  CHECK(quantile({10, 20, 30, 40, 50}, 0.9) == Approx(46));  // 0.9 * 4 = 3.6
  CHECK(summarize_samples({}).n == 0);
}

TEST_CASE("external ids carry layer and sample", "[profiler]") {
  for (int layer : {0, 7, 4999})
    for (int sample : {0, 1, 199}) {
      uint64_t id = external_id(layer, sample);
      CHECK(layer_of(id) == layer);
      CHECK(sample_of(id) == sample);
    }
  CHECK(range_name("model.layers.0.mlp", 3) == "model.layers.0.mlp#3");
}

namespace {

// Layer 3: two samples, the second with a split-K kernel pair and a workspace memset.
// Layer 5: one sample launched outside its NVTX range. Plus an L2 flush nobody owns.
Trace hand_trace() {
  Trace t;
  using K = GpuActivity::Kind;
  t.activities = {
      {K::memset, "memset", 0, 50, 1, 7, 1 << 20},     {K::kernel, "gemm_a", 100, 140, 2, 7, 0},
      {K::kernel, "gemm_a", 200, 240, 3, 7, 0},        {K::memset, "memset", 240, 250, 4, 7, 64},
      {K::kernel, "splitk_reduce", 250, 262, 5, 7, 0}, {K::kernel, "norm", 300, 310, 6, 7, 0}};
  t.externals = {{2, external_id(3, 0)},
                 {3, external_id(3, 1)},
                 {4, external_id(3, 1)},
                 {5, external_id(3, 1)},
                 {6, external_id(5, 0)}};
  t.api_calls = {{"cudaLaunchKernel", 10, 12, 2},
                 {"cuLaunchKernelEx", 20, 22, 3},
                 {"cudaMemsetAsync", 23, 24, 4},
                 {"cuLaunchKernelEx", 25, 27, 5},
                 {"cudaLaunchKernel", 90, 92, 6}};
  t.ranges = {{"rooflens", "blk.3#0", 5, 15},
              {"rooflens", "blk.3#1", 18, 30},
              {"rooflens", "blk.5#0", 40, 60},
              {"other", "blk.5#0", 80, 100}};
  return t;
}

}  // namespace

TEST_CASE("attribution by external id keeps every kernel of a layer and checks NVTX containment",
          "[profiler]") {
  Attribution a = attribute(hand_trace(), {{3, "blk.3"}, {5, "blk.5"}});
  CHECK(a.unattributed == 1);  // the L2 flush
  REQUIRE(a.samples.size() == 3);
  const SampleTime& s0 = a.samples.at({3, 0});
  CHECK(s0.gpu_ns == 40);
  CHECK(s0.kernels == 1);
  const SampleTime& s1 = a.samples.at({3, 1});
  CHECK(s1.gpu_ns == 40 + 10 + 12);  // both kernels and the memset, not the gap
  CHECK(s1.span_ns == 62);
  CHECK(s1.kernels == 2);
  CHECK(s1.names == std::vector<std::string>{"gemm_a", "memset", "splitk_reduce"});
  CHECK(a.nvtx_checked == 5);
  CHECK(a.nvtx_mismatches == 1);  // layer 5's launch at 90 is outside its rooflens range [40, 60]
  REQUIRE(a.problems.size() == 1);
  CHECK(a.problems[0].find("blk.5") != std::string::npos);
}

TEST_CASE("a sample's GPU time is its busy time: concurrent kernels count once, gaps not at all",
          "[profiler]") {
  Trace t;
  using K = GpuActivity::Kind;
  // [100, 150) and [120, 170) overlap on two streams: busy 100..170 = 70; then [200, 210): 10.
  t.activities = {{K::kernel, "a", 100, 150, 1, 7, 0},
                  {K::kernel, "b", 120, 170, 2, 8, 0},
                  {K::kernel, "c", 200, 210, 3, 7, 0},
                  {K::kernel, "inside", 130, 140, 4, 9, 0}};
  t.externals = {{1, external_id(0, 0)},
                 {2, external_id(0, 0)},
                 {3, external_id(0, 0)},
                 {4, external_id(0, 0)}};
  Attribution a = attribute(t, {});
  CHECK(a.samples.at({0, 0}).gpu_ns == 80);
  CHECK(a.samples.at({0, 0}).span_ns == 110);
  CHECK(a.samples.at({0, 0}).kernels == 4);
}

TEST_CASE("a trace recorded on an H100 (GPT-2 decode, first 14 layers) attributes cleanly",
          "[profiler]") {
  Trace t = read_trace(ROOFLENS_SOURCE_DIR "/tests/data/traces/gpt2-decode-h100.record.json");
  CHECK(t.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(t.dropped == 0);
  for (const auto& r : t.ranges) {
    CHECK(r.name.rfind('#') != std::string::npos);
    CHECK(r.domain == "rooflens");
    CHECK(r.start_ns < r.end_ns);
  }
  std::map<int, std::string> paths;  // layer index -> the path its NVTX ranges carry
  // Layer indices from the external ids; names from the ranges of sample 0 in launch order.
  std::set<int> layers;
  for (const auto& e : t.externals) layers.insert(layer_of(e.external_id));
  CHECK(layers.size() == 14);
  std::vector<const NvtxRange*> first;
  for (const auto& r : t.ranges)
    if (r.name.size() > 2 && r.name.compare(r.name.size() - 2, 2, "#0") == 0) first.push_back(&r);
  std::sort(first.begin(), first.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  REQUIRE(first.size() == layers.size());
  auto it = layers.begin();
  for (const NvtxRange* r : first) paths[*it++] = r->name.substr(0, r->name.size() - 2);
  CHECK(paths[0] == "transformer.wte");
  CHECK(paths[7] == "transformer.h.0.attn.attn");

  Attribution a = attribute(t, paths);
  CHECK(a.nvtx_mismatches == 0);
  CHECK(a.nvtx_checked == static_cast<int>(t.activities.size()) - a.unattributed);
  std::map<int, std::set<int>> kernels_per_sample;
  for (const auto& [key, s] : a.samples) {
    CHECK(s.kernels >= 1);
    kernels_per_sample[key.first].insert(s.kernels);
  }
  for (const auto& [layer, counts] : kernels_per_sample)
    CHECK(counts.size() == 1);                 // same launches every sample
  CHECK(*kernels_per_sample[6].begin() == 3);  // Split into q, k, v: three strided copies
  CHECK(*kernels_per_sample[7].begin() == 2);  // decode attention: split-KV pass and the combine
  bool saw_decode = false, saw_combine = false;
  for (const auto& [key, s] : a.samples)
    if (key.first == 7)
      for (const auto& n : s.names) {
        saw_decode |= n.find("decode_kernel") != std::string::npos;
        saw_combine |= n.find("decode_combine") != std::string::npos;
      }
  CHECK(saw_decode);
  CHECK(saw_combine);
  // The L2 flush between samples (a memset when this trace was recorded; a read pass now)
  // belongs to no layer.
  CHECK(a.unattributed > 0);
}

TEST_CASE("trace files: round trip and clear errors", "[profiler]") {
  Trace t = hand_trace();
  t.gpu = "test";
  std::string path = (std::filesystem::temp_directory_path() /
                      ("rooflens_trace_" + std::to_string(::getpid()) + ".json"))
                         .string();
  {
    std::ofstream out(path);
    write_trace(out, t);
  }
  Trace back = read_trace(path);
  CHECK(back.activities.size() == t.activities.size());
  CHECK(back.activities[4].name == "splitk_reduce");
  CHECK(back.externals[1].external_id == external_id(3, 1));
  CHECK(back.ranges[3].domain == "other");
  std::ofstream(path) << "{\"trace_version\": 2}";
  CHECK_THROWS_AS(read_trace(path), InputError);  // no header fields
  std::ofstream(path) << "{\"trace_version\": 3, \"gpu\": \"x\"}";
  CHECK_THROWS_WITH(read_trace(path), Catch::Contains("version 3"));
  std::ofstream(path) << "{\"trace_version\": 1, \"gpu\": 3}";
  CHECK_THROWS_AS(read_trace(path), InputError);
  std::remove(path.c_str());
}

TEST_CASE("prediction against measurement: achieved rates, measured class, signed error",
          "[profiler]") {
  Device d;
  d.hbm_bandwidth = 1e9;
  d.cuda_core_flops["fp32"] = 1e12;  // the fp32 node's roof, from the device
  NodeResult n;
  n.cost.flops = 1'000'000'000;
  n.cost.read_act = 1'000'000;
  n.roof.predicted = 1e-3;
  Measurement m;
  m.status = ReplayStatus::measured;
  // The class as Nsight Compute measures it (hw/roofline classify): on the CUDA cores about one
  // instruction per FLOP, issued at half the FP32 FLOP rate (5e11 per second here); DRAM at 1e9.
  m.time.median = 4e-3;
  complete_measurement(n, d, m);
  CHECK(m.achieved_flops == Approx(2.5e11));
  CHECK(m.achieved_bytes_per_s == Approx(2.5e8));
  // 1e9 instructions / (4 ms and ncu's window * 5e11); DRAM 0.25
  CHECK(m.roof_fraction == Approx(1e9 / ((4e-3 + kNsightDurationOverhead) * 5e11)));
  CHECK(m.measured_class == Bound::latency);  // below the 0.6 threshold
  CHECK(m.error == Approx(-0.75));            // (1 ms - 4 ms) / 4 ms
  m.time.median = 1.25e-3;                    // issue 1.6, DRAM 0.8: compute-bound
  complete_measurement(n, d, m);
  CHECK(m.measured_class == Bound::compute);
  CHECK(m.error == Approx(-0.2));
  n.cost.read_act = 4'000'000;  // DRAM now 3.2 of its roof's time share, above issue's 1.6
  complete_measurement(n, d, m);
  CHECK(m.measured_class == Bound::memory);
}

TEST_CASE("error summary: per class and for the whole model", "[profiler]") {
  Analysis a;
  auto add = [&](OpFamily f, double predicted, double measured) {
    NodeResult n;
    n.family = f;
    n.roof.predicted = predicted;
    Measurement m;
    m.status = ReplayStatus::measured;
    m.time.median = measured;
    m.error = (predicted - measured) / measured;
    n.measured = m;
    a.nodes.push_back(n);
  };
  add(OpFamily::gemm, 9, 10);   // -10%
  add(OpFamily::gemm, 12, 10);  // +20%
  add(OpFamily::gemm, 10, 10);  // 0
  add(OpFamily::norm, 1, 2);    // -50%
  NodeResult skipped;
  Measurement not_replayed;
  not_replayed.reason = "no kernel for X";  // status defaults to not_replayed
  skipped.measured = not_replayed;
  a.nodes.push_back(skipped);
  ProfileSummary s = summarize_profile(a, {});
  CHECK(s.measured == 4);
  CHECK(s.not_replayed == 1);
  REQUIRE(s.classes.size() == 2);
  CHECK(s.classes[0].family == "gemm");
  CHECK(s.classes[0].median_abs == Approx(0.1));
  CHECK(s.classes[0].p90_abs == Approx(0.18));  // 0.9 * 2 = 1.8 between 0.1 and 0.2
  CHECK(s.classes[1].median_abs == Approx(0.5));
  CHECK(s.predicted_s == Approx(32));
  CHECK(s.measured_s == Approx(32));
  CHECK(s.model_error == Approx(0));
  CHECK(s.median_abs_error == Approx(0.15));  // {0, 0.1, 0.2, 0.5}
  // Time-weighted: (1 + 2 + 0 + 1) / 32 overall; the model sum is exact while the layers are not.
  CHECK(s.time_weighted_error == Approx(4.0 / 32));
  CHECK(s.classes[0].time_weighted == Approx(3.0 / 30));
  CHECK(s.classes[1].time_weighted == Approx(0.5));
}
