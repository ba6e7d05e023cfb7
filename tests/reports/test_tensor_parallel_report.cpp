// profile --tp N's merge of the ranks' results, on hand-made results: per-GPU medians on every
// node, the GPUs' difference by hand, and results of different models refused.
#include <catch2/catch.hpp>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "reports/tensor_parallel_report.hpp"

using namespace rooflens;
using nlohmann::json;

namespace {

json node(const std::string& name, const std::string& op, std::optional<double> median) {
  json n{{"name", name}, {"op", op}};
  if (median)
    n["measured"] = {{"status", "measured"}, {"median_s", *median}};
  else
    n["measured"] = {{"status", "not replayed"}, {"reason", "view"}};
  return n;
}

json rank(const std::string& gpu, double gemm, double allreduce) {
  return {
      {"nodes",
       {node("q_proj", "MatMul", gemm), node("o_proj.all_reduce", "rooflens.AllReduce", allreduce),
        node("view", "Reshape", std::nullopt)}},
      {"profile", {{"gpu", gpu}}}};
}

}  // namespace

TEST_CASE("tensor parallel: the ranks' medians per node and how far the GPUs differ",
          "[reports][tp]") {
  json merged =
      reports::merge_rank_results({rank("H100 a", 100e-6, 20e-6), rank("H100 b", 110e-6, 20e-6)});
  const json& q = merged["nodes"][0];
  CHECK(q["measured_per_gpu_s"] == json::array({100e-6, 110e-6}));
  CHECK(q["measured"]["median_s"].get<double>() == Approx(100e-6));  // the rows are GPU 0's
  CHECK_FALSE(merged["nodes"][2].contains("measured_per_gpu_s"));
  const json& tp = merged["tensor_parallel"];
  CHECK(tp["ranks"] == 2);
  CHECK(tp["gpus"][1]["measured_s"].get<double>() == Approx(130e-6));
  CHECK(tp["collectives_measured_s"].get<double>() == Approx(20e-6));
  // |110 - 100| + |20 - 20| over 100 + 20: 8.33%; the largest, q_proj's 10%.
  CHECK(tp["time_weighted_difference"].get<double>() == Approx(10.0 / 120.0));
  CHECK(tp["largest_layer_difference"].get<double>() == Approx(0.1));
  CHECK(tp["largest_difference_layer"] == "q_proj");
  std::ostringstream out;
  reports::write_tensor_parallel_section(out, merged, 100);
  CHECK(out.str().find("2 GPUs") != std::string::npos);
  CHECK(out.str().find("8.3% time-weighted") != std::string::npos);
  CHECK(out.str().find("GPU 1  H100 b") != std::string::npos);
}

TEST_CASE("tensor parallel: results of different models or one rank are refused", "[reports][tp]") {
  json a = rank("g", 1e-6, 1e-6), b = rank("g", 1e-6, 1e-6);
  b["nodes"][0]["name"] = "k_proj";
  CHECK_THROWS_AS(reports::merge_rank_results({a, b}), InputError);
  b["nodes"].erase(0);
  CHECK_THROWS_AS(reports::merge_rank_results({a, b}), InputError);
  CHECK_THROWS_AS(reports::merge_rank_results({a}), InputError);
}
