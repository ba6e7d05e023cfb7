#pragma once
// Shared by the compare tests (test_compare.cpp, test_compare_exports.cpp): the two-layer GPT-2
// model, its synthetic runs, timelines through files, and lookups into a comparison.
#include <filesystem>
#include <fstream>

#include "analyzer/transformers/analyze_transformer.hpp"
#include "config_model.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/pytorch_trace.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"
#include "tests/support/synthetic_timeline.hpp"

namespace rooflens::test::compare_fixtures {

using namespace rooflens::profiler;
using bench::SyntheticTimeline;
namespace fs = std::filesystem;

inline fs::path scratch() {
  static const fs::path dir = test::scratch_dir("compare");
  return dir;
}

using test::Model;

inline Model config_model(const std::string& file, Workload w, int64_t seq_or_context) {
  return test::config_model(ROOFLENS_SOURCE_DIR "/tests/data/compare/" + file, w, seq_or_context);
}

inline const Model& gpt2() {
  static const Model m = config_model("gpt2-2layer.json", Workload::prefill, 128);
  return m;
}

// Three forwards of the two-layer GPT-2, each inside a ProfilerStep record_function as
// torch.profiler's schedule writes them (vanilla), or with nothing but module-path ranges.
inline SyntheticTimeline gpt2_run(bool vanilla, int steps = 3, bool profiler_steps = true) {
  SyntheticTimeline t;
  for (int s = 0; s < steps; ++s) {
    if (profiler_steps) t.enter("ProfilerStep#" + std::to_string(s + 7), kRecordFunctionDomain);
    bench::gpt2_forward(t, 2, vanilla);
    if (profiler_steps) t.exit();
    t.host(40);
  }
  return t;
}

inline Trace through_file(const std::string& text, const std::string& name) {
  fs::path p = scratch() / name;
  std::ofstream(p, std::ios::binary) << text;
  return read_timeline(p.string());
}

inline Trace through_file(const Trace& t, const std::string& name) {
  fs::path p = scratch() / name;
  {
    std::ofstream out(p, std::ios::binary);
    write_trace(out, t, gz_name(name));
  }
  return read_timeline(p.string());
}

inline TimelineComparison compare(const Model& m, const Trace& t, int steps = 0) {
  return compare_timeline(m.analysis, m.graph, t, {"test", steps});
}

inline const ModuleComparison& row(const TimelineComparison& c, const std::string& path) {
  for (const auto& r : c.modules)
    if (r.path == path) return r;
  FAIL("no row " << path);
  throw std::logic_error("unreachable");
}

inline constexpr double kUs = 1e-6;
// Kernel time of one GPT-2 forward in gpt2_forward: embeddings 3 + 2 + 2.5, per layer 155
// (ln 4, c_attn 20, flash 30, c_proj 8, residual adds 2 x 2.5, ln 4, c_fc 30, GELU 8 x 3, c_proj
// 30), ln_f 4, lm_head 120.
inline constexpr double kForwardUs = 3 + 2 + 2.5 + 2 * 155 + 4 + 120;

}  // namespace rooflens::test::compare_fixtures
