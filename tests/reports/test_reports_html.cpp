// Reports for people and programs: the JSON against its published schema, CSV with measured
// columns, `rooflens report`, the Chrome trace, and the HTML page in headless Chromium.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyzer/transformers/analyze_transformer.hpp"
#include "json_schema_check.hpp"
#include "profiler/measure/prediction_error.hpp"
#include "profiler/timeline/attribution.hpp"
#include "profiler/trace/trace_io.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
namespace fs = std::filesystem;
using nlohmann::json;
using test::slurp;

namespace {

fs::path scratch() {
  static const fs::path dir = test::scratch_dir("html");
  return dir;
}

int sh(const std::string& cmd) {
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ResNet-50 with a measurement attached to every costed node, as `profile` would.
Analysis profiled_resnet() {
  Analysis a = analyze_onnx(ROOFLENS_SOURCE_DIR "/samples/resnet50-opset17.onnx", {}, {});
  for (NodeResult& n : a.nodes) {
    Measurement m;
    if (n.status == NodeStatus::costed && n.family != OpFamily::view) {
      m.status = ReplayStatus::measured;
      m.time = summarize_samples(
          {n.roof.predicted * 1.1, n.roof.predicted * 1.2, n.roof.predicted * 1.3});
      m.kernels = 1;
      m.kernel_names = {"k"};
      m.replay = "test";
      profiler::complete_measurement(n, a.device, m);
    } else {
      m.status = ReplayStatus::no_kernel;
      m.reason = "view: no kernel";
    }
    n.measured = m;
  }
  ProfileSummary base;
  base.gpu = "test GPU";
  a.profile = std::make_shared<const ProfileSummary>(profiler::summarize_profile(a, base));
  return a;
}

std::string chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (sh(std::string("command -v ") + c + " > /dev/null 2>&1") == 0) return c;
  return "";
}

// Loads the page in headless Chromium with #selftest and returns the self-test's JSON.
json browser_selftest(const fs::path& html, const fs::path& screenshot,
                      const std::string& window = "1400,2400") {
  std::string browser = chromium();
  REQUIRE_FALSE(browser.empty());  // scripts/setup.sh installs Debian's chromium
  // A profile folder of its own: ctest -j runs these tests side by side, and two Chromiums on one
  // profile folder contend for its lock.
  fs::path profile = scratch() / ("chromium-" + html.stem().string());
  std::string flags = " --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" +
                      profile.string() + " --window-size=" + window + " ";
  fs::path dom = scratch() / (html.stem().string() + ".dom");
  REQUIRE(sh("timeout 120 " + browser + flags + "--dump-dom 'file://" + html.string() +
             "#selftest' > " + dom.string() + " 2> /dev/null") == 0);
  REQUIRE(sh("timeout 120 " + browser + flags + "--screenshot=" + screenshot.string() +
             " 'file://" + html.string() + "' > /dev/null 2>&1") == 0);
  CHECK(fs::file_size(screenshot) > 10000);
  std::smatch m;
  std::string text = slurp(dom);
  REQUIRE(std::regex_search(text, m, std::regex("<pre id=\"selftest\">([^<]*)</pre>")));
  std::string body = std::regex_replace(m[1].str(), std::regex("&quot;"), "\"");
  return json::parse(body);
}

void check_selftest(const json& r) {
  for (auto& [name, c] : r.at("checks").items()) {
    INFO(name << ": " << c.at("detail"));
    CHECK(c.at("pass").get<bool>());
  }
  CHECK(r.at("pass").get<bool>());
}

// No URL in the page but the SVG namespace name, which is never fetched.
void check_no_urls(const std::string& page) {
  std::string rest = std::regex_replace(page, std::regex("http://www\\.w3\\.org/2000/svg"), "");
  CHECK(rest.find("http://") == std::string::npos);
  CHECK(rest.find("https://") == std::string::npos);
  CHECK(rest.find("<link") == std::string::npos);
  CHECK(rest.find("src=") == std::string::npos);
}

}  // namespace

TEST_CASE("the result JSON with measurements validates against docs/result.schema.json",
          "[reports]") {
  test::SchemaCheck schema(json::parse(slurp(ROOFLENS_SOURCE_DIR "/docs/result.schema.json")));
  Analysis a = profiled_resnet();
  json j = reports::result_json(a);
  auto errors = schema.check(j);
  INFO((errors.empty() ? "" : errors.front()));
  CHECK(errors.empty());
  CHECK(j["tool"]["command"] == "profile");
  CHECK(j["nodes"][0]["measured"]["status"] == "measured");
  CHECK(j["profile"]["measured"] == 121);
  // Each measured node came out 20% slower in the median than predicted: error -1/6.
  CHECK(j["nodes"][0]["measured"]["error"].get<double>() == Approx(1 / 1.2 - 1));
  // A transformer analysis too, and a corrupted document is caught.
  TransformerConfig c =
      load_transformer_config(ROOFLENS_SOURCE_DIR "/samples/configs/llama-2-7b/config.json");
  TransformerOptions o;
  o.workload = Workload::generate;
  o.prompt = 128;
  o.gen = 16;
  CHECK(schema.check(reports::result_json(analyze_transformer(c, o))).empty());
  j["nodes"][3]["status"] = "maybe";
  j.erase("totals");
  CHECK(schema.check(j).size() == 2);
}

TEST_CASE("CSV carries the measured columns after a profile", "[reports]") {
  std::ostringstream out;
  reports::CsvSink().write(out, profiled_resnet());
  std::string head = out.str().substr(0, out.str().find('\n'));
  CHECK(head.find(",measured_median_s,") != std::string::npos);
  CHECK(head.find(",measured_error,") != std::string::npos);
  // Fields outside quotes (shapes like "[1,3,224,224]" are quoted).
  auto fields = [](const std::string& l) {
    size_t n = 1;
    bool quoted = false;
    for (char c : l) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        ++n;
    }
    return n;
  };
  std::istringstream lines(out.str());
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    CHECK(fields(line) == fields(head));
  }
  CHECK(rows == 123);  // header + 122 nodes
}

TEST_CASE("rooflens report re-renders a saved result and refuses another major schema",
          "[reports]") {
  fs::path saved = scratch() / "r.json", html = scratch() / "r.html", csv = scratch() / "r.csv";
  REQUIRE(sh(std::string(ROOFLENS_BIN) +
             " analyze " ROOFLENS_SOURCE_DIR "/samples/resnet50-opset17.onnx --json " +
             saved.string() + " > /dev/null") == 0);
  CHECK(sh(std::string(ROOFLENS_BIN) + " report " + saved.string() + " --html " + html.string() +
           " --csv " + csv.string()) == 0);
  CHECK(fs::file_size(html) > 50000);
  CHECK(slurp(csv).rfind("index,name,op", 0) == 0);
  json j = json::parse(slurp(saved));
  j["schema_version"] = "2.0";
  fs::path future = scratch() / "future.json";
  std::ofstream(future) << j.dump();
  fs::path err = scratch() / "err.txt";
  CHECK(sh(std::string(ROOFLENS_BIN) + " report " + future.string() + " --html " +
           (scratch() / "x.html").string() + " 2> " + err.string()) == 2);
  std::string e = slurp(err);
  CHECK(e.find("schema version 2.0") != std::string::npos);
  CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(scratch() / "x.html"));
}

TEST_CASE("Chrome trace of a recorded H100 run: kernels on streams and NVTX ranges and predictions",
          "[reports]") {
  profiler::Trace t =
      profiler::read_trace(ROOFLENS_SOURCE_DIR "/tests/data/traces/gpt2-decode-h100.record.json");
  TransformerConfig c =
      load_transformer_config(ROOFLENS_SOURCE_DIR "/samples/configs/gpt2/config.json");
  TransformerOptions o;
  o.workload = Workload::decode;
  o.lowering.context = 1024;
  Analysis a = analyze_transformer(c, o);
  std::ostringstream out;
  reports::write_chrome_trace(out, a, t);
  json doc = json::parse(out.str());
  int kernels = 0, ranges = 0, predicted = 0, flush = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e["ph"] != "X") continue;
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["ts"].get<double>() >= 0);
    if (e["cat"] == "kernel") ++kernels;
    if (e["cat"] == "nvtx") ++ranges;
    if (e["cat"] == "predicted") ++predicted;
    if (e["cat"] == "memory" && e["args"]["layer"] == "(none: L2 flush or set-up)") ++flush;
  }
  int recorded_kernels = 0;
  for (const auto& x : t.activities)
    recorded_kernels += x.kind == profiler::GpuActivity::Kind::kernel;
  CHECK(kernels == recorded_kernels);
  CHECK(ranges == static_cast<int>(t.ranges.size()));
  CHECK(predicted == 14);  // one slice per layer in the recording
  CHECK(flush > 0);
}

TEST_CASE(
    "HTML in headless Chromium: loads clean with no network and one point per costed node and "
    "hover and sort",
    "[reports][browser]") {
  fs::path html = scratch() / "resnet50.html";
  {
    std::ofstream out(html);
    reports::HtmlSink().write(out, profiled_resnet());
  }
  std::string page = slurp(html);
  check_no_urls(page);
  fs::create_directories(ROOFLENS_BINARY_DIR "/test-artifacts");
  json r = browser_selftest(html, ROOFLENS_BINARY_DIR "/test-artifacts/resnet50-report.png");
  check_selftest(r);
  // ResNet-50's 122 nodes: every one has FLOPs but Flatten, which is listed under the chart, not
  // drawn at its floor (it moves data only).
  CHECK(r["checks"]["one_point_per_node_with_flops"]["detail"] ==
        "121 points + 1 listed without FLOPs, 122 costed nodes");
}

TEST_CASE(
    "serve --html: the latency-throughput curve has a point per swept concurrency and the steps "
    "are drawn",
    "[reports][browser][serving]") {
  fs::path html = scratch() / "serve.html", result = scratch() / "serve.json";
  REQUIRE(sh(std::string(ROOFLENS_BIN) + " serve " + ROOFLENS_SOURCE_DIR +
             "/samples/configs/tinyllama-1.1b/config.json --isl 512 --osl 64 --concurrency 8 "
             "--num-requests 32 --sweep-concurrency 1,4,16 --json " +
             result.string() + " --html " + html.string() + " > /dev/null") == 0);
  std::string page = slurp(html);
  // Nothing fetched (the engines' cited sources are text in the data, not links).
  CHECK(page.find("<link") == std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  // The page carries the same document as --json.
  CHECK(page.find("\"schema\":\"rooflens-serve\"") != std::string::npos);
  json r = browser_selftest(html, ROOFLENS_BINARY_DIR "/test-artifacts/serve-report.png");
  check_selftest(r);
  // Three swept concurrencies: three throughput points, three mean and three p99 TTFT points.
  CHECK(r["checks"]["one_point_per_swept_concurrency"]["detail"].get<std::string>().rfind(
            "9 points", 0) == 0);
  json doc = json::parse(slurp(result));
  CHECK(r["checks"]["steps_drawn"]["detail"].get<std::string>() ==
        std::to_string(doc["timeline"]["steps"].size()) + " steps");
}

TEST_CASE("HTML of a 5000-node model: under 5 MB and rendered in under 2 s", "[reports][browser]") {
  json cfg = json::parse(slurp(ROOFLENS_SOURCE_DIR "/samples/configs/llama-2-7b/config.json"));
  cfg["num_hidden_layers"] = 400;  // 400 decoder layers of 16 nodes: 6,403 nodes
  fs::path config = scratch() / "config.json", html = scratch() / "big.html";
  std::ofstream(config) << cfg.dump();
  REQUIRE(sh(std::string(ROOFLENS_BIN) + " analyze " + config.string() +
             " --phase generate --prompt 512 --gen 64 --html " + html.string() + " > /dev/null") ==
          0);
  size_t bytes = fs::file_size(html);
  INFO("HTML bytes: " << bytes);
  CHECK(bytes < 5u * 1024 * 1024);
  json r =
      browser_selftest(html, ROOFLENS_BINARY_DIR "/test-artifacts/llama-400-layers-report.png");
  check_selftest(r);
  std::smatch m;
  std::string detail = r["checks"]["one_point_per_node_with_flops"]["detail"];
  REQUIRE(std::regex_search(detail, m, std::regex("^(\\d+) points")));
  CHECK(std::stoi(m[1].str()) > 5000);
}

TEST_CASE(
    "HTML of ResNet-50, GPT-2 decode, Llama-2-7B generate and Mixtral: roof labels apart, memory "
    "chart visible",
    "[reports][browser]") {
  struct Page {
    const char* name;
    std::string args;
  };
  const std::string configs = ROOFLENS_SOURCE_DIR "/samples/configs/";
  for (const Page& p :
       {Page{"resnet50", ROOFLENS_SOURCE_DIR "/samples/resnet50-opset17.onnx"},
        Page{"gpt2-decode", configs + "gpt2/config.json --phase decode --batch 8 --context 1024"},
        Page{"llama-generate",
             configs + "llama-2-7b/config.json --phase generate --prompt 2048 --gen 64"},
        Page{"mixtral-tp2",
             configs +
                 "mixtral-8x7b/config.json --phase decode --batch 16 --context 4096 --tp 2"}}) {
    INFO(p.name);
    fs::path html = scratch() / (std::string(p.name) + ".html");
    REQUIRE(sh(std::string(ROOFLENS_BIN) + " analyze " + p.args + " --html " + html.string() +
               " > /dev/null") == 0);
    json r = browser_selftest(
        html, ROOFLENS_BINARY_DIR "/test-artifacts/" + std::string(p.name) + "-report.png");
    check_selftest(r);
    CHECK(r["checks"].contains("roof_labels_apart"));
    CHECK(r["checks"].contains("memory_chart_visible"));
  }
}

TEST_CASE(
    "the terminal report of a profile run, from its JSON: measured table and errors within 100 "
    "columns",
    "[reports]") {
  Analysis a = profiled_resnet();
  std::ostringstream direct;
  reports::TableSink(5).write(direct, a);
  std::string t = direct.str();
  CHECK(t.find("\nMeasured on test GPU (") != std::string::npos);
  // Every measured node took 1.2x its prediction in the median (profiled_resnet): error -1/6 =
  // -17%.
  CHECK(t.find("   -17% ") != std::string::npos);
  CHECK(t.find("replay: 121 measured, 0 not replayed, 0 skipped, 1 without a kernel") !=
        std::string::npos);
  std::istringstream lines(t);
  std::string line;
  while (std::getline(lines, line)) CHECK(line.size() <= 100);
  // The saved result renders the same.
  std::ostringstream again;
  reports::write_table(again, json::parse(reports::result_json(a).dump()), 5, false);
  CHECK(again.str() == t);
  // At 80 columns the compact layout: the error column stays, no line is longer.
  reports::TableOptions narrow;
  narrow.top = 5;
  narrow.width = 80;
  std::ostringstream compact;
  reports::write_table(compact, json::parse(reports::result_json(a).dump()), narrow);
  std::string c = compact.str();
  CHECK(c.find("\nMeasured on test GPU (") != std::string::npos);
  CHECK(c.find("   -17% ") != std::string::npos);
  CHECK(c.find("replay: 121 measured") != std::string::npos);
  std::istringstream narrow_lines(c);
  while (std::getline(narrow_lines, line)) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
}

TEST_CASE(
    "HTML at 1280 px: nothing overflows its box on the analyze, training, generate and compare "
    "pages",
    "[reports][browser]") {
  // The self-test's nothing_overflows check compares every element's box with its parent's and
  // its text's width with its own; each page also passes the other self-test checks.
  struct Page {
    const char* name;
    std::string command;
  };
  const std::string src = ROOFLENS_SOURCE_DIR "/", bin = std::string(ROOFLENS_BIN) + " ";
  for (const Page& p :
       {Page{"resnet50", "analyze " + src + "samples/resnet50-opset17.onnx"},
        Page{"gpt2-train",
             "analyze " + src +
                 "samples/configs/gpt2/config.json --phase train --batch 8 --seq 1024"},
        Page{"llama-generate",
             "analyze " + src +
                 "samples/configs/llama-2-7b/config.json --phase generate --prompt 512 --gen 16"},
        Page{"gpt2-compare", "compare " + src + "tests/data/traces/h100/gpt2.config.json " + src +
                                 "tests/data/traces/h100/gpt2-prefill.vanilla.h100.json.gz --phase "
                                 "prefill --seq 512"}}) {
    INFO(p.name);
    fs::path html = scratch() / (std::string(p.name) + "-1280.html");
    REQUIRE(sh(bin + p.command + " --html " + html.string() + " > /dev/null") == 0);
    json r = browser_selftest(
        html, ROOFLENS_BINARY_DIR "/test-artifacts/" + std::string(p.name) + "-1280.png",
        "1280,800");
    check_selftest(r);
    CHECK(r["checks"]["nothing_overflows"]["detail"].get<std::string>().rfind("0 overflowing", 0) ==
          0);
  }
}

TEST_CASE(
    "HTML of a training step shows the step: its split, the loss and optimizer rows, the host's "
    "note",
    "[reports][browser]") {
  fs::path html = scratch() / "gpt2-train.html";
  REQUIRE(sh(std::string(ROOFLENS_BIN) +
             " analyze " ROOFLENS_SOURCE_DIR
             "/samples/configs/gpt2/config.json --phase train --batch 8 " +
             "--seq 1024 --device-profile spec --html " + html.string() + " > /dev/null") == 0);
  json r = browser_selftest(html, ROOFLENS_BINARY_DIR "/test-artifacts/gpt2-train.png");
  check_selftest(r);
  // Forward, backward, loss and optimizer take time; recompute (--recompute none), communication
  // (one GPU) and the host's wait (no eager host costs in the spec device) none: 4 parts. Every
  // loss and optimizer row of the result is a row of the page's table.
  std::smatch m;
  std::string detail = r["checks"]["training_step_shown"]["detail"];
  REQUIRE(
      std::regex_match(detail, m, std::regex(R"(4 parts in the split, (\d+) of (\d+) step rows)")));
  CHECK(m[1] == m[2]);
  CHECK(std::stoi(m[1].str()) >= 2);  // at least the loss and the optimizer
}
