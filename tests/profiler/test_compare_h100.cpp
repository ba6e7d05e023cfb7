// `rooflens compare` on real timelines recorded on the H100 machine by
// scripts/gpu/record_timelines.sh (HF GPT-2 and a 4-layer Llama-2-7B-shaped model in bf16, prefill
// and decode; torchvision ResNet-50), each as a vanilla torch.profiler trace, an annotated one and
// a `rooflens record` file of the same program, trimmed to 2 steps by scripts/dev/trim_timeline.py.
// The targets:
// >= 95% of kernel time in modules of the model (>= 99% for a torch script under record), each
// module's time the sum of its kernels, total_kernel_s the trace's own sum within 0.5%. The trace's
// sum is taken here straight from the file's JSON, not through the timeline reader.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "config_model.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/pytorch_trace.hpp"
#include "profiler/trace/trace_io.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

namespace {

const std::string kDir = ROOFLENS_SOURCE_DIR "/tests/data/traces/h100/";

using test::Model;

Model config_model(const std::string& file, Workload w, int64_t seq_or_context) {
  return test::config_model(kDir + file, w, seq_or_context);
}

const Model& model(const std::string& name) {
  static std::map<std::string, Model> models;
  if (!models.count(name)) {
    if (name == "gpt2-prefill")
      models[name] = config_model("gpt2.config.json", Workload::prefill, 512);
    if (name == "gpt2-decode")
      models[name] = config_model("gpt2.config.json", Workload::decode, 512);
    if (name == "llama-prefill")
      models[name] = config_model("llama.config.json", Workload::prefill, 2048);
    if (name == "llama-decode")
      models[name] = config_model("llama.config.json", Workload::decode, 2048);
    if (name == "resnet50-forward") {
      AnalysisOptions o;
      o.precision = Precision::bf16;
      models[name].analysis = analyze_onnx(
          ROOFLENS_SOURCE_DIR "/tests/data/onnx/resnet50-opset18.onnx", {}, o, &models[name].graph);
    }
  }
  return models.at(name);
}

// Every GPU activity's time in the file, in seconds: PyTorch's kernel, memcpy and memset events
// (dur in microseconds), or a record file's activities (start and end in nanoseconds).
double gpu_time_in_file(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(read_text_file(path));
  double s = 0;
  if (j.contains("traceEvents")) {
    for (const auto& e : j["traceEvents"]) {
      std::string cat = e.value("cat", "");
      if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")
        s += e.at("dur").get<double>() * 1e-6;
    }
  } else {
    for (const auto& a : j.at("activities"))
      s += (a.at("end").get<int64_t>() - a.at("start").get<int64_t>()) * 1e-9;
  }
  return s;
}

}  // namespace

TEST_CASE(
    "real H100 timelines: every kernel counted, >= 95% of it in modules, each module the sum of "
    "its kernels",
    "[compare]") {
  for (const char* run :
       {"gpt2-prefill", "gpt2-decode", "llama-prefill", "llama-decode", "resnet50-forward"}) {
    for (const char* kind : {"vanilla", "annotated", "record"}) {
      std::string path = kDir + run + "." + kind + ".h100.json.gz";
      INFO(path);
      const Model& m = model(run);
      Trace t = read_timeline(path);
      TimelineComparison c = compare_timeline(m.analysis, m.graph, t, {path, 0});
      CHECK(c.gpu == "NVIDIA H100 80GB HBM3");
      CHECK(c.steps == 2);
      CHECK(c.total_kernel_s == Approx(gpu_time_in_file(path)).epsilon(0.005));
      // A torch script under record (NVTX ranges of every module): the issue asks 99%.
      CHECK(c.matched_kernel_s >= (std::string(kind) == "record" ? 0.99 : 0.95) * c.total_kernel_s);
      CHECK(c.unattributed_kernel_s ==
            Approx(c.total_kernel_s - c.attributed_kernel_s).margin(1e-12));
      std::vector<double> by_row(c.modules.size(), 0.0);
      REQUIRE(c.activity_row.size() == t.activities.size());
      for (size_t i = 0; i < t.activities.size(); ++i)
        if (c.activity_row[i] >= 0)
          by_row[c.activity_row[i]] += (t.activities[i].end_ns - t.activities[i].start_ns) * 1e-9;
      for (size_t r = 0; r < c.modules.size(); ++r) {
        INFO(c.modules[r].path);
        CHECK(c.modules[r].measured_total_s == Approx(by_row[r]).margin(1e-12));
      }
    }
  }
}

TEST_CASE("real H100 timelines: the three kinds of one run agree per step", "[compare]") {
  // The vanilla and annotated traces come from one process (one model), the record file from a
  // second run of the same script: the per-step GPU time of one forward agrees within 5%.
  for (const char* run :
       {"gpt2-prefill", "gpt2-decode", "llama-prefill", "llama-decode", "resnet50-forward"}) {
    INFO(run);
    const Model& m = model(run);
    std::map<std::string, double> step;
    for (const char* kind : {"vanilla", "annotated", "record"}) {
      std::string path = kDir + run + "." + kind + ".h100.json.gz";
      step[kind] =
          compare_timeline(m.analysis, m.graph, read_timeline(path), {path, 0}).step_kernel_s;
    }
    CHECK(step["annotated"] == Approx(step["vanilla"]).epsilon(0.05));
    CHECK(step["record"] == Approx(step["vanilla"]).epsilon(0.05));
  }
}

TEST_CASE(
    "real H100 GPT-2 prefill: the odd-vocabulary lm_head runs an align1 CUTLASS GEMM, far above "
    "its prediction",
    "[compare]") {
  // GPT-2's 50,257-wide lm_head cannot use 16-byte aligned tiles; PyTorch 2.11 ran
  // cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1 on the H100 for it.
  std::string path = kDir + "gpt2-prefill.vanilla.h100.json.gz";
  const Model& m = model("gpt2-prefill");
  TimelineComparison c = compare_timeline(m.analysis, m.graph, read_timeline(path), {path, 0});
  const ModuleComparison* lm = nullptr;
  for (const auto& r : c.modules)
    if (r.path == "lm_head") lm = &r;
  REQUIRE(lm);
  REQUIRE_FALSE(lm->top_kernels.empty());
  CHECK_THAT(lm->top_kernels[0].name, Catch::Contains("align1"));
  CHECK(lm->kernels == 1);
  REQUIRE(lm->efficiency);
  CHECK(*lm->efficiency < 0.5);
  CHECK(c.blocks.front().path == "lm_head");  // the largest gap of the run
}
