// libFuzzer target: bytes -> timeline reader (a rooflens record file or a PyTorch profiler trace)
// -> compare against a two-layer GPT-2 (attribution, instance map, steps, gaps, reports).
// InputError is the expected outcome for bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/trace_io.hpp"
#include "reports/compare_report.hpp"
#include "reports/result_json.hpp"

namespace {

struct Model {
  rooflens::Analysis analysis;
  rooflens::Graph graph;
};

const Model& gpt2() {
  static const Model m = [] {
    rooflens::TransformerConfig c = rooflens::parse_transformer_config(
        R"({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "n_positions": 128, "vocab_size": 100})",
        "fuzz-gpt2.json");
    rooflens::TransformerOptions o;
    o.lowering.seq = 8;
    Model x;
    x.analysis = rooflens::analyze_transformer(c, o, &x.graph);
    return x;
  }();
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rooflens;
  profiler::Trace t;
  try {
    t = profiler::parse_timeline_text(std::string(reinterpret_cast<const char*>(data), size),
                                      "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  if (t.activities.size() + t.ranges.size() + t.api_calls.size() > 20000)
    return 0;  // keep executions short
  for (int steps : {0, 2}) {
    try {
      Analysis a = profiler::with_comparison(
          gpt2().analysis,
          profiler::compare_timeline(gpt2().analysis, gpt2().graph, t, {"fuzz.json", steps}));
      nlohmann::json result = reports::result_json(a);
      std::ostringstream out;
      reports::write_compare_table(out, result, 10, steps == 2);
      reports::write_compare_csv(out, result, false);
      reports::write_compare_trace(out, t, *a.comparison);
    } catch (const InputError&) {
    }
  }
  return 0;
}
