#include "profiler/timeline/attribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace rooflens::profiler {

namespace {
constexpr int kSampleBits = 20;  // up to a million samples per layer
}

uint64_t external_id(int layer, int sample) {
  return (static_cast<uint64_t>(layer + 1) << kSampleBits) | static_cast<uint64_t>(sample);
}
int layer_of(uint64_t id) {
  return static_cast<int>(id >> kSampleBits) - 1;
}
int sample_of(uint64_t id) {
  return static_cast<int>(id & ((1u << kSampleBits) - 1));
}
std::string range_name(const std::string& layer_path, int sample) {
  return fmt::format("{}#{}", layer_path, sample);
}

Attribution attribute(const Trace& trace, const std::map<int, std::string>& layer_paths) {
  std::unordered_map<uint32_t, uint64_t> external;
  for (const auto& e : trace.externals) external[e.correlation_id] = e.external_id;
  std::unordered_map<uint32_t, const ApiCall*> api;
  for (const auto& c : trace.api_calls) api[c.correlation_id] = &c;
  std::unordered_map<std::string, const NvtxRange*> ranges;
  for (const auto& r : trace.ranges)
    if (r.domain == "rooflens") ranges[r.name] = &r;

  std::vector<const GpuActivity*> ordered;
  for (const auto& a : trace.activities) ordered.push_back(&a);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](auto* x, auto* y) { return x->start_ns < y->start_ns; });

  Attribution out;
  std::map<std::pair<int, int>, std::pair<uint64_t, uint64_t>> bounds;
  std::map<std::pair<int, int>, uint64_t> busy_end;
  for (const GpuActivity* a : ordered) {
    auto it = external.find(a->correlation_id);
    if (it == external.end()) {
      ++out.unattributed;
      continue;
    }
    int layer = layer_of(it->second), sample = sample_of(it->second);
    SampleTime& s = out.samples[{layer, sample}];
    // Busy time: overlapping activities (a library's concurrent kernels) count once.
    uint64_t& busy_until = busy_end[{layer, sample}];
    uint64_t from = std::max(a->start_ns, busy_until);
    if (a->end_ns > from) s.gpu_ns += static_cast<double>(a->end_ns - from);
    busy_until = std::max(busy_until, a->end_ns);
    s.names.push_back(a->name);
    if (a->kind == GpuActivity::Kind::kernel) ++s.kernels;
    auto [b, fresh] = bounds.try_emplace({layer, sample}, a->start_ns, a->end_ns);
    if (!fresh) {
      b->second.first = std::min(b->second.first, a->start_ns);
      b->second.second = std::max(b->second.second, a->end_ns);
    }
    // Cross-check: the call that launched it ran inside this layer's NVTX range.
    auto path = layer_paths.find(layer);
    auto call = api.find(a->correlation_id);
    if (path == layer_paths.end() || call == api.end()) continue;
    auto range = ranges.find(range_name(path->second, sample));
    if (range == ranges.end()) continue;
    ++out.nvtx_checked;
    const ApiCall& c = *call->second;
    if (c.start_ns < range->second->start_ns || c.end_ns > range->second->end_ns) {
      ++out.nvtx_mismatches;
      if (out.problems.size() < 5)
        out.problems.push_back(
            fmt::format("{} of layer {} sample {} was launched outside its NVTX range", a->name,
                        path->second, sample));
    }
  }
  for (auto& [key, s] : out.samples)
    s.span_ns = static_cast<double>(bounds[key].second - bounds[key].first);
  return out;
}

}  // namespace rooflens::profiler
