// `rooflens compare` without a GPU: timelines built by hand (bench/synthetic_timeline: GPT-2 as
// HF transformers calls its modules, with the kernels eager PyTorch launches), so every expected
// figure is a sum of durations written below. Attribution by vanilla nn.Module calls and by
// module-path ranges, instance names mapped to paths, steps, unattributed time and host gaps,
// CUDA graphs, model/trace mismatch and malformed files.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "cli_run.hpp"
#include "compare_fixtures.hpp"
#include "config_model.hpp"
#include "json_schema_check.hpp"
#include "profiler/timeline/instance_map.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/json_stream.hpp"
#include "profiler/trace/pytorch_trace.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"
#include "tests/support/synthetic_timeline.hpp"

using namespace rooflens;
using namespace rooflens::profiler;
using bench::SyntheticTimeline;
namespace fs = std::filesystem;

using namespace rooflens::test::compare_fixtures;

TEST_CASE(
    "a vanilla PyTorch trace: module instances named by path through the module tree and call "
    "order",
    "[compare]") {
  Trace t = through_file(gpt2_run(true).chrome_trace_json(), "vanilla.json");
  CHECK(t.source == "pytorch profiler");
  CHECK(t.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(t.activities.size() == 3 * 39);  // 3 + 2 x 17 + 2 kernels per forward
  std::vector<const NvtxRange*> modules;
  for (const auto& r : t.ranges)
    if (r.domain == kModuleDomain) modules.push_back(&r);
  ModelModules model(gpt2().analysis, gpt2().graph);
  InstanceMap m = map_instances(modules, model);
  CHECK(m.root == "GPT2LMHeadModel_0");
  // HF GPT-2 calls c_attn, c_proj (attention) then c_fc, c_proj (MLP) in each block: Conv1D_0..3 in
  // block 0, Conv1D_4..7 in block 1. LayerNorms: ln_1, ln_2 per block, then ln_f.
  std::map<std::string, std::string> expected{{"GPT2LMHeadModel_0", ""},
                                              {"GPT2Model_0", "transformer"},
                                              {"Embedding_0", "transformer.wte"},
                                              {"Embedding_1", "transformer.wpe"},
                                              {"GPT2Block_1", "transformer.h.1"},
                                              {"Conv1D_0", "transformer.h.0.attn.c_attn"},
                                              {"Conv1D_1", "transformer.h.0.attn.c_proj"},
                                              {"Conv1D_3", "transformer.h.0.mlp.c_proj"},
                                              {"Conv1D_6", "transformer.h.1.mlp.c_fc"},
                                              {"LayerNorm_3", "transformer.h.1.ln_2"},
                                              {"LayerNorm_4", "transformer.ln_f"},
                                              {"NewGELUActivation_1", "transformer.h.1.mlp.act"},
                                              {"GPT2Attention_0", "transformer.h.0.attn"},
                                              {"Linear_0", "lm_head"}};
  for (const auto& [instance, path] : expected) {
    INFO(instance);
    REQUIRE(m.path.count(instance));
    CHECK(m.path.at(instance) == path);
  }
  // Dropouts have no node (eval mode launches nothing): called, not mapped.
  CHECK(std::find(m.unmapped.begin(), m.unmapped.end(), "Dropout_0") != m.unmapped.end());
  CHECK(m.unmapped.size() == 5);  // transformer.drop and two per block
}

TEST_CASE(
    "attribution by vanilla module events: each kernel's time in its innermost module, per step",
    "[compare]") {
  Trace t = through_file(gpt2_run(true).chrome_trace_json(), "vanilla.json");
  TimelineComparison c = compare(gpt2(), t);
  CHECK(c.steps == 3);
  CHECK_THAT(c.step_source, Catch::Contains("ProfilerStep#*"));
  CHECK(c.kernels == 117);
  CHECK(c.total_kernel_s == Approx(3 * kForwardUs * kUs));
  CHECK(c.attributed_kernel_s == Approx(c.total_kernel_s));
  CHECK(c.matched_kernel_s == Approx(c.total_kernel_s));
  CHECK(c.unattributed_kernel_s == Approx(0).margin(1e-15));
  CHECK(c.step_kernel_s == Approx(kForwardUs * kUs));
  // Own kernels only: the attention module keeps its flash kernel, not its projections'.
  CHECK(row(c, "transformer.h.0.attn").measured_s == Approx(30 * kUs));
  CHECK(row(c, "transformer.h.0.attn.c_attn").measured_s == Approx(20 * kUs));
  CHECK(row(c, "transformer.h.1").measured_s == Approx(5 * kUs));  // two residual adds
  CHECK(row(c, "transformer").measured_s == Approx(2.5 * kUs));    // wte + wpe
  CHECK(row(c, "lm_head").measured_s == Approx(120 * kUs));
  const ModuleComparison& gelu = row(c, "transformer.h.1.mlp.act");
  CHECK(gelu.measured_s == Approx(24 * kUs));
  CHECK(gelu.kernels == 8);
  REQUIRE(!gelu.hints.empty());
  CHECK(gelu.hints.front() == "8 kernels where one fused kernel is predicted");
  CHECK(gelu.top_kernels.at(0).count == 8);
  CHECK_THAT(gelu.top_kernels.at(0).short_name,
             Catch::StartsWith("at::native::vectorized_elementwise_kernel<4, BinaryFunctor<"));
  // Each module's measurement is the sum of its kernels: over all modules, the whole timeline.
  double sum_total = 0, sum_step = 0;
  for (const auto& r : c.modules) {
    CHECK(r.measured_total_s == Approx(3 * r.measured_s).margin(1e-12));
    sum_total += r.measured_total_s;
    sum_step += r.measured_s;
  }
  CHECK(sum_total == Approx(c.total_kernel_s));
  CHECK(sum_step == Approx(c.step_kernel_s));
  CHECK(row(c, "").subtree_measured_s == Approx(kForwardUs * kUs));
  // Blocks fold the layers: one row for both blocks' GELUs.
  auto b = std::find_if(c.blocks.begin(), c.blocks.end(),
                        [](const auto& r) { return r.path == "transformer.h.*.mlp.act"; });
  REQUIRE(b != c.blocks.end());
  CHECK(b->instances == 2);
  CHECK(b->measured_s == Approx(48 * kUs));
  CHECK(b->predicted_s == Approx(2 * gelu.predicted_s));
  for (size_t i = 1; i < c.blocks.size(); ++i) CHECK(c.blocks[i - 1].gap_s >= c.blocks[i].gap_s);
}

TEST_CASE(
    "module-path ranges (NVTX, root by class) attribute like the vanilla trace, through a gzip "
    "record file",
    "[compare]") {
  TimelineComparison vanilla =
      compare(gpt2(), through_file(gpt2_run(true).chrome_trace_json(), "vanilla.json"));
  Trace t = through_file(gpt2_run(false, 3, false).trace(), "annotated.record.json.gz");
  CHECK(t.source == "rooflens record");
  TimelineComparison c = compare(gpt2(), t);
  CHECK(c.ranges == "module-path ranges (annotated)");
  CHECK(c.steps == 3);
  CHECK_THAT(c.step_source,
             Catch::Contains("GPT2LMHeadModel"));  // the root range, once per forward
  REQUIRE(c.modules.size() == vanilla.modules.size());
  for (size_t i = 0; i < c.modules.size(); ++i) {
    INFO(c.modules[i].path);
    CHECK(c.modules[i].path == vanilla.modules[i].path);
    CHECK(c.modules[i].measured_s == Approx(vanilla.modules[i].measured_s));
    CHECK(c.modules[i].predicted_s == Approx(vanilla.modules[i].predicted_s));
  }
}

TEST_CASE("range names that differ from the model's paths by a prefix are matched, and said so",
          "[compare]") {
  Trace t = gpt2_run(false, 2, false).trace();
  for (auto& r : t.ranges)
    if (r.name.find('.') != std::string::npos || r.name == "transformer" || r.name == "lm_head")
      r.name = "m." + r.name;
  TimelineComparison c = compare(gpt2(), t);
  CHECK(c.matched_kernel_s == Approx(c.total_kernel_s));
  bool said = false;
  for (const auto& n : c.notes)
    said |= n.find("1 leading component(s) dropped") != std::string::npos;
  CHECK(said);
}

TEST_CASE("steps: the repeating top-level range, --steps N, or N equal runs where nothing repeats",
          "[compare]") {
  Trace t = gpt2_run(true, 4).trace();
  CHECK(compare(gpt2(), t).steps == 4);
  TimelineComparison last = compare(gpt2(), t, 2);
  CHECK(last.steps == 2);
  CHECK_THAT(last.step_source, Catch::Contains("the last 2"));
  CHECK_THROWS_WITH(compare(gpt2(), t, 5),
                    Catch::Contains("repeats 'ProfilerStep#*' only 4 times"));
  // One forward, no root range: nothing repeats.
  SyntheticTimeline one;
  bench::gpt2_forward(one, 2, false);
  Trace single = one.trace();
  single.ranges.erase(std::remove_if(single.ranges.begin(), single.ranges.end(),
                                     [](const auto& r) { return r.name == "GPT2LMHeadModel"; }),
                      single.ranges.end());
  TimelineComparison whole = compare(gpt2(), single);
  CHECK(whole.steps == 1);
  CHECK_THAT(whole.step_source, Catch::Contains("whole timeline"));
  CHECK(whole.step_kernel_s == Approx(kForwardUs * kUs));
  TimelineComparison thirds = compare(gpt2(), single, 3);  // 39 activities: 13 per step
  CHECK(thirds.steps == 3);
  CHECK_THROWS_WITH(compare(gpt2(), single, 2),
                    Catch::Contains("does not divide its 39 GPU activities"));
}

TEST_CASE("unattributed kernel time and host gaps, by hand", "[compare]") {
  // One lm_head range on thread (1, 1) from 0 to 1000 ns. Launches (host) and kernels (GPU), ns:
  //   k1 [30, 80]    launched [10, 20]     in lm_head
  //   k2 [120, 150]  launched [100, 110]   in lm_head; gap 40 after k1, launch ended after it: host
  //   wait k3 [160, 170]  launched [120, 130]   in lm_head; gap 10 < 30 ns, launched in time:
  //   kernel wait k4 [2100, 2200] launched [2000, 2010] outside every range; gap 1930: host wait k5
  //   [2300, 2400] no launch call; gap 100: other
  Trace t;
  t.gpu = "NVIDIA H100 80GB HBM3";
  t.ranges = {{"", "lm_head", 0, 1000, 1, 1}};
  t.api_calls = {{"cudaLaunchKernel", 10, 20, 1, 1, 1},
                 {"cudaLaunchKernel", 100, 110, 2, 1, 1},
                 {"cudaLaunchKernel", 120, 130, 3, 1, 1},
                 {"cudaLaunchKernel", 2000, 2010, 4, 1, 1}};
  using K = GpuActivity::Kind;
  t.activities = {{K::kernel, "k1", 30, 80, 1, 7, 0},
                  {K::kernel, "k2", 120, 150, 2, 7, 0},
                  {K::kernel, "k3", 160, 170, 3, 7, 0},
                  {K::kernel, "k4", 2100, 2200, 4, 7, 0},
                  {K::kernel, "k5", 2300, 2400, 0, 7, 0}};
  TimelineComparison c = compare(gpt2(), t);
  CHECK(c.total_kernel_s == Approx(290e-9));
  CHECK(c.attributed_kernel_s == Approx(90e-9));
  CHECK(c.unattributed_kernel_s == Approx(200e-9));
  CHECK(c.no_launch_s == Approx(100e-9));
  CHECK(c.outside_modules_s == Approx(100e-9));
  CHECK(row(c, "lm_head").measured_s == Approx(90e-9));
  CHECK(c.idle.total_s == Approx(2080e-9));
  CHECK(c.idle.host_wait_s == Approx(1970e-9));
  CHECK(c.idle.kernel_wait_s == Approx(10e-9));
  CHECK(c.idle.other_s == Approx(100e-9));
  CHECK(c.idle.gaps == 4);
  bool said = false;
  for (const auto& n : c.notes)
    said |= n.find("69.0% of the kernel time is in no module range") != std::string::npos;
  CHECK(said);
}

TEST_CASE("kernels launched from a CUDA graph go to the range around the graph launch, said so",
          "[compare]") {
  SyntheticTimeline t;
  t.enter("GPT2LMHeadModel", "");
  t.enter("lm_head", "");
  t.graph_launch({{"graph_gemm", 5}, {"graph_epilogue", 7}});
  t.launch("plain", 1);
  t.exit();
  t.exit();
  Trace trace = through_file(t.trace(), "graph.record.json");
  TimelineComparison c = compare(gpt2(), trace);
  CHECK(c.graph_kernels == 2);
  CHECK(c.graph_kernel_s == Approx(12 * kUs));
  const ModuleComparison& head = row(c, "lm_head");
  CHECK(head.measured_s == Approx(13 * kUs));
  CHECK(head.graph_s == Approx(12 * kUs));
  CHECK(std::find(head.hints.begin(), head.hints.end(),
                  "launched from a CUDA graph: attributed to the range around the graph launch") !=
        head.hints.end());
  bool said = false;
  for (const auto& n : c.notes)
    said |= n.find("2 GPU activities") != std::string::npos &&
            n.find("CUDA graphs") != std::string::npos;
  CHECK(said);
}

TEST_CASE("decode: copy kernels in the attention module are named as the KV cache concatenation",
          "[compare]") {
  static const Model llama = config_model("llama-2layer.json", Workload::decode, 1024);
  SyntheticTimeline t;
  t.enter("LlamaForCausalLM", "");
  for (int layer = 0; layer < 2; ++layer) {
    std::string p = "model.layers." + std::to_string(layer) + ".self_attn";
    t.enter(p, "");
    for (const char* proj : {".q_proj", ".k_proj", ".v_proj"}) {
      t.enter(p + proj, "");
      t.launch("gemv", 2);
      t.exit();
    }
    t.launch(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
        "namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>()",
        40);
    t.launch(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
        "namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>()",
        40);
    t.launch("flash_fwd_splitkv_kernel", 10);
    t.enter(p + ".o_proj", "");
    t.launch("gemv", 2);
    t.exit();
    t.exit();
  }
  t.exit();
  TimelineComparison c = compare(llama, t.trace());
  const ModuleComparison& attn = row(c, "model.layers.0.self_attn");
  CHECK(attn.measured_s == Approx(90 * kUs));
  // The layer's cache: K and V of 2 heads x 1024 tokens x 64 dims in bf16, 2 x 262,144 bytes.
  REQUIRE(!attn.hints.empty());
  CHECK(attn.hints.front() ==
        "copy kernels take 80.0 us of 90.0 us per step: KV cache concatenation copies the 0.5 MB "
        "cache every step");
}

TEST_CASE("ranges of another model: a mismatch is one clear error, a stray module is listed",
          "[compare]") {
  SyntheticTimeline other;
  other.enter("BertModel", "");
  other.enter("encoder.layer.0.attention.self", "");
  other.launch("gemm", 50);
  other.exit();
  other.enter("encoder.layer.0.output.dense", "");
  other.launch("gemm", 50);
  other.exit();
  other.exit();
  CHECK_THROWS_WITH(compare(gpt2(), other.trace()),
                    Catch::Contains("model/trace mismatch: 100% of the kernel time is in modules"));
  // GPT-2 plus an adapter the model does not have: compared, and the adapter listed with its time.
  SyntheticTimeline t;
  bench::gpt2_forward(t, 2, false);
  t.enter("transformer.h.0.adapter", "");
  t.launch("adapter_gemm", 7);
  t.exit();
  TimelineComparison c = compare(gpt2(), t.trace());
  REQUIRE(c.unmatched_ranges.size() == 1);
  CHECK(c.unmatched_ranges[0].first == "transformer.h.0.adapter");
  CHECK(c.unmatched_ranges[0].second == Approx(7 * kUs));
  CHECK(c.attributed_kernel_s - c.matched_kernel_s == Approx(7 * kUs));
}

TEST_CASE("a timeline from another GPU than the predictions: said, and compared", "[compare]") {
  Trace t = gpt2_run(false, 2, false).trace();
  t.gpu = "NVIDIA A100-SXM4-80GB";
  TimelineComparison c = compare(gpt2(), t);
  bool said = false;
  for (const auto& n : c.notes)
    said |= n ==
            "recorded on NVIDIA A100-SXM4-80GB (A100-SXM-80GB), predicted for H100-SXM: pass "
            "--device A100-SXM-80GB for "
            "predictions of the GPU that ran it";
  CHECK(said);
}

TEST_CASE("unusable timelines: one clear error naming the file", "[compare]") {
  auto bad = [&](const std::string& name, const std::string& text, const std::string& says) {
    fs::path p = scratch() / name;
    std::ofstream(p, std::ios::binary) << text;
    INFO(name);
    CHECK_THROWS_AS(read_timeline(p.string()), InputError);
    CHECK_THROWS_WITH(read_timeline(p.string()),
                      Catch::Contains(p.string()) && Catch::Contains(says));
  };
  std::string good = gpt2_run(true, 1).chrome_trace_json();
  bad("truncated.json", good.substr(0, good.size() / 2), "not a readable trace");
  bad("empty.json", "", "not a readable trace");
  bad("object.json", "{\"a\": 1}", "neither a rooflens record file");
  bad("events_object.json", "{\"traceEvents\": {}}", "traceEvents is not an array");
  bad("record_wrong_type.json",
      "{\"trace_version\": 2, \"gpu\": \"x\", \"activities\": [{\"kind\": \"kernel\", \"name\": "
      "3}]}",
      "not a readable trace");
  bad("record_unknown_kind.json",
      "{\"trace_version\": 2, \"activities\": [{\"kind\": \"fft\", \"name\": \"k\", \"start\": 1, "
      "\"end\": 2, \"correlation\": 1, "
      "\"stream\": 1, \"bytes\": 0}]}",
      "unknown activity kind 'fft'");
  std::string gz = gzip_compress(good);
  bad("cut.json.gz", gz.substr(0, gz.size() / 2), "corrupt or truncated gzip");
  CHECK_THROWS_WITH(read_timeline((scratch() / "missing.json").string()),
                    Catch::Contains("cannot open"));
  // Readable, but nothing to compare: no GPU activity, or no module range.
  Trace cpu_only = through_file(
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 1, "
      "\"dur\": 2}]}",
      "cpu_only.json");
  CHECK_THROWS_WITH(compare(gpt2(), cpu_only), Catch::Contains("no GPU activity"));
  SyntheticTimeline plain;
  plain.launch("k", 3);
  CHECK_THROWS_WITH(compare(gpt2(), plain.trace()),
                    Catch::Contains("no module ranges in the timeline"));
}

TEST_CASE("Chrome trace times are read exactly, past what a double holds at epoch scale",
          "[compare]") {
  CHECK(microseconds_text_to_ns("1750000000123456.789") == 1750000000123456789);
  CHECK(microseconds_text_to_ns("12.5") == 12500);
  CHECK(microseconds_text_to_ns("7") == 7000);
  CHECK(microseconds_text_to_ns("0.0004") == 0);
  CHECK(microseconds_text_to_ns("0.0005") == 1);
  CHECK(microseconds_text_to_ns("1e3") == 1000000);
  SyntheticTimeline t;
  t.enter("lm_head", "");
  t.launch("k", 0.001, 0.003);
  t.exit();
  Trace back = through_file(t.chrome_trace_json(), "exact.json");
  REQUIRE(back.activities.size() == 1);
  CHECK(back.activities[0].start_ns == t.trace().activities[0].start_ns);
  CHECK(back.activities[0].end_ns - back.activities[0].start_ns == 1);
  CHECK(back.api_calls[0].end_ns - back.api_calls[0].start_ns == 3);
}
