#include <algorithm>
#include <cctype>
#include <map>

#include "reports/sink.hpp"

namespace rooflens::reports {
namespace {

// "model.layers.12.mlp.down_proj" -> "model.layers.*.mlp.down_proj".
std::string fold_name(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = name.find_first_of("./", i);
    if (j == std::string::npos) j = name.size();
    std::string part = name.substr(i, j - i);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); });
    out += digits ? "*" : part;
    if (j < name.size()) out += name[j];
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<BlockRow> fold_blocks(const Analysis& a) {
  std::map<std::pair<std::string, std::string>, BlockRow> rows;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed) continue;
    BlockRow& r = rows[{fold_name(n.name), n.op}];
    r.block = fold_name(n.name);
    r.op = n.op;
    ++r.count;
    r.flops += n.cost.flops;
    r.bytes += n.cost.bytes();
    r.params += n.params;
    r.predicted_s += n.roof.predicted;
  }
  std::vector<BlockRow> out;
  for (auto& [k, r] : rows) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const BlockRow& x, const BlockRow& y) { return x.predicted_s > y.predicted_s; });
  return out;
}

}  // namespace rooflens::reports
