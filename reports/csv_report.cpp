#include <fmt/format.h>
#include <fmt/ostream.h>

#include "reports/sink.hpp"

namespace rooflens::reports {
namespace {

// RFC 4180: quote fields holding separators, quotes or newlines.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string join_shapes(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s;
}

}  // namespace

void CsvSink::write(std::ostream& out, const Analysis& a) const {
  out << "index,name,op,family,status,precision,input_shapes,output_shapes,flops,macs,dense_flops,"
         "bytes_read_activations,bytes_read_weights,bytes_written,params,intensity,unit,predicted_s,"
         "roof_fraction,bound,reason\n";
  for (const NodeResult& n : a.nodes) {
    bool has = n.status != NodeStatus::not_costed;
    auto num = [&](int64_t v) { return has ? std::to_string(v) : std::string(); };
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", n.index, csv_field(n.name),
               csv_field(n.op), n.family ? family_name(*n.family) : "", status_name(n.status),
               precision_name(n.precision), csv_field(join_shapes(n.input_shapes)),
               csv_field(join_shapes(n.output_shapes)), num(n.cost.flops),
               n.cost.macs ? std::to_string(*n.cost.macs) : "",
               n.cost.dense_flops ? std::to_string(*n.cost.dense_flops) : "", num(n.cost.read_act),
               num(n.cost.read_weight), num(n.cost.written), num(n.params),
               has ? fmt::format("{:.6g}", n.roof.intensity) : "", n.roof.unit,
               has ? fmt::format("{:.6g}", n.roof.predicted) : "", has ? fmt::format("{:.4f}", n.roof.roof_fraction) : "",
               has ? bound_name(n.roof.bound) : "", csv_field(n.reason));
  }
}

}  // namespace rooflens::reports
