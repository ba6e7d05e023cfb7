#include <algorithm>
#include <cctype>
#include <map>

#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {

namespace {

// The block a node folds into. A node named after its module ("m.transformer.h.3.mlp.act/pow_4",
// a dynamo export) folds by its module and its name less the exporter's counter, which differs
// from layer to layer: "m.transformer.h.*.mlp.act/pow".
std::string block_of(const NodeResult& n) {
  if (n.module.empty() || n.name.rfind(n.module + "/", 0) != 0) return fold_name(n.name);
  std::string own = n.name.substr(n.module.size() + 1);
  size_t cut = own.find_last_not_of("0123456789");
  if (cut != std::string::npos && cut + 1 < own.size() && own[cut] == '_') own.erase(cut);
  return fold_name(n.module) + "/" + own;
}

}  // namespace

std::vector<BlockRow> fold_blocks(const Analysis& a) {
  std::map<std::pair<std::string, std::string>, BlockRow> rows;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed) continue;
    std::string block = block_of(n);
    BlockRow& r = rows[{block, n.op}];
    r.block = block;
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
