#include "analyzer/analysis/measurement.hpp"

#include <algorithm>
#include <cmath>

namespace rooflens {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

SampleStats summarize_samples(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.q1 = quantile(samples, 0.25);
  s.q3 = quantile(samples, 0.75);
  return s;
}

std::string_view replay_status_name(ReplayStatus s) {
  switch (s) {
    case ReplayStatus::measured:
      return "measured";
    case ReplayStatus::not_replayed:
      return "not replayed";
    case ReplayStatus::skipped:
      return "skipped";
    case ReplayStatus::no_kernel:
      return "no kernel";
  }
  return "?";
}

}  // namespace rooflens
