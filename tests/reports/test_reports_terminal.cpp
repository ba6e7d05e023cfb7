// The terminal report as a person reads it (one renderer for `analyze` and `report`, names cut
// so the block index survives, the headline of each workload), and the predicted timeline.
#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"
#include "reports/format.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path scratch() {
  static const fs::path dir = scratch_dir("terminal");
  return dir;
}

// Runs the CLI; stdout into `out`. The exit code.
int cli(const std::string& args, const fs::path& out) {
  int status = std::system(
      (std::string(ROOFLENS_BIN) + " " + args + " > " + out.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string table(const Analysis& a, int top = 15) {
  std::ostringstream s;
  reports::TableSink(top).write(s, a);
  return s.str();
}

Analysis config(const char* name, Workload w, int64_t tp = 1) {
  TransformerOptions o;
  o.workload = w;
  o.prompt = 2048;
  o.gen = 256;
  o.lowering.batch = 8;
  o.lowering.context = 4096;
  o.lowering.tp = tp;
  return analyze_transformer(
      load_transformer_config(data_path(std::string("samples/configs/") + name + "/config.json")),
      o);
}

}  // namespace

TEST_CASE("names are cut so that the block index and the op survive", "[reports]") {
  using reports::fit_name;
  // Hand-cut: the parts without a number go first, from the left; a last part equal to the op is
  // dropped, since the op column says it.
  CHECK(fit_name("/transformer/h.3/mlp/c_proj/MatMul", 20, "MatMul") == "...h.3/mlp/c_proj");
  CHECK(fit_name("/transformer/h.3/mlp/c_proj/MatMul", 16, "MatMul") == "...h.3/...c_proj");
  CHECK(fit_name("/transformer/h.3/attn/MatMul_1", 20, "MatMul") == "...h.3/attn/MatMul_1");
  CHECK(fit_name("/encoder/layers/encoder_layer_11/mlp/mlp.3/MatMul", 28, "MatMul") ==
        "...encoder_layer_11/...mlp.3");
  CHECK(fit_name("model.layers.31.self_attn.q_proj", 29) == "...layers.31.self_attn.q_proj");
  CHECK(fit_name("model.layers.31.self_attn.q_proj", 28) == "...31.self_attn.q_proj");
  CHECK(fit_name("short", 28) == "short");
  CHECK(reports::fit_op("com.microsoft.FusedMatMul", 12) == "FusedMatMul");
  CHECK(reports::fit_op("SimplifiedLayerNormalization", 12) == "SimplifiedLN");
  CHECK(reports::fit_op("com.microsoft.GroupQueryAttention", 12) == "GQAttention");
  CHECK(reports::fit_op("SkipSimplifiedLayerNormalization", 12) == "SkipSimpLN");
  CHECK(reports::fit_op("AVeryLongCustomOperatorName", 12) == "AVeryLongC..");
}

TEST_CASE("analyze and report print the same report, nodes and transformer section included",
          "[reports][cli]") {
  for (std::string model :
       {std::string(
            "samples/configs/llama-2-7b/config.json --phase generate --prompt 512 --gen 16"),
        std::string("samples/resnet50-opset17.onnx")}) {
    INFO(model);
    fs::path saved = scratch() / "saved.json", direct = scratch() / "direct.txt",
             again = scratch() / "again.txt";
    REQUIRE(cli("analyze " + data_path("") + model + " --top 3 --json " + saved.string(), direct) ==
            0);
    REQUIRE(cli("report " + saved.string() + " --top 3", again) == 0);
    CHECK(slurp(direct) == slurp(again));
    // A generate run tabulates its blocks, the prefill beside the first decode step.
    CHECK(slurp(again).find(model.find("generate") != std::string::npos
                                ? "Top 3 blocks of the generate run"
                                : "Top 3 nodes") != std::string::npos);
    fs::path blocks = scratch() / "blocks.txt", blocks_again = scratch() / "blocks_again.txt";
    REQUIRE(cli("analyze " + data_path("") + model + " --by block --top 4", blocks) == 0);
    REQUIRE(cli("report " + saved.string() + " --by block --top 4", blocks_again) == 0);
    CHECK(slurp(blocks) == slurp(blocks_again));
  }
  std::string text = slurp(scratch() / "again.txt");
  CHECK(text.rfind("model    resnet50-opset17.onnx", 0) == 0);
}

TEST_CASE(
    "each workload's headline: generate totals, decode tokens/s, per GPU under --tp, folded "
    "seqlens inputs",
    "[reports]") {
  Analysis g = config("llama-2-7b", Workload::generate);
  std::string t = table(g);
  const GenerationSweep& sweep = *g.transformer->generation;
  // The headline is the whole run: prefill plus 255 decode steps, and its tokens/s.
  CHECK(t.find(fmt::format("  predicted   {} for 256 tokens x batch 8: {:.1f} tokens/s (prefill {} "
                           "+ 255 decode steps)",
                           reports::human_time(sweep.total_s), sweep.tokens_per_s,
                           reports::human_time(sweep.ttft_s))) != std::string::npos);
  CHECK(sweep.tokens_per_s == Approx(8.0 * 256 / sweep.total_s));
  CHECK(t.find("Top 15 blocks of the generate run: the prefill beside the first decode step (2048 "
               "cached)") != std::string::npos);
  CHECK(t.find("samples/s") == std::string::npos);

  Analysis d = config("mistral-7b", Workload::decode, 2);
  t = table(d);
  CHECK(d.totals.throughput_unit == "tokens/s");
  CHECK(d.totals.throughput ==
        Approx(8 / d.totals.predicted_s));  // one token for each of 8 sequences a step
  CHECK(t.find(" a decode step for batch 8 (one token each, 4096 cached) -> ") !=
        std::string::npos);
  CHECK(t.find("samples/s") == std::string::npos);
  // Mistral-7B: 8 KV heads over 2 GPUs, 4 x 128 x 2 (K and V) x 2 bytes x 32 layers = 64 KiB a
  // token on each GPU.
  CHECK(t.find("  KV cache    per GPU: 64.0 KiB a token,") != std::string::npos);
  CHECK(t.find("of 79.2 GiB per GPU: fits") != std::string::npos);
  // One line for the sliding-window sequence lengths: one input the 32 layers share.
  CHECK(t.find("input    seqlens_k int32[8]\n") != std::string::npos);
  CHECK(t.find("self_attn.seqlens_k") == std::string::npos);
  std::istringstream lines(t);
  std::string line;
  while (std::getline(lines, line)) CHECK(line.size() <= 100);
}

TEST_CASE("the memory total and fits are computed once, in the analyzer", "[reports]") {
  Analysis a = config("llama-2-7b", Workload::decode);
  const MemoryFit& fit = a.transformer->memory;
  // Weights + the batch's KV cache + the activation peak; the JSON and the table carry that sum.
  CHECK(a.memory_total.total_bytes == fit.weight_bytes + fit.kv_cache_bytes + fit.activation_bytes);
  CHECK(a.memory_total.kv_cache_bytes ==
        8 * 4097LL * 32 * 2 * 4096 * 2);  // batch x tokens x layers x K,V x hidden x fp16
  json j = reports::result_json(a);
  CHECK(j["memory"]["total_bytes"] == a.memory_total.total_bytes);
  CHECK(j["memory"]["fits"] == a.memory_total.fits);
  CHECK(j["transformer"]["memory"]["total_bytes"] == a.memory_total.total_bytes);
}

TEST_CASE(
    "a predicted timeline without a GPU: one slice per costed node, back to back, and the generate "
    "steps",
    "[reports][cli]") {
  fs::path trace = scratch() / "resnet.trace.json", saved = scratch() / "resnet.json",
           out = scratch() / "out.txt";
  REQUIRE(cli("analyze " + data_path("samples/resnet50-opset17.onnx") + " --trace " +
                  trace.string() + " --json " + saved.string(),
              out) == 0);
  json doc = json::parse(slurp(trace));
  json result = json::parse(slurp(saved));
  double cursor = 0, total = 0;
  int slices = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e["ph"] != "X") continue;
    ++slices;
    CHECK(e["cat"] == "predicted");
    CHECK(e["ts"].get<double>() == Approx(cursor));  // back to back in execution order
    cursor += e["dur"].get<double>();
    const json& n = result["nodes"][e["args"]["index"].get<size_t>()];
    CHECK(e["name"] == n["name"]);
    CHECK(e["dur"].get<double>() == Approx(n["predicted_s"].get<double>() * 1e6));
    CHECK(e["args"]["flops"] == n["flops"]);
    CHECK(e["args"]["bytes_read_weights"] == n["bytes_read_weights"]);
    CHECK(e["args"]["bound"] == n["bound"]);
    total += n["predicted_s"].get<double>();
  }
  CHECK(slices == 122);  // ResNet-50's costed nodes
  CHECK(total == Approx(result["totals"]["predicted_s"].get<double>()));
  // `report --trace` writes the same document from the saved result.
  fs::path again = scratch() / "again.trace.json";
  REQUIRE(cli("report " + saved.string() + " --trace " + again.string(), out) == 0);
  CHECK(slurp(again) == slurp(trace));

  // Generate: the prefill's nodes, and on a track of their own the prefill and 15 decode steps.
  fs::path gen = scratch() / "gen.trace.json";
  REQUIRE(cli("analyze " + data_path("samples/configs/gpt2/config.json") +
                  " --phase generate --prompt 128 --gen 16 --trace " + gen.string(),
              out) == 0);
  doc = json::parse(slurp(gen));
  int steps = 0;
  double end = 0;
  for (const json& e : doc.at("traceEvents"))
    if (e["ph"] == "X" && e["cat"] == "step") {
      CHECK(e["ts"].get<double>() == Approx(end));
      end += e["dur"].get<double>();
      if (steps > 0) CHECK(e["args"]["context"] == 128 + steps);
      ++steps;
    }
  CHECK(steps == 16);
  CHECK(doc["otherData"]["timeline"] == "predicted");
}

TEST_CASE("a 1.2 result from an older rooflens still renders", "[reports]") {
  Analysis a = config("llama-2-7b", Workload::decode);
  json j = reports::result_json(a);
  j["schema_version"] = "1.2";
  j["model"].erase("name");
  j["memory"].erase("kv_cache_bytes");
  j["memory"].erase("activation_bytes");
  j["memory"].erase("peak_node_index");
  j["totals"].erase("throughput_unit");
  for (const char* k : {"mla", "experts", "experts_per_token", "shared_experts", "group_size"})
    j["transformer"].erase(k);
  fs::path old = scratch() / "old.json", out = scratch() / "old.txt";
  std::ofstream(old) << j.dump();
  REQUIRE(cli("report " + old.string(), out) == 0);
  std::string text = slurp(out);
  CHECK(text.rfind("model    llama-2-7b/config.json", 0) == 0);
  // 8 sequences x 4097 tokens x 512 KiB (32 layers x K and V x 4096 x fp16), from the transformer
  // section.
  CHECK(text.find("+ KV 16.0 GiB") != std::string::npos);
}
