// What a reader sees first: the headline (model, device and its roofs, precision, predicted time
// and throughput, memory fit, coverage) within the first 12 lines for an ONNX CNN, an LLM decode
// step, a generate run and a training step; the top table folds identical layers; at 80 columns
// no line is longer than 80.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "analyzer/core/layer_names.hpp"
#include "cli_run.hpp"
#include "model_builder.hpp"
#include "reports/format.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path scratch() {
  static const fs::path dir = scratch_dir("first_screen");
  return dir;
}

struct Run {
  std::vector<std::string> lines;
  std::string text;
  json result;  // the same run's --json, to hold the printed figures against
};

// Runs `analyze ARGS --json FILE` and keeps both.
Run analyze(const std::string& args) {
  fs::path saved = scratch() / "result.json";
  CliRun r = run_cli(std::string(ROOFLENS_BIN) + " analyze " + args + " --json " + saved.string(),
                     scratch());
  INFO(args << "\n" << r.err);
  REQUIRE(r.code == 0);
  Run out{{}, r.out, json::parse(slurp(saved))};
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) out.lines.push_back(line);
  return out;
}

// A line kept alive for the std::smatch that points into it.
const std::string& kept(std::string line) {
  static std::deque<std::string> lines;
  lines.push_back(std::move(line));
  return lines.back();
}

std::string first12(const Run& r) {
  std::string s;
  for (size_t i = 0; i < r.lines.size() && i < 12; ++i) s += r.lines[i] + "\n";
  return s;
}

// The line of the first 12 that starts with `label`, or "".
std::string headline(const Run& r, const std::string& label) {
  for (size_t i = 0; i < r.lines.size() && i < 12; ++i)
    if (r.lines[i].rfind(label, 0) == 0) return r.lines[i];
  return "";
}

// "1.23 ms" -> 1.23e-3: the report's human_time read back.
double seconds_of(const std::string& number, const std::string& unit) {
  double v = std::stod(number);
  return unit == "s" ? v : unit == "ms" ? v * 1e-3 : unit == "us" ? v * 1e-6 : v * 1e-9;
}

void check_width(const Run& r, size_t width) {
  for (const std::string& line : r.lines) {
    INFO(line);
    CHECK(line.size() <= width);
  }
}

std::string config(const std::string& name) {
  return data_path("samples/configs/" + name + "/config.json");
}

}  // namespace

TEST_CASE(
    "first screen of an ONNX CNN: model, spec roofs, fp32, time and samples/s, memory, coverage",
    "[reports][first-screen]") {
  Run r = analyze(data_path("samples/resnet50-opset17.onnx") + " --device-profile spec");
  std::string head = first12(r);
  INFO(head);
  CHECK(r.lines[0].rfind("model    resnet50-opset17.onnx  (", 0) == 0);
  CHECK(headline(r, "device   ") == "device   H100-SXM: NVIDIA H100 SXM5 80GB (spec roofs)");
  CHECK(headline(r, "dtype    ").find("float32") != std::string::npos);  // the file's dtype
  // ResNet-50 has 53 convolutions (the stem, 3 in each of 16 bottlenecks, 4 downsampling
  // shortcuts); by default they run on TF32 as PyTorch runs them, and the line says so.
  CHECK(headline(r, "dtype    ").find("53 fp32 convolutions on TF32") != std::string::npos);
  // The exported ResNet-50 has a fixed batch of 1 (its input is [1,3,224,224]): samples/s = 1 /
  // time.
  std::smatch m;
  std::string predict = headline(r, "predict  ");
  REQUIRE(std::regex_match(
      predict, m,
      std::regex(R"(predict  ([0-9.]+) (s|ms|us) for batch 1 \(.*\) -> ([0-9.]+) samples/s)")));
  double t = seconds_of(m[1], m[2]);
  CHECK(std::stod(m[3]) == Approx(1 / t).epsilon(0.01));
  CHECK(t == Approx(r.result["totals"]["predicted_s"].get<double>()).epsilon(0.01));
  // torchvision's ResNet-50 has 25,557,032 parameters; the export folds each BatchNorm into its
  // convolution: 2 per channel (scale, shift) go, 1 (the bias) comes, over 26,560 channels, so
  // 25,530,472 in fp32 = 102,121,888 B = 97.4 MiB.
  CHECK(
      std::regex_match(headline(r, "memory   "),
                       std::regex(R"(memory   weights 97\.4 MiB \+ act\. .* of 79\.2 GiB: fits)")));
  // Every one of the 122 nodes costed (as test_reports holds for the terminal's last line).
  CHECK(headline(r, "coverage ") == "coverage 122/122 nodes costed; every node costed");
}

TEST_CASE("first screen of an LLM decode step, and the top table folds the 32 identical layers",
          "[reports][first-screen]") {
  Run r = analyze(config("llama-2-7b") + " --phase decode --batch 8 --context 4096");
  std::string head = first12(r);
  INFO(head);
  CHECK(r.lines[0].rfind("model    llama-2-7b/config.json  (", 0) == 0);
  CHECK(headline(r, "dtypes   ") ==
        "dtypes   weights fp16, activations fp16, KV cache fp16");  // the config's dtype: float16
  std::smatch m;
  REQUIRE(std::regex_match(
      kept(headline(r, "predict  ")), m,
      std::regex(
          R"(predict  ([0-9.]+) (s|ms|us) a decode step for batch 8 \(one token each, 4096 cached\) -> ([0-9.]+) tokens/s)")));
  // One token for each of the 8 sequences a step.
  CHECK(std::stod(m[3]) == Approx(8 / seconds_of(m[1], m[2])).epsilon(0.01));
  // Weights: 6,738,415,616 params (Llama-2-7B's published count) x 2 bytes = 12.55 GiB; KV cache:
  // 8 sequences x 4097 tokens x 32 layers x (K, V) x 4096 x 2 bytes = 17,184,063,488 B = 16.0 GiB.
  CHECK(std::regex_match(
      headline(r, "memory   "),
      std::regex(R"(memory   weights 12\.6 GiB \+ KV 16\.0 GiB \+ act\. .* of 79\.2 GiB: fits)")));
  CHECK(headline(r, "coverage ").find("nodes costed") != std::string::npos);

  // The top table: down_proj of all 32 layers is one row, counted 32; no folded name twice.
  auto title = std::find_if(r.lines.begin(), r.lines.end(), [](auto& l) {
    return l.rfind("Top 15 nodes by predicted time", 0) == 0;
  });
  REQUIRE(title != r.lines.end());
  std::set<std::string> names;
  bool down_proj = false;
  for (auto it = title + 2; it != r.lines.end() && !it->empty(); ++it) {
    std::string name = it->substr(0, it->find(' '));
    CHECK(names.insert(fold_layer_numbers(name)).second);
    if (name.find("layers.*.mlp.down_proj") != std::string::npos) {
      down_proj = true;
      CHECK(std::regex_search(*it, std::regex(R"( 32 )")));
    }
  }
  CHECK(down_proj);
  // --by layer unfolds: one row per layer's node, layer numbers in the rows again.
  Run unfolded =
      analyze(config("llama-2-7b") + " --phase decode --batch 8 --context 4096 --by layer");
  CHECK(unfolded.text.find("layers.0.") != std::string::npos);
  CHECK(unfolded.text.find("layers.1.") != std::string::npos);
  CHECK(unfolded.text.find("layers.*.") == std::string::npos);
}

TEST_CASE("first screen of a generate run: prefill and decode side by side",
          "[reports][first-screen]") {
  Run r = analyze(config("llama-2-7b") + " --phase generate --prompt 512 --gen 16");
  std::string head = first12(r);
  INFO(head);
  const json& g = r.result["transformer"]["generation"];
  std::smatch m;
  REQUIRE(std::regex_match(
      kept(headline(r, "predict  ")), m,
      std::regex(
          R"(predict  ([0-9.]+) (s|ms|us) for 16 tokens x batch 1: ([0-9.]+) tokens/s \(prefill .* \+ 15 decode steps\))")));
  double total = seconds_of(m[1], m[2]);
  CHECK(std::stod(m[3]) == Approx(16 / total).epsilon(0.01));  // 16 tokens for one sequence
  // The first token comes from the prefill; the other 15 from a decode step each.
  REQUIRE(std::regex_match(
      kept(headline(r, "phases   ")), m,
      std::regex(
          R"(phases   prefill ([0-9.]+) (s|ms|us) \(first token\) \| decode ([0-9.]+) (s|ms|us) \(15 steps, .*\))")));
  double prefill = seconds_of(m[1], m[2]), decode = seconds_of(m[3], m[4]);
  CHECK(prefill + decode == Approx(total).epsilon(0.01));
  CHECK(prefill == Approx(g["ttft_s"].get<double>()).epsilon(0.01));
  CHECK(headline(r, "memory   ").find(": fits") != std::string::npos);
  CHECK(!headline(r, "coverage ").empty());

  // The table: each block's prefill beside its first decode step. The decode column is that
  // step's analysis; the sweep computes the same step (512 cached) on its own: they agree.
  double step = 0;
  for (const json& b : g["decode_blocks"]) step += b["predicted_s"].get<double>();
  CHECK(step == Approx(g["decode_step_s"][0].get<double>()).epsilon(0.01));
  for (const char* by : {"", " --by block"}) {
    INFO(by);
    Run t = analyze(config("llama-2-7b") + " --phase generate --prompt 512 --gen 16" + by);
    auto title = std::find_if(t.lines.begin(), t.lines.end(), [](auto& l) {
      return l.rfind("Top 15 blocks of the generate run", 0) == 0;
    });
    REQUIRE(title != t.lines.end());
    CHECK(std::regex_search(t.text, std::regex(R"(\nblock +op +count +prefill +% +decode +%\n)")));
    CHECK(std::regex_search(
        t.text, std::regex(R"(\n\S*self_attn\.attn +Attention +32 )")));  // 32 layers, one row
  }
}

TEST_CASE("first screen of a training step: step time, tokens/s, its split and the peak",
          "[reports][first-screen]") {
  Run r = analyze(config("gpt2") + " --phase train --batch 8 --seq 1024 --device-profile spec");
  std::string head = first12(r);
  INFO(head);
  CHECK(headline(r, "train    ") ==
        "train    bf16-mixed, optimizer adamw, recompute none");  // the flags' defaults
  std::smatch m;
  REQUIRE(std::regex_match(
      kept(headline(r, "step     ")), m,
      std::regex(R"(step     ([0-9.]+) (s|ms|us) a training step -> ([0-9]+) tokens/s)")));
  // 8 sequences x 1024 tokens = 8,192 tokens a step.
  double step = seconds_of(m[1], m[2]);
  CHECK(std::stod(m[3]) == Approx(8192 / step).epsilon(0.01));
  // Without eager host costs (the spec device has none) the step is its kernels back to back:
  // the split's parts add up to it.
  REQUIRE(std::regex_match(
      kept(headline(r, "split    ")), m,
      std::regex(
          R"(split    forward ([0-9.]+) (s|ms|us) \+ backward ([0-9.]+) (s|ms|us) \+ recompute (0|[0-9.]+ (?:s|ms|us)) \+ loss ([0-9.]+) (s|ms|us) \+ optimizer ([0-9.]+) (s|ms|us))")));
  double parts = seconds_of(m[1], m[2]) + seconds_of(m[3], m[4]) + seconds_of(m[6], m[7]) +
                 seconds_of(m[8], m[9]);
  CHECK(m[5] == "0");  // --recompute none
  CHECK(parts == Approx(step).epsilon(0.01));
  CHECK(std::regex_match(headline(r, "memory   "),
                         std::regex(R"(memory   peak .* at ".*" of 79\.2 GiB: fits)")));
  CHECK(!headline(r, "coverage ").empty());
}

TEST_CASE("width 80: the compact layout, no line longer than 80, for each kind of report",
          "[reports][first-screen]") {
  for (std::string args :
       {data_path("samples/resnet50-opset17.onnx"),
        config("llama-2-7b") + " --phase decode --batch 8",
        config("llama-2-7b") + " --phase generate --prompt 512 --gen 16",
        config("llama-2-7b") + " --phase generate --prompt 512 --gen 16 --by block",
        config("gpt2") + " --phase train --batch 8 --seq 1024"}) {
    INFO(args);
    Run narrow = analyze(args + " --width 80");
    check_width(narrow, 80);
    Run wide = analyze(args + " --width 100");
    check_width(wide, 100);
    CHECK(narrow.text != wide.text);  // the compact layout, not the wide one cut
  }
}

TEST_CASE(
    "first screen: the H100 is predicted from the profile rooflens ships and says so, and --math "
    "strict keeps fp32",
    "[reports][first-screen]") {
  Run shipped = analyze(data_path("samples/resnet50-opset17.onnx"));
  INFO(first12(shipped));
  CHECK(headline(shipped, "device   ") ==
        "device   H100-SXM: NVIDIA H100 SXM5 80GB (measured profile data/profiles/h100-sxm.json, "
        "shipped)");
  CHECK(shipped.result["device"]["roofs"] == "calibrated");
  // The profile's own figures, not the spec sheet's 3.35 TB/s.
  json profile = json::parse(slurp(data_path("data/profiles/h100-sxm.json")));
  CHECK(shipped.result["device"]["hbm_bandwidth"].get<double>() ==
        profile["hbm_bandwidth"].get<double>());
  // --math strict: no convolution moves to TF32, and every Conv node computes in fp32.
  Run strict = analyze(data_path("samples/resnet50-opset17.onnx") + " --math strict");
  CHECK(strict.result["math"]["tf32_nodes"] == 0);
  CHECK(shipped.result["math"]["tf32_nodes"] == 53);
  for (const json& n : strict.result["nodes"])
    if (n["op"] == "Conv") CHECK(n["precision"] == "fp32");
  for (const json& n : shipped.result["nodes"])
    if (n["op"] == "Conv") CHECK(n["precision"] == "tf32");
}
