// Bad input through the real `rooflens` binary: exit code 2 and exactly one line on stderr,
// never a crash, never a partial output file.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "model_builder.hpp"
#include "reports/sink.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
namespace fs = std::filesystem;

namespace {

struct RunResult {
  int code;
  std::string err;
};

fs::path scratch() {
  static const fs::path dir = test::scratch_dir("cli");
  return dir;
}

RunResult run(const std::string& args) {
  fs::path err = scratch() / "stderr.txt";
  std::string cmd = std::string(ROOFLENS_BIN) + " " + args + " > /dev/null 2> " + err.string();
  int status = std::system(cmd.c_str());
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

void expect_clean_failure(const std::string& args, const std::string& needle) {
  INFO(args);
  RunResult r = run(args);
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

std::string save(const ModelBuilder& b, const std::string& name) {
  fs::path p = scratch() / name;
  fs::rename(b.save(), p);
  return p.string();
}

std::string write_file(const std::string& name, const std::string& bytes) {
  fs::path p = scratch() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

}  // namespace

TEST_CASE("files that are not ONNX models", "[cli][errors]") {
  expect_clean_failure("analyze /nonexistent/model.onnx", "cannot open");
  expect_clean_failure("analyze " + write_file("text.onnx", "this is not a protobuf\n"),
                       "not a valid ONNX model");
  expect_clean_failure("analyze " + write_file("empty.onnx", ""), "empty file");
  expect_clean_failure("analyze " + scratch().string(), "is a directory");
  std::ifstream in(data_path("samples/resnet50-opset17.onnx"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 20000);
  expect_clean_failure("analyze " + write_file("truncated.onnx", bytes.substr(0, 20000)),
                       "not a valid ONNX model");
}

TEST_CASE("graphs that are broken", "[cli][errors]") {
  ModelBuilder cycle;
  cycle.input("x", DType::f32, {4})
      .node("Add", {"x", "b"}, {"a"})
      .node("Relu", {"a"}, {"b"})
      .output("b");
  expect_clean_failure("analyze " + save(cycle, "cycle.onnx"), "cycle");

  ModelBuilder dangling;
  dangling.input("x", DType::f32, {4}).node("Relu", {"ghost"}, {"y"}).output("y");
  expect_clean_failure("analyze " + save(dangling, "dangling.onnx"),
                       "input 'ghost' names no tensor");

  ModelBuilder huge;
  huge.input("x", DType::f32, {4})
      .weight("w", DType::f32, {1LL << 40, 1LL << 40})
      .node("Relu", {"x"}, {"y"})
      .output("y");
  expect_clean_failure("analyze " + save(huge, "overflow.onnx"), "overflows 64 bits");

  ModelBuilder domain;
  domain.import("com.example.custom", 1);
  domain.input("x", DType::f32, {4})
      .node("Magic", {"x"}, {"y"}, {}, "com.example.custom")
      .output("y");
  expect_clean_failure("analyze " + save(domain, "domain.onnx"),
                       "unknown domain 'com.example.custom'");

  ModelBuilder negative;
  negative.input("x", DType::f32, {int64_t{-3}}).node("Relu", {"x"}, {"y"}).output("y");
  expect_clean_failure("analyze " + save(negative, "negative.onnx"), "dims must be positive");
}

TEST_CASE("flags that are wrong", "[cli][errors]") {
  std::string gpt = data_path("samples/gpt2-style-opset17.onnx");
  expect_clean_failure("analyze " + gpt + " --dim batch=1", "--dim seq=N");
  expect_clean_failure("analyze " + gpt + " --dim batch=1 --dim seq=abc", "not an integer");
  std::string r50 = data_path("samples/resnet50-opset17.onnx");
  expect_clean_failure("analyze " + r50 + " --dtype fp64", "--dtype fp64");
  expect_clean_failure("analyze " + r50 + " --device TPU", "unknown device 'TPU'");
  expect_clean_failure("analyze " + r50 + " --dtype fp8 --device A100", "no fp8");
  expect_clean_failure("analyze " + r50 + " --bogus", "bogus");
  fs::path out = scratch() / "no_such_dir" / "out.json";
  expect_clean_failure("analyze " + r50 + " --json " + out.string(), "does not exist");
  CHECK_FALSE(fs::exists(out));
  // calibrate's table selection is checked before any GPU is looked for (this machine has none).
  fs::path profile = scratch() / "calibrated.json";
  expect_clean_failure("calibrate --tables conv.bf16.k9s9 --out " + profile.string(),
                       "--tables conv.bf16.k9s9: no table starts so");
  expect_clean_failure("calibrate --quick --tables conv.fp32.dw3s1 --out " + profile.string(),
                       "no quick table");
  expect_clean_failure("calibrate --tables conv.bf16.dw --roofs-only --out " + profile.string(),
                       "--roofs-only");
  expect_clean_failure("calibrate --add-to default --out " + profile.string(), "--add-to adds");
  expect_clean_failure("calibrate --tables conv.bf16.dw --add-to " +
                           write_file("not_a_profile.json", "{}") + " --out " + profile.string(),
                       "not_a_profile.json");
  CHECK_FALSE(fs::exists(profile));
  // Expert parallelism the model, the batch or the phase cannot take.
  std::string mixtral = data_path("samples/configs/mixtral-8x7b/config.json");
  expect_clean_failure("analyze " + mixtral + " --ep 3", "does not divide the model's 8 experts");
  expect_clean_failure("analyze " + mixtral + " --ep 2 --batch 3", "does not divide --batch 3");
  expect_clean_failure("analyze " + mixtral + " --ep 2 --batch 2 --phase train", "--ep is for");
  expect_clean_failure("analyze " + data_path("samples/configs/llama-2-7b/config.json") + " --ep 2",
                       "needs a mixture-of-experts model");
  expect_clean_failure("analyze " + r50 + " --ep 2", "applies to transformer configs");
  // --runtime: inference steps of a decoder-only config on one GPU.
  std::string llama = data_path("samples/configs/llama-3.1-8b/config.json");
  expect_clean_failure("analyze " + llama + " --runtime compiled", "expected eager or graphs");
  expect_clean_failure("analyze " + llama + " --runtime eager --phase train", "--runtime is for");
  expect_clean_failure("analyze " + llama + " --runtime eager --tp 2", "one GPU");
  expect_clean_failure("analyze " + data_path("samples/configs/t5-small/config.json") +
                           " --runtime eager --phase decode",
                       "encoder-decoder");
  expect_clean_failure("analyze " + r50 + " --runtime eager", "applies to transformer configs");
}

TEST_CASE(
    "a partial analysis writes its outputs marked partial and exits 4, 0 with --allow-partial, 2 "
    "with --strict",
    "[cli][errors]") {
  ModelBuilder b;
  b.input("x", DType::f32, {4, 4})
      .node("Relu", {"x"}, {"r"})
      .node("NonZero", {"r"}, {"y"})
      .output("y");
  std::string path = save(b, "nonzero.onnx");
  fs::path json = scratch() / "partial.json";
  fs::remove(json);
  RunResult r = run("analyze " + path + " --json " + json.string());
  CHECK(r.code == 4);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("1/2 nodes costed; not costed: NonZero x1") != std::string::npos);
  CHECK(r.err.find("--allow-partial") != std::string::npos);
  REQUIRE(fs::exists(json));
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  CHECK(j["totals"]["partial"] == true);
  CHECK(j["totals"]["nodes_costed"] == 1);  // the Relu
  CHECK(j["totals"]["nodes_total"] == 2);
  r = run("analyze " + path + " --allow-partial");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  expect_clean_failure("analyze " + path + " --strict", "not costed: NonZero x1");
  // The terminal's predicted line says it too.
  std::string out = (scratch() / "partial.txt").string();
  std::system(
      (std::string(ROOFLENS_BIN) + " analyze " + path + " --allow-partial > " + out).c_str());
  std::ifstream t(out);
  std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
  text = std::regex_replace(text, std::regex("\\s+"), " ");  // the line wraps at 100 columns
  CHECK(text.find("[partial: 1 of 2 nodes costed; the time is a lower bound]") !=
        std::string::npos);
}

TEST_CASE("a good run writes complete JSON and CSV and exits 0", "[cli]") {
  fs::path json = scratch() / "r50.json", csv = scratch() / "r50.csv";
  RunResult r = run("analyze " + data_path("samples/resnet50-opset17.onnx") + " --json " +
                    json.string() + " --csv " + csv.string());
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(fs::file_size(json) > 10000);
  CHECK(fs::file_size(csv) > 1000);
  CHECK(run("devices").code == 0);
}

TEST_CASE("bad transformer configs and flags through the CLI", "[cli][errors][transformer]") {
  std::string llama = data_path("samples/configs/llama-2-7b/config.json");
  expect_clean_failure(
      "analyze " + write_file("broken.json", "{\"model_type\": \"llama\", \"hidden_size\": "),
      "malformed JSON");
  expect_clean_failure("analyze " + write_file("empty.json", ""), "malformed JSON");
  expect_clean_failure(
      "analyze " + write_file("missing.json", R"({"model_type": "llama", "vocab_size": 32000})"),
      "missing required key 'hidden_size'");
  expect_clean_failure("analyze " + write_file("rwkv.json", R"({"model_type": "rwkv"})"),
                       "model_type 'rwkv' is not one rooflens knows");
  expect_clean_failure(
      "analyze " +
          write_file(
              "string.json",
              R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": "768", "n_layer": 2, "n_head": 2, "n_positions": 8})"),
      "'n_embd' must be an integer");
  expect_clean_failure(
      "analyze " +
          write_file(
              "layers.json",
              R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1000000000, "n_head": 2, "n_positions": 8})"),
      "beyond the limit");
  expect_clean_failure(
      "analyze " +
          write_file(
              "heads.json",
              R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 10, "n_layer": 2, "n_head": 3, "n_positions": 8})"),
      "not divisible by num_attention_heads");
  expect_clean_failure("analyze " + llama + " --tp 3",
                       "--tp 3 does not divide num_attention_heads 32");
  expect_clean_failure("analyze " + llama + " --phase pretrain", "--phase pretrain");
  expect_clean_failure("analyze " + llama + " --weights int2", "--weights int2");
  expect_clean_failure("analyze " + llama + " --dim seq=4", "--dim applies to ONNX models");
  expect_clean_failure("analyze " + llama + " --batch 4000000000000 --seq 4000000000000",
                       "overflows");
  expect_clean_failure("analyze " + data_path("samples/resnet50-opset17.onnx") + " --phase decode",
                       "--phase applies to transformer configs");
  // Contradictory fields, missing fields, an unknown quantization method: one line naming the
  // field.
  std::string d =
      R"("model_type": "qwen3", "vocab_size": 100, "num_hidden_layers": 2, "intermediate_size": 64, "max_position_embeddings": 64)";
  expect_clean_failure(
      "analyze " +
          write_file("q1.json", "{" + d + R"(, "hidden_size": 100, "num_attention_heads": 3})"),
      "hidden_size (100) is not divisible by num_attention_heads (3) and head_dim is not given");
  expect_clean_failure(
      "analyze " +
          write_file(
              "q2.json",
              "{" + d +
                  R"(, "hidden_size": 96, "num_attention_heads": 3, "layer_types": ["full_attention"]})"),
      "key 'layer_types' has 1 entries; num_hidden_layers is 2");
  expect_clean_failure(
      "analyze " +
          write_file(
              "q3.json",
              "{" + d +
                  R"(, "hidden_size": 96, "num_attention_heads": 3, "num_experts": 4, "num_experts_per_tok": 5})"),
      "num_experts_per_tok (5) exceeds the number of experts (4)");
  expect_clean_failure(
      "analyze " +
          write_file("q4.json", R"({"model_type": "qwen3", "vocab_size": 100, "hidden_size": 96})"),
      "missing required key 'num_hidden_layers'");
  expect_clean_failure(
      "analyze " +
          write_file(
              "q5.json",
              "{" + d +
                  R"(, "hidden_size": 96, "num_attention_heads": 3, "quantization_config": {"quant_method": "eetq"}})"),
      "quant_method' 'eetq' is not a method rooflens knows");
  // A near miss of a known key is exit 2 with or without --strict.
  expect_clean_failure(
      "analyze " +
          write_file(
              "q6.json",
              "{" + d +
                  R"(, "hidden_size": 96, "num_attention_heads": 3, "num_key_value_head": 1})"),
      "key 'num_key_value_head' is not one rooflens reads: did you mean 'num_key_value_heads'?");
}

TEST_CASE("a Hugging Face model directory is accepted where a config.json is",
          "[cli][transformer]") {
  fs::path dir = scratch() / "Qwen3-8B";
  fs::create_directories(dir);
  fs::copy_file(data_path("tests/data/configs/qwen3/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
  fs::path out = scratch() / "qwen3.json";
  RunResult r =
      run("analyze " + dir.string() + " --phase decode --context 1024 --json " + out.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::ifstream in(out);
  auto j = nlohmann::json::parse(in);
  CHECK(j["transformer"]["params_total"] == 8190735360LL);  // transformers' count of Qwen3-8B
  CHECK(j["transformer"]["weights_source"] == "config dtype bfloat16");
  // quantization_config sets the weights (gpt-oss: mxfp4 experts); --weights overrides it, and says
  // so.
  fs::path oss = scratch() / "oss.json";
  REQUIRE(run("analyze " + data_path("samples/configs/gpt-oss-20b") +
              " --phase decode --context 256 --json " + oss.string())
              .code == 0);
  auto q = nlohmann::json::parse(std::ifstream(oss));
  CHECK(q["transformer"]["weights_source"] ==
        "quantization_config: mxfp4 experts (e8m0 scale per 32)");
  CHECK(q["transformer"]["weights_dtype"] == "float4e2m1");
  REQUIRE(run("analyze " + data_path("samples/configs/gpt-oss-20b") +
              " --phase decode --context 256 --weights bf16 --json " + oss.string())
              .code == 0);
  auto b = nlohmann::json::parse(std::ifstream(oss));
  CHECK(b["transformer"]["weights_source"] ==
        "--weights bf16 (overrides quantization_config: mxfp4 experts (e8m0 scale per 32))");
  CHECK(b["transformer"]["memory"]["weight_bytes"].get<int64_t>() >
        3 * q["transformer"]["memory"]["weight_bytes"].get<int64_t>() / 2);
  fs::create_directories(scratch() / "empty_dir");
  expect_clean_failure("analyze " + (scratch() / "empty_dir").string(),
                       "is a directory without a config.json");
}

TEST_CASE("a config run writes JSON with the transformer section", "[cli][transformer]") {
  fs::path json = scratch() / "llama.json";
  RunResult r =
      run("analyze " + data_path("samples/configs/llama-2-7b/config.json") +
          " --phase generate --prompt 128 --gen 16 --json " + json.string() + " --by block");
  CHECK(r.code == 0);
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  CHECK(j["transformer"]["params_total"] == 6738415616);
  CHECK(j["transformer"]["generation"]["decode_step_s"].size() == 15);
  CHECK(j["by_block"].size() > 10);
}

TEST_CASE("every file of the bad-input corpus fails cleanly", "[cli][errors][corpus]") {
  // tests/data/bad/EXPECTED: file, tab, a phrase its one error line must contain.
  std::ifstream list(data_path("tests/data/bad/EXPECTED"));
  std::string line;
  int files = 0;
  while (std::getline(list, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    expect_clean_failure("analyze " + data_path("tests/data/bad/" + line.substr(0, tab)),
                         line.substr(tab + 1));
    ++files;
  }
  CHECK(files >= 20);
}

TEST_CASE("inputs the fuzzers once broke rooflens on now end in a report or one clean line",
          "[cli][errors][corpus]") {
  // tests/data/fuzz/: regression inputs saved from fuzzing (scripts/fuzz.sh). Each must end with
  // exit 0 (or 4, a partial analysis) and a complete JSON, or exit 2 and one line; never a crash
  // or an internal error.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(data_path("tests/data/fuzz"))) {
    std::string path = entry.path().string();
    bool config = entry.path().extension() == ".json",
         timeline = entry.path().extension() == ".trace";
    fs::path json = scratch() / "fuzz_out.json";
    fs::remove(json);
    std::string args =
        config ? " --phase generate --prompt 4 --gen 3" : " --dim batch=1 --dim seq=8";
    INFO(path);
    // Timelines (fuzz_timeline) are compared with a two-layer GPT-2.
    RunResult r = timeline ? run("compare " + data_path("tests/data/compare/gpt2-2layer.json") +
                                 " " + path + " --phase prefill --seq 8 --json " + json.string())
                           : run("analyze " + path + args + " --json " + json.string());
    if (r.code == 0 || (r.code == 4 && !timeline)) {
      std::ifstream in(json);
      CHECK_NOTHROW(nlohmann::json::parse(in));
    } else {
      CHECK(r.code == 2);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    ++files;
  }
  CHECK(files >= 2);
}

TEST_CASE(
    "batch flag: --batch rewrites every ONNX input's leading dim and says so, and refuses a scalar "
    "or disagreeing inputs",
    "[cli][errors]") {
  // ResNet-50 as exported: a fixed batch of 1. Every node's work scales with the batch, so batch 64
  // has 64 times the FLOPs and the activations (weights stay).
  Analysis one = analyze_onnx(data_path("samples/resnet50-opset17.onnx"), {}, {});
  LoadOptions load;
  load.batch = 64;
  Analysis many = analyze_onnx(data_path("samples/resnet50-opset17.onnx"), load, {});
  CHECK(many.totals.flops == 64 * one.totals.flops);
  CHECK(many.totals.batch == 64);
  CHECK(many.totals.weight_bytes == one.totals.weight_bytes);
  CHECK(many.inputs[0].shape == Shape{64, 3, 224, 224});
  REQUIRE(many.notes.size() == 1);
  CHECK(many.notes[0] == "--batch 64: dim 0 of 1 input (input) rewritten from 1");
  // A symbolic batch is the same as --dim batch=8.
  LoadOptions by_dim, by_batch;
  by_dim.dims = {{"batch", 8}, {"seq", 128}};
  by_batch.dims = {{"seq", 128}};
  by_batch.batch = 8;
  CHECK(analyze_onnx(data_path("samples/gpt2-style-opset17.onnx"), by_batch, {}).totals.flops ==
        analyze_onnx(data_path("samples/gpt2-style-opset17.onnx"), by_dim, {}).totals.flops);
  std::string gpt2 = data_path("samples/gpt2-style-opset17.onnx");
  expect_clean_failure("analyze " + gpt2 + " --batch 8 --dim batch=8 --dim seq=4", "bound twice");
  expect_clean_failure("analyze " + gpt2 + " --batch 0 --dim seq=4", "--batch 0: must be positive");

  ModelBuilder scalar;
  scalar.input("x", DType::f32, {4, 8})
      .input("t", DType::f32, {})
      .node("Mul", {"x", "t"}, {"y"})
      .output("y");
  expect_clean_failure("analyze " + save(scalar, "scalar_input.onnx") + " --batch 4",
                       "input 't' is a scalar: --batch 4");
  ModelBuilder disagree;
  disagree.input("a", DType::f32, {1, 8})
      .input("b", DType::f32, {8, 8})
      .node("MatMul", {"a", "b"}, {"y"})
      .output("y");
  expect_clean_failure(
      "analyze " + save(disagree, "disagree.onnx") + " --batch 4",
      "the inputs' leading dims disagree (input 'a' dim 0 is 1, input 'b' dim 0 is 8)");
  // A batch fixed inside the graph (Reshape to [1, 512]) is named in the message.
  ModelBuilder fixed;
  fixed.input("x", DType::f32, {1, 8, 64})
      .ints("shape", {1, 512})
      .node("Reshape", {"x", "shape"}, {"y"})
      .output("y");
  expect_clean_failure("analyze " + save(fixed, "fixed_inside.onnx") + " --batch 4",
                       "may fix its batch inside");
}

TEST_CASE("device flag: --device names the entry it picked", "[cli]") {
  Analysis a = analyze_onnx(data_path("samples/resnet50-opset17.onnx"), {}, [] {
    AnalysisOptions o;
    o.device = "H100";
    return o;
  }());
  CHECK(a.device.id == "H100-SXM");
  CHECK(a.device_requested == "H100");
  std::ostringstream s;
  reports::TableSink(3).write(s, a);
  CHECK(s.str().find("device   H100-SXM: NVIDIA H100 SXM5 80GB (spec roofs; --device H100 picked "
                     "H100-SXM)\n") != std::string::npos);
}
