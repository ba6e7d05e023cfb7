// `rooflens compare` on real exports and runs without a GPU: ResNet-50's and GPT-2's exported
// module scopes, the command line's outputs and errors, real torch.profiler traces of HF models,
// the annotate script's ranges.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "cli_run.hpp"
#include "compare_fixtures.hpp"
#include "config_model.hpp"
#include "json_schema_check.hpp"
#include "profiler/timeline/instance_map.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/json_stream.hpp"
#include "profiler/trace/pytorch_trace.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"
#include "tests/support/synthetic_timeline.hpp"

using namespace rooflens;
using namespace rooflens::profiler;
using bench::SyntheticTimeline;
namespace fs = std::filesystem;

using namespace rooflens::test::compare_fixtures;

namespace {

// torchvision's ResNet-50 forward as the profiler sees it: conv1, bn1, relu, maxpool, layer1..4
// (Sequentials of Bottlenecks: conv1, bn1, relu, conv2, bn2, relu, conv3, bn3, downsample in the
// first of each layer, relu), avgpool, fc. One kernel per call.
void resnet50_forward(SyntheticTimeline& t) {
  auto call = [&](const std::string& path, const std::string& cls, double us) {
    t.enter(t.instance_name(path, cls));
    t.launch("k", us);
    t.exit();
  };
  t.enter(t.instance_name("", "ResNet"));
  call("conv1", "Conv2d", 50);
  call("bn1", "BatchNorm2d", 10);
  call("relu", "ReLU", 5);
  call("maxpool", "MaxPool2d", 5);
  const int blocks[] = {3, 4, 6, 3};
  for (int l = 0; l < 4; ++l) {
    std::string layer = "layer" + std::to_string(l + 1);
    t.enter(t.instance_name(layer, "Sequential"));
    for (int b = 0; b < blocks[l]; ++b) {
      std::string p = layer + "." + std::to_string(b);
      t.enter(t.instance_name(p, "Bottleneck"));
      call(p + ".conv1", "Conv2d", 20);
      call(p + ".bn1", "BatchNorm2d", 4);
      call(p + ".relu", "ReLU", 2);
      call(p + ".conv2", "Conv2d", 30);
      call(p + ".bn2", "BatchNorm2d", 4);
      call(p + ".relu", "ReLU", 2);
      call(p + ".conv3", "Conv2d", 20);
      call(p + ".bn3", "BatchNorm2d", 4);
      if (b == 0) {
        t.enter(t.instance_name(p + ".downsample", "Sequential"));
        call(p + ".downsample.0", "Conv2d", 20);
        call(p + ".downsample.1", "BatchNorm2d", 4);
        t.exit();
      }
      t.launch("add", 2);
      call(p + ".relu", "ReLU", 2);
      t.exit();
    }
    t.exit();
  }
  call("avgpool", "AdaptiveAvgPool2d", 3);
  call("fc", "Linear", 6);
  t.exit();
}

std::map<std::string, std::string> resnet_instances(const std::string& onnx) {
  Model m;
  m.analysis = analyze_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/" + onnx, {}, {}, &m.graph);
  SyntheticTimeline t;
  resnet50_forward(t);
  std::vector<const NvtxRange*> modules;
  for (const auto& r : t.trace().ranges) modules.push_back(&r);
  return map_instances(modules, ModelModules(m.analysis, m.graph)).path;
}

}  // namespace

TEST_CASE("vanilla ResNet-50: instances named by the export's scopes, with and without class names",
          "[compare]") {
  // Instance numbers follow the call order: Sequential_0 is layer1, Sequential_1 the downsample of
  // layer1.0, Sequential_2 layer2; Bottleneck_3 is layer2.0; Conv2d_4 is layer1.0.downsample.0.
  // TorchScript export, BatchNorm kept: node names carry the scopes, no classes.
  std::map<std::string, std::string> ts = resnet_instances("resnet50-bn-unfolded.onnx");
  std::map<std::string, std::string> expected{{"ResNet_0", ""},
                                              {"Conv2d_0", "conv1"},
                                              {"BatchNorm2d_0", "bn1"},
                                              {"Sequential_0", "layer1"},
                                              {"Sequential_1", "layer1.0.downsample"},
                                              {"Sequential_2", "layer2"},
                                              {"Bottleneck_3", "layer2.0"},
                                              {"Conv2d_4", "layer1.0.downsample.0"},
                                              {"Conv2d_2", "layer1.0.conv2"},
                                              {"Linear_0", "fc"}};
  for (const auto& [instance, path] : expected) {
    INFO(instance);
    REQUIRE(ts.count(instance));
    CHECK(ts.at(instance) == path);
  }
  // Dynamo export: metadata names every module's class; BatchNorm was folded into the convs, so
  // the convs' own scopes are gone and the BatchNorms carry them.
  std::map<std::string, std::string> dyn = resnet_instances("resnet50-opset18.onnx");
  for (const auto& [instance, path] :
       std::map<std::string, std::string>{{"Sequential_1", "layer1.0.downsample"},
                                          {"Bottleneck_3", "layer2.0"},
                                          {"BatchNorm2d_1", "layer1.0.bn1"},
                                          {"ReLU_1", "layer1.0.relu"},
                                          {"Linear_0", "fc"}}) {
    INFO(instance);
    REQUIRE(dyn.count(instance));
    CHECK(dyn.at(instance) == path);
  }
  // The convolution itself has no node: its kernels fold into the Conv scoped by the BatchNorm.
  REQUIRE(dyn.count("Conv2d_1"));
  CHECK(dyn.at("Conv2d_1") == "layer1.0.bn1");
}

TEST_CASE("ONNX exports carry module paths: dynamo metadata and TorchScript node names",
          "[compare]") {
  auto scopes_of = [](const std::string& file, const std::string& node) {
    LoadOptions o;
    o.bind_unbound_dims = 1;
    Graph g = load_onnx(ROOFLENS_SOURCE_DIR "/" + file, o);
    for (const auto& n : g.nodes)
      if (n.name == node) return n.module_scopes;
    FAIL("no node " << node);
    return std::vector<std::pair<std::string, std::string>>{};
  };
  using Scopes = std::vector<std::pair<std::string, std::string>>;
  // pkg.torch.onnx.name_scopes / class_hierarchy, as torch 2.11's exporter wrote them.
  CHECK(scopes_of("tests/data/onnx/resnet50-opset18.onnx", "node_Conv_755") ==
        Scopes{{"", "ResNet"},
               {"layer1", "Sequential"},
               {"layer1.0", "Bottleneck"},
               {"layer1.0.bn1", "BatchNorm2d"}});
  CHECK(scopes_of("tests/data/onnx/gpt2-opset18.onnx", "node_embedding").back() ==
        std::pair<std::string, std::string>{"m.transformer.wte", "Embedding"});
  // TorchScript: "/layer1/layer1.0/downsample/downsample.0/Conv".
  CHECK(scopes_of("tests/data/onnx/resnet50-bn-unfolded.onnx",
                  "/layer1/layer1.0/downsample/downsample.0/Conv")
            .back()
            .first == "layer1.0.downsample.0");
  CHECK(scopes_of("samples/gpt2-style-opset17.onnx", "/blocks.0/ln_1/LayerNormalization")
            .back()
            .first == "blocks.0.ln_1");
  CHECK(scopes_of("samples/gpt2-style-opset17.onnx", "Constant_546").empty());
}

namespace {

using Cli = test::CliRun;
Cli rooflens_cli(const std::string& args) {
  return test::run_cli(std::string(ROOFLENS_BIN) + " " + args, scratch());
}

}  // namespace

TEST_CASE(
    "compare on the command line: every output, the JSON against its schema, report re-renders it",
    "[compare]") {
  fs::path trace = scratch() / "cli_vanilla.json";
  std::string text = gpt2_run(true).chrome_trace_json();
  std::ofstream(trace) << text;
  // The trace's own kernel sum, from its events: what total_kernel_s must equal.
  double own_us = 0;
  nlohmann::json written = nlohmann::json::parse(text);
  for (const auto& e : written["traceEvents"])
    if (e.value("cat", "") == "kernel") own_us += e["dur"].get<double>();
  std::string config = ROOFLENS_SOURCE_DIR "/tests/data/compare/gpt2-2layer.json";
  fs::path json = scratch() / "cmp.json", csv = scratch() / "cmp.csv",
           html = scratch() / "cmp.html", chrome = scratch() / "cmp.trace.json";
  Cli r = rooflens_cli("compare " + config + " " + trace.string() +
                       " --phase prefill --seq 128 --json " + json.string() + " --csv " +
                       csv.string() + " --html " + html.string() + " --trace " + chrome.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Modules by gap") &&
                        Catch::Contains("transformer.h.0.mlp.act") &&
                        Catch::Contains("8 kernels where one fused kernel is predicted") &&
                        Catch::Contains("Where the time above the prediction goes"));
  for (const auto& line : [&] {
         std::vector<std::string> v;
         std::stringstream ss(r.out);
         for (std::string l; std::getline(ss, l);) v.push_back(l);
         return v;
       }())
    CHECK(line.size() <= 100);
  nlohmann::json result = nlohmann::json::parse(std::ifstream(json));
  std::ifstream schema_file(ROOFLENS_SOURCE_DIR "/docs/result.schema.json");
  test::SchemaCheck schema(nlohmann::json::parse(schema_file));
  CHECK(schema.check(result).empty());
  CHECK(result["tool"]["command"] == "compare");
  const auto& c = result["compare"];
  CHECK(c["total_kernel_s"].get<double>() == Approx(own_us * 1e-6));
  CHECK(c["steps"] == 3);
  CHECK(c["attributed_kernel_s"].get<double>() + c["unattributed_kernel_s"].get<double>() ==
        Approx(c["total_kernel_s"].get<double>()));
  // CSV: one row per module; HTML: the compare section is in the page's data; trace: a prediction
  // track.
  std::ifstream csv_in(csv);
  std::string header;
  std::getline(csv_in, header);
  CHECK(header ==
        "path,parent,nodes,predicted_s,measured_s,measured_q1_s,measured_q3_s,measured_total_s,"
        "efficiency,gap_s,kernels,top_kernel,hint");
  int rows = 0;
  std::string first_row;
  for (std::string l; std::getline(csv_in, l);) first_row = rows++ == 0 ? l : first_row;
  CHECK(rows == static_cast<int>(c["modules"].size()));
  CHECK(first_row.rfind("\"(model)\",\"\",", 0) == 0);  // the model's row is labelled, not empty
  std::stringstream page;
  page << std::ifstream(html).rdbuf();
  CHECK_THAT(page.str(),
             Catch::Contains("compare-section") && Catch::Contains("\"total_kernel_s\""));
  nlohmann::json events = nlohmann::json::parse(std::ifstream(chrome))["traceEvents"];
  int predicted = 0, kernels = 0;
  for (const auto& e : events) {
    predicted += e.value("cat", "") == "predicted";
    kernels += e.value("cat", "") == "kernel";
  }
  CHECK(kernels == 117);
  CHECK(predicted > 0);
  Cli again = rooflens_cli("report " + json.string());
  CHECK(again.code == 0);
  CHECK_THAT(again.out,
             Catch::Contains("Compared with") && Catch::Contains("transformer.h.0.mlp.act"));
  CHECK(again.out == r.out);  // the header line included: report renders it from the saved result
}

TEST_CASE("compare on the command line: 80 columns without a wrapped line, and by block",
          "[compare]") {
  fs::path trace = scratch() / "cli_vanilla_narrow.json";
  std::ofstream(trace) << gpt2_run(true).chrome_trace_json();
  std::string config = ROOFLENS_SOURCE_DIR "/tests/data/compare/gpt2-2layer.json";
  // A terminal of 80 columns: the compact layout, no line wraps.
  for (const char* by : {"", " --by block"}) {
    Cli narrow = rooflens_cli("compare " + config + " " + trace.string() +
                              " --phase prefill --seq 128 --width 80" + by);
    REQUIRE(narrow.code == 0);
    std::stringstream lines(narrow.out);
    for (std::string l; std::getline(lines, l);) {
      INFO(l);
      CHECK(l.size() <= 80);
    }
  }
  Cli blocks = rooflens_cli("compare " + config + " " + trace.string() +
                            " --phase prefill --seq 128 --by block");
  CHECK_THAT(blocks.out, Catch::Contains("transformer.h.*.mlp.act"));
}

TEST_CASE("compare on the command line: unusable input is one line and exit 2", "[compare]") {
  std::string config = ROOFLENS_SOURCE_DIR "/tests/data/compare/gpt2-2layer.json";
  fs::path cut = scratch() / "cut.json";
  std::string text = gpt2_run(true, 1).chrome_trace_json();
  std::ofstream(cut) << text.substr(0, text.size() / 3);
  for (const std::string& args :
       {"compare " + config + " " + cut.string(), "compare " + config + " /nonexistent/trace.json",
        "compare " + config + " " + cut.string() + " --steps -1", "compare " + config}) {
    Cli r = rooflens_cli(args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

namespace {

// Real torch.profiler traces of HF transformers 5.17 models on the CPU
// (scripts/gpu/cpu_module_traces.py): module events only; the names are PyTorch's own.
std::vector<const NvtxRange*> module_ranges(const Trace& t, const char* domain) {
  std::vector<const NvtxRange*> v;
  for (const auto& r : t.ranges)
    if (r.domain == domain) v.push_back(&r);
  return v;
}

}  // namespace

TEST_CASE("real vanilla torch.profiler traces of HF GPT-2 and Llama: instances named by path",
          "[compare]") {
  Trace g = read_timeline(ROOFLENS_SOURCE_DIR "/tests/data/traces/gpt2-2layer-cpu-vanilla.json.gz");
  InstanceMap gm =
      map_instances(module_ranges(g, kModuleDomain), ModelModules(gpt2().analysis, gpt2().graph));
  CHECK(gm.root == "GPT2LMHeadModel_0");
  CHECK(gm.path.at("Conv1D_5") == "transformer.h.1.attn.c_proj");
  CHECK(gm.path.at("LayerNorm_4") == "transformer.ln_f");
  CHECK(gm.path.at("NewGELUActivation_0") == "transformer.h.0.mlp.act");
  CHECK(gm.path.at("Linear_0") == "lm_head");

  static const Model llama = config_model("llama-2layer.json", Workload::prefill, 16);
  Trace l =
      read_timeline(ROOFLENS_SOURCE_DIR "/tests/data/traces/llama-2layer-cpu-vanilla.json.gz");
  InstanceMap lm =
      map_instances(module_ranges(l, kModuleDomain), ModelModules(llama.analysis, llama.graph));
  // LlamaMLP calls gate_proj, act_fn, up_proj, down_proj: per layer the Linears are q, k, v, o,
  // gate, up, down (0..6, 7..13), then lm_head (14). The model lists act_fn after up_proj: order
  // aside.
  std::map<std::string, std::string> expected{
      {"LlamaForCausalLM_0", ""},
      {"LlamaModel_0", "model"},
      {"Embedding_0", "model.embed_tokens"},
      {"LlamaDecoderLayer_1", "model.layers.1"},
      {"Linear_4", "model.layers.0.mlp.gate_proj"},
      {"Linear_5", "model.layers.0.mlp.up_proj"},
      {"Linear_6", "model.layers.0.mlp.down_proj"},
      {"Linear_7", "model.layers.1.self_attn.q_proj"},
      {"SiLUActivation_0", "model.layers.0.mlp.act_fn"},
      {"LlamaRMSNorm_3", "model.layers.1.post_attention_layernorm"},
      {"LlamaRMSNorm_4", "model.norm"},
      {"Linear_14", "lm_head"}};
  for (const auto& [instance, path] : expected) {
    INFO(instance);
    REQUIRE(lm.path.count(instance));
    CHECK(lm.path.at(instance) == path);
  }
  // The rotary embedding is computed in LlamaModel: no node of its own in the model.
  CHECK(lm.unmapped == std::vector<std::string>{"LlamaRotaryEmbedding_0"});
}

TEST_CASE(
    "python/rooflens_annotate.py names ranges by the model's module paths (hooks and global mode "
    "alike)",
    "[compare]") {
  static const Model llama = config_model("llama-2layer.json", Workload::prefill, 16);
  for (const auto& [file, model] :
       std::vector<std::pair<std::string, const Model*>>{{"gpt2-2layer-cpu-annotated", &gpt2()},
                                                         {"gpt2-2layer-cpu-global", &gpt2()},
                                                         {"llama-2layer-cpu-annotated", &llama},
                                                         {"llama-2layer-cpu-global", &llama}}) {
    INFO(file);
    Trace t = read_timeline(ROOFLENS_SOURCE_DIR "/tests/data/traces/" + file + ".json.gz");
    ModelModules mm(model->analysis, model->graph);
    std::set<std::string> names, unknown;
    for (const NvtxRange* r : module_ranges(t, kRecordFunctionDomain)) {
      names.insert(r->name);
      if (!mm.has(r->name)) unknown.insert(r->name);
    }
    // Every module the model has nodes for is named; what is not in the model are modules without
    // nodes (dropouts, the rotary embedding) and the root, by its class.
    for (const std::string& n : unknown)
      CHECK((n.find("drop") != std::string::npos || n.find("rotary_emb") != std::string::npos ||
             n == "GPT2LMHeadModel" || n == "LlamaForCausalLM"));
    CHECK(names.count(file.rfind("gpt2", 0) == 0 ? "transformer.h.1.mlp.act"
                                                 : "model.layers.1.mlp.act_fn"));
  }
}

TEST_CASE("vanilla ResNet-50 against its TorchScript export: every kernel in a module of the model",
          "[compare]") {
  Model m;
  m.analysis = analyze_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/resnet50-bn-unfolded.onnx", {},
                            {}, &m.graph);
  SyntheticTimeline t;
  resnet50_forward(t);
  TimelineComparison c = compare(m, t.trace());
  CHECK(c.matched_kernel_s == Approx(c.total_kernel_s));
  CHECK(row(c, "layer1.0.conv2").measured_s == Approx(30 * kUs));
  CHECK(row(c, "layer1.0.conv2").nodes == 1);  // the export's /layer1/layer1.0/conv2/Conv
  CHECK(row(c, "layer1.0").measured_s ==
        Approx(2 * kUs));  // the residual add, in Bottleneck.forward
  CHECK(row(c, "fc").measured_s == Approx(6 * kUs));
  // 16 bottlenecks: conv 20 + 30 + 20, bn 3 x 4, relu 3 x 2, add 2, and the downsample (24) in 4.
  double expected_us = 50 + 10 + 5 + 5 + 16 * (70 + 12 + 6 + 2) + 4 * 24 + 3 + 6;
  CHECK(c.total_kernel_s == Approx(expected_us * kUs));
}
