// Speed of the config path (issue targets): a full generate sweep (prompt 2048, 2048 generated
// tokens, every step) of a 70B-class config under 100 ms; one prefill analysis of DeepSeek-V3
// under 20 ms; reading and analyzing the config of every family in tests/data/configs under 30 ms
// each (the CLI's default prefill of 2048 tokens and a decode step at 8192). In process, median
// of N runs. Prints figures; asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include "analyzer/transformers/analyze_transformer.hpp"

using namespace rooflens;

namespace {

double median_ms(int runs, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string sample(const char* name) {
  return std::string(ROOFLENS_SOURCE_DIR) + "/samples/configs/" + name + "/config.json";
}

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
  double ms = median_ms(runs, [&] {
    steps = analyze_transformer(llama70, gen).transformer->generation->step_s.size();
  });
  std::printf(
      "generate sweep  Llama-2-70B, prompt 2048, 2048 tokens (%zu decode steps costed + prefill): "
      "median %.1f ms over %d runs\n",
      steps, ms, runs);

  TransformerConfig ds = load_transformer_config(sample("deepseek-v3"));
  TransformerOptions prefill;
  prefill.lowering.seq = 2048;
  size_t nodes = 0;
  ms = median_ms(runs, [&] { nodes = analyze_transformer(ds, prefill).nodes.size(); });
  std::printf(
      "prefill         DeepSeek-V3, 2048 tokens (%zu nodes): median %.1f ms over %d runs (config "
      "read excluded)\n",
      nodes, ms, runs);
  ms = median_ms(
      runs, [&] { analyze_transformer(load_transformer_config(sample("deepseek-v3")), prefill); });
  std::printf("prefill         DeepSeek-V3 including reading config.json: median %.1f ms\n", ms);

  // Every family: read config.json and analyze (target < 30 ms each).
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ROOFLENS_SOURCE_DIR) +
                                                           "/tests/data/configs"))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  TransformerOptions decode;
  decode.workload = Workload::decode;
  decode.lowering.context = 8192;
  double worst = 0;
  std::string worst_name;
  std::printf("family            layers  nodes  prefill 2048 (ms)  decode at 8192 (ms)\n");
  for (const auto& d : dirs) {
    std::string path = (d / "config.json").string();
    size_t n = 0;
    double p = median_ms(runs, [&] {
      n = analyze_transformer(load_transformer_config(path), prefill).nodes.size();
    });
    bool encoder = !load_transformer_config(path).causal;  // BERT: prefill only
    double q = encoder ? 0 : median_ms(runs, [&] {
      analyze_transformer(load_transformer_config(path), decode);
    });
    std::printf("%-17s %6lld %6zu %18.1f %20.1f\n", d.filename().c_str(),
                static_cast<long long>(load_transformer_config(path).layers), n, p, q);
    if (std::max(p, q) > worst) worst = std::max(p, q), worst_name = d.filename().string();
  }
  std::printf("slowest family: %s, %.1f ms (target < 30 ms)\n", worst_name.c_str(), worst);
  return 0;
}
