#include <algorithm>
#include <cctype>
#include <map>

#include "analyzer/core/layer_names.hpp"
#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {

std::vector<BlockRow> fold_blocks(const Analysis& a) {
  std::map<std::pair<std::string, std::string>, BlockRow> rows;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed) continue;
    std::string block = node_block(n.name, n.module);
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
  std::stable_sort(out.begin(), out.end(), [](const BlockRow& x, const BlockRow& y) {
    return x.predicted_s > y.predicted_s;
  });
  return out;
}

}  // namespace rooflens::reports
