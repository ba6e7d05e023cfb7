#include "analyzer/ir/liveness.hpp"

#include <algorithm>
#include <numeric>

#include "analyzer/core/checked.hpp"

namespace rooflens {

MemoryPlan plan_memory(const Graph& g, const std::vector<bool>& is_view,
                       std::optional<DType> float_override) {
  MemoryPlan plan;
  const int n = static_cast<int>(g.nodes.size());
  const int last_step = std::max(n - 1, 0);
  size_t count = g.tensors.size();
  // Buffer = the tensor whose storage a tensor uses (itself, or what it is a view of).
  std::vector<int> buffer(count);
  std::iota(buffer.begin(), buffer.end(), 0);
  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    int in = node.input(0), out = node.output(0);
    if (is_view[i] && in >= 0 && out >= 0 && !g.tensors[in].is_static) buffer[out] = buffer[in];
  }
  std::vector<int> first(count, -1), last(count, -1);
  std::vector<int64_t> size(count, 0);
  for (size_t t = 0; t < count; ++t) {
    const Tensor& x = g.tensors[t];
    if (x.is_static || x.is_kv_cache || x.role == TensorRole::weight ||
        x.role == TensorRole::constant)
      continue;
    if (x.producer < 0 && x.role != TensorRole::input) continue;
    if (!x.shape) {
      ++plan.unknown_tensors;
      continue;
    }
    int b = buffer[t];
    DType dt = float_override && is_float(x.dtype) ? *float_override : x.dtype;
    size[b] = std::max(size[b], storage_bytes(dt, x.elements()));
    int start = x.role == TensorRole::input ? 0 : x.producer;
    int end = start;
    for (int c : x.consumers) end = std::max(end, c);
    if (x.is_graph_output) end = last_step;
    first[b] = first[b] < 0 ? start : std::min(first[b], start);
    last[b] = std::max(last[b], end);
  }
  std::vector<std::vector<int>> starts(n + 1), ends(n + 1);
  for (size_t b = 0; b < count; ++b)
    if (first[b] >= 0 && size[b] > 0) {
      starts[first[b]].push_back(static_cast<int>(b));
      ends[last[b]].push_back(static_cast<int>(b));
    }
  int64_t live = 0;
  plan.live_bytes.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int b : starts[i]) live = checked_add(live, size[b], "live activation bytes");
    plan.live_bytes[i] = live;
    if (live > plan.peak_bytes) {
      plan.peak_bytes = live;
      plan.peak_node = i;
    }
    for (int b : ends[i]) live -= size[b];
  }
  if (plan.peak_node >= 0) {
    for (size_t b = 0; b < count; ++b)
      if (first[b] >= 0 && size[b] > 0 && first[b] <= plan.peak_node && last[b] >= plan.peak_node)
        plan.live_at_peak.push_back({static_cast<int>(b), size[b]});
    std::sort(plan.live_at_peak.begin(), plan.live_at_peak.end(),
              [](const LiveTensor& a, const LiveTensor& b) { return a.bytes > b.bytes; });
  }
  return plan;
}

}  // namespace rooflens
