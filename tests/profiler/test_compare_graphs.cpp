// Kernels with no module range of their own, attributed by alignment with the model's nodes
// (issue 27, items 1 and 2). CUDA-graph replays: two vanilla torch.profiler
// traces of one process on the H100 machine (scripts/gpu/timeline_models.py llama decode
// static,graphs): a 4-layer Llama-2-7B-shaped model, bf16, one decode step at 2,048 cached tokens
// in HF's StaticCache, run eagerly (module calls recorded) and then captured once in a
// torch.cuda.CUDAGraph and replayed (kernels only, no module calls). Both run the same 234 kernels
// a step. The eager trace's own module ranges are the truth for the replay's attribution.
#include <catch2/catch.hpp>
#include <map>

#include "config_model.hpp"
#include "profiler/timeline/kernel_names.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/trace_io.hpp"

using namespace rooflens;
using namespace rooflens::profiler;

namespace {

const std::string kDir = ROOFLENS_SOURCE_DIR "/tests/data/traces/h100-modes/";

TimelineComparison compare(const std::string& trace) {
  static const test::Model m =
      test::config_model(kDir + "llama.config.json", Workload::decode, 2048);
  std::string path = kDir + trace;
  return compare_timeline(m.analysis, m.graph, read_timeline(path), {path, 0});
}

TimelineComparison compare_gpt2(const std::string& trace) {
  static const test::Model m =
      test::config_model(kDir + "gpt2.config.json", Workload::prefill, 512);
  std::string path = kDir + trace;
  return compare_timeline(m.analysis, m.graph, read_timeline(path), {path, 0});
}

std::map<std::string, const ModuleComparison*> rows_of(const TimelineComparison& c) {
  std::map<std::string, const ModuleComparison*> out;
  for (const auto& m : c.modules) out[m.path] = &m;
  return out;
}

// Kernel time per step under each decoder layer (model.layers.N and below), and elsewhere by path.
std::map<std::string, double> by_layer(const TimelineComparison& c) {
  std::map<std::string, double> out;
  for (const auto& m : c.modules) {
    std::string key = m.path;
    if (key.rfind("model.layers.", 0) == 0) key = key.substr(0, key.find('.', 13));
    out[key] += m.measured_s;
  }
  return out;
}

}  // namespace

TEST_CASE("a CUDA-graph replay with no module ranges: kernels aligned with the model's nodes",
          "[compare]") {
  TimelineComparison graphs = compare("llama-decode.graphs.json.gz");
  TimelineComparison eager = compare("llama-decode.static.json.gz");
  REQUIRE(graphs.steps == 2);
  CHECK(graphs.graph_kernels == 468);
  CHECK(graphs.graph_aligned_kernels == 468);
  CHECK(graphs.graph_aligned_launches == 2);
  // The target: >= 95% of kernel time on the model's modules, each kernel of its node's
  // kind.
  CHECK(graphs.matched_kernel_s >= 0.95 * graphs.total_kernel_s);
  CHECK(graphs.graph_aligned_matched_s >= 0.95 * graphs.graph_aligned_s);
  CHECK_THAT(graphs.ranges, Catch::Contains("aligned"));
  // The same kernels ran in both: the step's GPU time agrees within 3%.
  CHECK(graphs.step_kernel_s == Approx(eager.step_kernel_s).epsilon(0.03));
  // Per decoder layer, the replay's attribution equals the eager run's module ranges within 5%;
  // layer 0 also takes the work LlamaModel does before its layers (rotary tables, the causal
  // mask), which no node predicts and which the eager trace puts on the model's own row.
  std::map<std::string, double> g = by_layer(graphs), e = by_layer(eager);
  for (const char* layer : {"model.layers.1", "model.layers.2", "model.layers.3"}) {
    INFO(layer);
    CHECK(g[layer] == Approx(e[layer]).epsilon(0.05));
  }
  CHECK(g["model.layers.0"] == Approx(e["model.layers.0"] + e["model"]).epsilon(0.05));
  CHECK(g["lm_head"] == Approx(e["lm_head"]).epsilon(0.03));
  // Each projection holds matrix kernels only (cuBLASLt's split-K reduction among them), the
  // attention node its fused kernel, and each equals the eager module's time within 5%.
  std::map<std::string, const ModuleComparison*> rows, eager_rows;
  for (const auto& m : graphs.modules) rows[m.path] = &m;
  for (const auto& m : eager.modules) eager_rows[m.path] = &m;
  for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    std::string path = std::string("model.layers.2.self_attn.") + proj;
    INFO(path);
    REQUIRE(rows.count(path));
    REQUIRE(eager_rows.count(path));
    for (const auto& k : rows.at(path)->top_kernels)
      CHECK(kernel_class(k.name) == KernelClass::gemm);
    CHECK(rows.at(path)->measured_s == Approx(eager_rows.at(path)->measured_s).epsilon(0.05));
  }
  for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
    std::string path = std::string("model.layers.1.mlp.") + proj;
    INFO(path);
    REQUIRE(rows.count(path));
    CHECK(rows.at(path)->measured_s == Approx(eager_rows.at(path)->measured_s).epsilon(0.05));
  }
  REQUIRE(rows.count("model.layers.3.self_attn.attn"));
  CHECK(kernel_class(rows.at("model.layers.3.self_attn.attn")->top_kernels.at(0).name) ==
        KernelClass::attention);
  CHECK(std::any_of(graphs.notes.begin(), graphs.notes.end(), [](const std::string& n) {
    return n.find("attribution by alignment") != std::string::npos;
  }));
}

TEST_CASE("a torch.compile'd model: Inductor's kernels aligned with the model's nodes, each once",
          "[compare]") {
  TimelineComparison compiled = compare_gpt2("gpt2-prefill.compiled.json.gz");
  TimelineComparison eager = compare_gpt2("gpt2-prefill.vanilla.json.gz");
  REQUIRE(compiled.steps == 2);
  // Inductor's triton_poi_fused__scaled_dot_product_cudnn_attention_... prepares a mask: not an
  // attention kernel, so the trust checks take the trace as this model's (12 attention layers).
  CHECK(compiled.forced.empty());
  CHECK(compiled.graph_aligned_root_steps == 2);
  CHECK(compiled.graph_aligned_kernels == compiled.kernels);
  CHECK(compiled.graph_aligned_matched_s >= 0.95 * compiled.graph_aligned_s);
  // Each kernel counted once: the rows' kernels add up to the step's.
  double kernels = 0;
  for (const auto& m : compiled.modules) kernels += m.kernels;
  CHECK(kernels == Approx(compiled.kernels / 2.0));
  CHECK_THAT(compiled.ranges, Catch::Contains("compiled model"));
  auto c = rows_of(compiled), e = rows_of(eager);
  // The GEMMs Inductor leaves to cuBLAS are the eager run's: one kernel per projection, each
  // within 10% of the eager module's own time; lm_head's align1 CUTLASS GEMM within 2%.
  REQUIRE(c.count("lm_head"));
  CHECK(c.at("lm_head")->kernels == 1);
  CHECK(c.at("lm_head")->measured_s == Approx(e.at("lm_head")->measured_s).epsilon(0.02));
  for (int layer : {0, 5, 11})
    for (const char* proj : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}) {
      std::string path = "transformer.h." + std::to_string(layer) + "." + proj;
      INFO(path);
      REQUIRE(c.count(path));
      REQUIRE(e.count(path));
      CHECK(c.at(path)->kernels == 1);
      CHECK(kernel_class(c.at(path)->top_kernels.at(0).name) == KernelClass::gemm);
      CHECK(c.at(path)->measured_s == Approx(e.at(path)->measured_s).epsilon(0.10));
    }
  int attention = 0;
  for (const auto& [path, row] : c)
    if (path.size() > 10 && path.compare(path.size() - 10, 10, ".attn.attn") == 0) {
      CHECK(kernel_class(row->top_kernels.at(0).name) == KernelClass::attention);
      ++attention;
    }
  CHECK(attention == 12);
}

TEST_CASE("hints from the trace's own stacks: the copies named by the function that launched them",
          "[compare]") {
  // The eager DynamicCache decode of the same run (vanilla, with_stack=True), trimmed with its
  // Python frames: each layer's K and V torch.cat runs inside "transformers/cache_utils.py(129):
  // update" (zcat llama-decode.vanilla.json.gz | python3 -c "import json,sys;
  // e=json.load(sys.stdin)['traceEvents']; print({x['name'] for x in e if
  // x.get('cat')=='python_function' and 'cache_utils' in x['name']})"), and rotate_half's cat in
  // modeling_llama.py.
  TimelineComparison eager = compare("llama-decode.vanilla.json.gz");
  int named = 0;
  for (const auto& m : eager.modules)
    if (m.path.size() > 10 && m.path.compare(m.path.size() - 10, 10, ".self_attn") == 0) {
      INFO(m.path);
      REQUIRE_FALSE(m.hints.empty());
      CHECK_THAT(m.hints.front(), Catch::Contains("launched from transformers/cache_utils.py: "
                                                  "update"));
      ++named;
    }
  CHECK(named == 4);
  // The case: a grouped-query model (Llama-3.1-8B's shape, 4 layers, 8 KV heads) decoding
  // from HF's StaticCache, eager. The copies are repeat_kv's expansion of K and V for SDPA, in
  // "transformers/integrations/sdpa_attention.py(15): repeat_kv" (the same one-liner on
  // llama-gqa-decode.static.json.gz), not a cache concatenation.
  static const test::Model gqa =
      test::config_model(kDir + "llama-gqa.config.json", Workload::decode, 2048);
  std::string path = kDir + "llama-gqa-decode.static.json.gz";
  TimelineComparison c = compare_timeline(gqa.analysis, gqa.graph, read_timeline(path), {path, 0});
  named = 0;
  for (const auto& m : c.modules)
    if (m.path.size() > 10 && m.path.compare(m.path.size() - 10, 10, ".self_attn") == 0) {
      INFO(m.path);
      REQUIRE_FALSE(m.hints.empty());
      CHECK_THAT(m.hints.front(), Catch::Contains("sdpa_attention.py: repeat_kv") &&
                                      !Catch::Contains("concatenation"));
      ++named;
    }
  CHECK(named == 4);
}
