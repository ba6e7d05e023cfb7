// JSON, CSV and terminal reports carry the analysis unchanged; files appear whole or not at all.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"
#include "reports/atomic_file.hpp"
#include "reports/sink.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis small_model() {
  ModelBuilder b;
  b.input("x", DType::f32, {std::string("batch"), int64_t{64}}).weight("w", DType::f32, {64, 32});
  b.node("MatMul", {"x", "w"}, {"y"}).node("Relu", {"y"}, {"z"}).node("NonZero", {"z"}, {"nz"});
  b.output("z").output("nz");
  return analyze_model(b, {{"batch", 8}});
}

}  // namespace

TEST_CASE("JSON holds every node and totals that add up", "[reports]") {
  Analysis a = small_model();
  std::ostringstream s;
  reports::JsonSink().write(s, a);
  auto j = nlohmann::json::parse(s.str());
  CHECK(j["schema_version"] == "1.6");
  REQUIRE(j["nodes"].size() == 3);
  int64_t flops = 0;
  for (const auto& n : j["nodes"])
    if (n["status"] == "costed") flops += n["flops"].get<int64_t>();
  CHECK(flops == j["totals"]["flops"].get<int64_t>());
  CHECK(j["totals"]["flops"] == 2 * 8 * 64 * 32 + 8 * 32);
  const auto& nz = j["nodes"][2];
  CHECK(nz["status"] == "not costed");
  CHECK_FALSE(nz.contains("flops"));  // unknown is never zero
  CHECK(j["coverage"]["line"] == "2/3 nodes costed; not costed: NonZero x1");
  // The totals say they are partial: 2 of the 3 nodes costed (the NonZero has no rule), and the
  // FLOP share of the uncosted node cannot be known (null, never 0).
  CHECK(j["totals"]["partial"] == true);
  CHECK(j["totals"]["nodes_costed"] == 2);
  CHECK(j["totals"]["nodes_total"] == 3);
  CHECK(j["totals"]["flops_unknown_share"].is_null());
  CHECK(j["model"]["bound_dims"]["batch"] == 8);
  CHECK(j["device"]["sources"]["hbm_bandwidth"].get<std::string>().find("datasheet") !=
        std::string::npos);
}

TEST_CASE("CSV has a header and one row per node with the same column count", "[reports]") {
  Analysis a = small_model();
  std::ostringstream s;
  reports::CsvSink().write(s, a);
  std::istringstream lines(s.str());
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  REQUIRE(rows.size() == 4);
  auto columns = [](const std::string& l) {
    int n = 1;
    bool quoted = false;
    for (char c : l) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        ++n;
    }
    return n;
  };
  for (const auto& r : rows) CHECK(columns(r) == columns(rows[0]));
  CHECK(rows[1].rfind("0,y,MatMul,gemm,costed,fp32,\"[8,64] [64,32]\",\"[8,32]\",32768,16384,",
                      0) == 0);
}

TEST_CASE("the terminal report fits 100 columns and ends with the coverage line", "[reports]") {
  LoadOptions load;
  Analysis a = analyze_onnx(data_path("samples/resnet50-opset17.onnx"), load, AnalysisOptions{});
  std::ostringstream s;
  reports::TableSink(15).write(s, a);
  std::istringstream lines(s.str());
  std::string line, last;
  while (std::getline(lines, line)) {
    CHECK(line.size() <= 100);
    if (!line.empty()) last = line;
  }
  CHECK(last == "coverage: 122/122 nodes costed; every node costed");
  CHECK(s.str().find("Time by op type") != std::string::npos);
}

TEST_CASE("config reports fit 100 columns too", "[reports]") {
  TransformerOptions o;
  o.workload = Workload::generate;
  o.prompt = 256;
  o.gen = 8;
  o.lowering.tp = 8;
  Analysis a = analyze_transformer(
      load_transformer_config(data_path("samples/configs/deepseek-v3/config.json")), o);
  for (bool blocks : {false, true}) {
    std::ostringstream s;
    reports::TableSink(20, blocks).write(s, a);
    std::istringstream lines(s.str());
    std::string line;
    while (std::getline(lines, line)) CHECK(line.size() <= 100);
    CHECK(s.str().find("generation  time to first token") != std::string::npos);
    CHECK(s.str().rfind("model    deepseek-v3/config.json  (", 0) == 0);  // not "config.json" alone
  }
}

TEST_CASE("outputs are written whole or not at all", "[reports]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rooflens_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path target = dir / "out.json";
  CHECK_THROWS(reports::write_atomically(target.string(), [](std::ostream& o) {
    o << "{\"half\":";
    throw InputError("interrupted");
  }));
  CHECK_FALSE(fs::exists(target));
  CHECK(fs::is_empty(dir));  // no temp file left behind
  reports::write_atomically(target.string(), [](std::ostream& o) { o << "{}"; });
  CHECK(fs::file_size(target) == 2);
  CHECK_THROWS_AS(
      reports::write_atomically((dir / "missing" / "x.json").string(), [](std::ostream&) {}),
      InputError);
  fs::remove_all(dir);
}

TEST_CASE("names with invalid UTF-8 still give valid JSON", "[reports]") {
  // Found by fuzz_onnx: model files may name nodes with any bytes.
  ModelBuilder b;
  b.input("x", DType::f32, {4}).node("Relu", {"x"}, {"bad\xff\xfename"}).output("bad\xff\xfename");
  Analysis a = analyze_model(b);
  std::ostringstream s;
  REQUIRE_NOTHROW(reports::JsonSink().write(s, a));
  auto j = nlohmann::json::parse(s.str());
  CHECK(j["nodes"][0]["name"] ==
        "bad\xEF\xBF\xBD\xEF\xBF\xBDname");  // each bad byte becomes U+FFFD
}

TEST_CASE("the report's lines fit 100 columns wherever the model file sits", "[reports]") {
  // A folder path of 150 characters, as a clone in a deep checkout gives.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rooflens_long_" + std::to_string(::getpid()));
  while (dir.string().size() < 150) dir /= "a_rather_long_folder_name";
  fs::create_directories(dir);
  fs::copy_file(data_path("samples/resnet50-opset17.onnx"), dir / "resnet50-opset17.onnx");
  Analysis a =
      analyze_onnx((dir / "resnet50-opset17.onnx").string(), LoadOptions{}, AnalysisOptions{});
  std::ostringstream s;
  reports::TableSink(15).write(s, a);
  std::istringstream lines(s.str());
  std::string line;
  while (std::getline(lines, line)) CHECK(line.size() <= 100);
  CHECK(s.str().rfind("model    resnet50-opset17.onnx  (", 0) == 0);
  CHECK(s.str().find("\nfile     ...") != std::string::npos);  // the path, cut from the left
  CHECK(s.str().find("/resnet50-opset17.onnx\n") != std::string::npos);
  fs::remove_all(fs::temp_directory_path() / ("rooflens_long_" + std::to_string(::getpid())));
}
