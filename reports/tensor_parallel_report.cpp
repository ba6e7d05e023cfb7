#include "reports/tensor_parallel_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>

#include "analyzer/core/errors.hpp"
#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {

std::optional<double> measured_median(const json& node) {
  if (!node.contains("measured")) return std::nullopt;
  const json& m = node["measured"];
  if (m.value("status", "") != "measured" || !m.contains("median_s")) return std::nullopt;
  return m["median_s"].get<double>();
}

}  // namespace

json merge_rank_results(const std::vector<json>& ranks) {
  if (ranks.size() < 2)
    throw InputError("a tensor-parallel profile needs the results of two ranks or more");
  json result = ranks.front();
  json& nodes = result.at("nodes");
  for (size_t r = 1; r < ranks.size(); ++r) {
    const json& other = ranks[r].at("nodes");
    if (other.size() != nodes.size())
      throw InputError(fmt::format("rank {} measured another model ({} nodes, rank 0 {})", r,
                                   other.size(), nodes.size()));
    for (size_t i = 0; i < nodes.size(); ++i)
      if (other[i].at("name") != nodes[i].at("name"))
        throw InputError(fmt::format("rank {} measured another model (node {} is {}, rank 0's {})",
                                     r, i, other[i].at("name").get<std::string>(),
                                     nodes[i].at("name").get<std::string>()));
  }
  std::vector<double> totals(ranks.size(), 0);
  double differ = 0, base = 0, largest = 0, collective_time = 0;
  std::string largest_node;
  for (size_t i = 0; i < nodes.size(); ++i) {
    json per_gpu = json::array();
    std::optional<double> first = measured_median(ranks[0]["nodes"][i]);
    bool all = first.has_value();
    for (size_t r = 0; r < ranks.size(); ++r) {
      std::optional<double> t = measured_median(ranks[r]["nodes"][i]);
      per_gpu.push_back(t ? json(*t) : json());
      all = all && t.has_value();
    }
    if (first) nodes[i]["measured_per_gpu_s"] = per_gpu;
    if (!all) continue;
    const std::string op = nodes[i].value("op", "");
    if (op.ends_with("AllReduce") || op.ends_with("AllToAll"))
      collective_time += *first;  // rooflens.AllReduce, rooflens.AllToAll
    for (size_t r = 0; r < ranks.size(); ++r) {
      double t = per_gpu[r].get<double>();
      totals[r] += t;
      if (r == 0) continue;
      double d = std::abs(t - *first);
      differ += d;
      base += *first;
      if (d / *first > largest)
        largest = d / *first, largest_node = nodes[i].at("name").get<std::string>();
    }
  }
  json gpus = json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const json& p = ranks[r].contains("profile") ? ranks[r]["profile"] : json::object();
    gpus.push_back({{"rank", r}, {"gpu", p.value("gpu", "")}, {"measured_s", totals[r]}});
  }
  result["tensor_parallel"] = {{"gpus", gpus},
                               {"ranks", ranks.size()},
                               {"collectives_measured_s", collective_time},
                               {"time_weighted_difference", base > 0 ? differ / base : 0.0},
                               {"largest_layer_difference", largest},
                               {"largest_difference_layer", largest_node}};
  return result;
}

void write_tensor_parallel_section(std::ostream& out, const json& r, size_t width) {
  const json& tp = r.at("tensor_parallel");
  bool experts = r.contains("transformer") && r["transformer"].value("ep", int64_t{1}) > 1;
  out << '\n'
      << wrap(experts ? "expert parallel: " : "tensor parallel: ",
              fmt::format("{} GPUs, one rank process each; the {} run through NCCL ({} of the "
                          "measured layers' {} on GPU 0)",
                          tp.at("ranks").get<int>(), experts ? "all-to-alls" : "all-reduces",
                          human_time(tp.at("collectives_measured_s").get<double>()),
                          human_time(tp.at("gpus")[0].at("measured_s").get<double>())),
              width);
  for (const json& g : tp.at("gpus"))
    out << fmt::format("  GPU {}  {:<28} layers measured {}\n", g.at("rank").get<int>(),
                       g.at("gpu").get<std::string>(),
                       human_time(g.at("measured_s").get<double>()));
  std::string spread =
      fmt::format("the other GPUs' layer times differ from GPU 0's by {:.1f}% time-weighted",
                  100 * tp.at("time_weighted_difference").get<double>());
  if (!tp.at("largest_difference_layer").get<std::string>().empty())
    spread +=
        fmt::format(", at most {:.1f}% ({})", 100 * tp.at("largest_layer_difference").get<double>(),
                    tp.at("largest_difference_layer").get<std::string>());
  out << wrap("  ", spread + "; the rows above are GPU 0's", width);
}

}  // namespace rooflens::reports
