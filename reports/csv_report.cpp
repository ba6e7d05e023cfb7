#include <fmt/format.h>
#include <fmt/ostream.h>

#include "reports/result_json.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {
namespace {

using nlohmann::json;

// RFC 4180: quote fields holding separators, quotes or newlines.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_array()) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? " " : "") + (v[i].is_string() ? v[i].get<std::string>() : v[i].dump());
    return csv_field(s);
  }
  return csv_field(v.dump());
}

const char* kColumns[] = {"index",
                          "name",
                          "op",
                          "family",
                          "status",
                          "precision",
                          "input_shapes",
                          "output_shapes",
                          "flops",
                          "macs",
                          "dense_flops",
                          "bytes_read_activations",
                          "bytes_read_weights",
                          "bytes_written",
                          "params",
                          "intensity",
                          "unit",
                          "predicted_s",
                          "roof_fraction",
                          "bound",
                          "reason"};
// --phase train: the node's share of the step (training.rows, same order as nodes).
const char* kTraining[] = {"forward_s",        "backward_s",     "recompute_s",
                           "forward_flops",    "backward_flops", "recompute_flops",
                           "gemm_dense_flops", "saved_bytes",    "saved"};
const char* kMeasured[] = {"status",  "median_s", "q1_s",           "q3_s",
                           "samples", "kernels",  "achieved_flops", "achieved_bytes_per_s",
                           "bound",   "error",    "reason"};

}  // namespace

void write_csv_from_json(std::ostream& out, const json& result) {
  bool profiled = result.contains("profile");
  const json* training = result.contains("training") ? &result.at("training").at("rows") : nullptr;
  std::string head;
  for (const char* c : kColumns) head += std::string(head.empty() ? "" : ",") + c;
  if (training)
    for (const char* c : kTraining) head += std::string(",train_") + c;
  if (profiled)
    for (const char* c : kMeasured) head += std::string(",measured_") + c;
  out << head << '\n';
  size_t index = 0;
  for (const json& n : result.at("nodes")) {
    std::string row;
    for (const char* c : kColumns)
      row += std::string(row.empty() && c == kColumns[0] ? "" : ",") +
             (n.contains(c) ? cell(n.at(c)) : "");
    if (training) {
      const json& t = training->at(index);
      for (const char* c : kTraining) row += "," + (t.contains(c) ? cell(t.at(c)) : "");
    }
    ++index;
    if (profiled) {
      const json m = n.value("measured", json::object());
      for (const char* c : kMeasured) row += "," + (m.contains(c) ? cell(m.at(c)) : "");
    }
    out << row << '\n';
  }
}

void CsvSink::write(std::ostream& out, const Analysis& a) const {
  write_csv_from_json(out, result_json(a));
}

}  // namespace rooflens::reports
