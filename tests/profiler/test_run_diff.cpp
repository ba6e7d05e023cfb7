// `rooflens compare MODEL BEFORE AFTER` (issue 27, item 6): two real H100 timelines of HF GPT-2
// prefill (512 tokens, bf16, eager): one recorded 2026-11-23 (tests/data/traces/h100/), one
// 2026-11-26 (tests/data/traces/h100-modes/), and the same process's torch.compile'd run.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "config_model.hpp"
#include "profiler/timeline/run_diff.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

namespace {

const std::string kData = ROOFLENS_SOURCE_DIR "/tests/data/traces/";
const std::string kOld = kData + "h100/gpt2-prefill.vanilla.h100.json.gz";
const std::string kNew = kData + "h100-modes/gpt2-prefill.vanilla.json.gz";
const std::string kCompiled = kData + "h100-modes/gpt2-prefill.compiled.json.gz";
const std::string kConfig = kData + "h100-modes/gpt2.config.json";

std::filesystem::path scratch() {
  static const std::filesystem::path dir = test::scratch_dir("run_diff");
  return dir;
}

TimelineComparison compared(const std::string& path) {
  static const test::Model m = test::config_model(kConfig, Workload::prefill, 512);
  return compare_timeline(m.analysis, m.graph, read_timeline(path), {path, 0});
}

}  // namespace

TEST_CASE("run-to-run diff: every module of two runs paired, the rows summing to the totals",
          "[compare]") {
  TimelineComparison before = compared(kOld), after = compared(kNew);
  RunDiff d = diff_runs(before, after, false);
  CHECK(d.step_before_s == before.step_kernel_s);
  CHECK(d.step_after_s == after.step_kernel_s);
  // Both runs attribute every kernel to a module: the rows' changes add up to the total change.
  REQUIRE(before.matched_kernel_s == Approx(before.total_kernel_s));
  REQUIRE(after.matched_kernel_s == Approx(after.total_kernel_s));
  double sum = 0;
  for (const auto& m : d.modules) {
    INFO(m.path);
    sum += m.change_s();
    CHECK(m.before_s > 0);  // the same modules measured on both days
    CHECK(m.after_s > 0);
    CHECK(m.kernels_before == m.kernels_after);
  }
  CHECK(sum == Approx(d.step_after_s - d.step_before_s).margin(0.02 * d.step_before_s));
  CHECK(d.notes.empty());
  // Rows ranked by how much they changed.
  for (size_t i = 1; i < d.modules.size(); ++i)
    CHECK(std::abs(d.modules[i - 1].change_s()) >= std::abs(d.modules[i].change_s()));
}

TEST_CASE(
    "run-to-run diff of an eager and a compiled run: GELU's eight kernels gone, the norms "
    "fused with the residual add",
    "[compare]") {
  RunDiff d = diff_runs(compared(kNew), compared(kCompiled), true);
  auto row = [&](const std::string& path) -> const ModuleChange& {
    for (const auto& m : d.modules)
      if (m.path == path) return m;
    FAIL("no row " << path);
    return d.modules.front();
  };
  // Eager NewGELUActivation launches 8 kernels a layer (the trace's own count); the compiled run
  // fuses it into one Triton kernel with the bias add.
  CHECK(row("transformer.h.*.mlp.act").kernels_before == 96);
  CHECK(row("transformer.h.*.mlp.act").after_s == 0);
  const ModuleChange& ln = row("transformer.h.*.ln_2");
  CHECK(ln.after_s < ln.before_s);
  CHECK_THAT(ln.top_after, Catch::Contains("triton_per_fused_add_native_layer_norm"));
  CHECK(d.step_after_s < d.step_before_s);
  CHECK_FALSE(d.notes.empty());  // attributed by module on one side, by node on the other
}

TEST_CASE("compare with two timelines on the command line", "[compare][cli]") {
  std::filesystem::path json = scratch() / "diff.json";
  test::CliRun r =
      test::run_cli(std::string(ROOFLENS_BIN) + " compare " + kConfig + " " + kOld + " " + kNew +
                        " --phase prefill --seq 512 --json " + json.string(),
                    scratch());
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  CHECK(j.at("diff").at("before").at("timeline") == kOld);
  CHECK(j.at("diff").at("modules").size() > 50);
  test::CliRun text = test::run_cli(std::string(ROOFLENS_BIN) + " compare " + kConfig + " " + kOld +
                                        " " + kNew + " --phase prefill --seq 512",
                                    scratch());
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("Modules by change"));
  test::CliRun html =
      test::run_cli(std::string(ROOFLENS_BIN) + " compare " + kConfig + " " + kOld + " " + kNew +
                        " --phase prefill --seq 512 --html " + (scratch() / "d.html").string(),
                    scratch());
  CHECK(html.code == 2);
  CHECK_THAT(html.err, Catch::Contains("--json writes the diff"));
}
