// Speed of the config path (issue targets): a full generate sweep (prompt 2048, 2048 generated
// tokens, every step) of a 70B-class config under 100 ms; one prefill analysis of DeepSeek-V3
// under 20 ms. In process, median of N runs. Prints figures; asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "analyzer/transformer_analysis.hpp"

using namespace rooflens;

namespace {

double median_ms(int runs, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string sample(const char* name) { return std::string(ROOFLENS_SOURCE_DIR) + "/samples/configs/" + name + "/config.json"; }

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 10;
  TransformerConfig llama70 = load_transformer_config(sample("llama-2-70b"));
  TransformerOptions gen;
  gen.workload = Workload::generate;
  gen.prompt = 2048;
  gen.gen = 2048;
  gen.lowering.weights = gen.lowering.activations = gen.lowering.kv = DType::f16;
  size_t steps = 0;
  double ms = median_ms(runs, [&] { steps = analyze_transformer(llama70, gen).transformer->generation->step_s.size(); });
  std::printf("generate sweep  Llama-2-70B, prompt 2048, 2048 tokens (%zu decode steps costed + prefill): median %.1f ms over %d runs\n",
              steps, ms, runs);

  TransformerConfig ds = load_transformer_config(sample("deepseek-v3"));
  TransformerOptions prefill;
  prefill.lowering.seq = 2048;
  size_t nodes = 0;
  ms = median_ms(runs, [&] { nodes = analyze_transformer(ds, prefill).nodes.size(); });
  std::printf("prefill         DeepSeek-V3, 2048 tokens (%zu nodes): median %.1f ms over %d runs (config read excluded)\n", nodes,
              ms, runs);
  ms = median_ms(runs, [&] { analyze_transformer(load_transformer_config(sample("deepseek-v3")), prefill); });
  std::printf("prefill         DeepSeek-V3 including reading config.json: median %.1f ms\n", ms);
  return 0;
}
