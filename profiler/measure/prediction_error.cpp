#include "profiler/measure/prediction_error.hpp"

#include <cmath>
#include <map>

namespace rooflens::profiler {

void complete_measurement(const NodeResult& node, const Device& device, Measurement& m) {
  double t = m.time.median;
  if (m.status != ReplayStatus::measured || t <= 0) return;
  m.achieved_flops = static_cast<double>(node.cost.flops) / t;
  m.achieved_bytes_per_s = static_cast<double>(node.cost.bytes()) / t;
  // The rule the prediction's class follows, on the measured time.
  BoundClass cls = classify(node.cost, node.precision, t, device);
  m.roof_fraction = cls.roof_fraction;
  m.measured_class = cls.bound;
  m.error = (node.roof.predicted - t) / t;
}

ProfileSummary summarize_profile(const Analysis& a, ProfileSummary s) {
  s.measured = s.not_replayed = s.skipped = s.no_kernel = 0;
  s.predicted_s = s.measured_s = 0;
  std::map<std::string, std::vector<double>> errors;
  std::map<std::string, std::pair<double, double>> sums;
  std::map<std::string, double> abs_diff;
  double all_abs_diff = 0;
  std::vector<double> all;
  for (const NodeResult& n : a.nodes) {
    if (!n.measured) continue;
    const Measurement& m = *n.measured;
    switch (m.status) {
      case ReplayStatus::measured:
        ++s.measured;
        break;
      case ReplayStatus::not_replayed:
        ++s.not_replayed;
        break;
      case ReplayStatus::skipped:
        ++s.skipped;
        break;
      case ReplayStatus::no_kernel:
        ++s.no_kernel;
        break;
    }
    if (m.status != ReplayStatus::measured) continue;
    std::string family = n.family ? std::string(family_name(*n.family)) : "other";
    errors[family].push_back(std::abs(m.error));
    all.push_back(std::abs(m.error));
    sums[family].first += n.roof.predicted;
    sums[family].second += m.time.median;
    double diff = std::abs(n.roof.predicted - m.time.median);
    abs_diff[family] += diff;
    all_abs_diff += diff;
    s.predicted_s += n.roof.predicted;
    s.measured_s += m.time.median;
  }
  s.classes.clear();
  for (auto& [family, e] : errors)
    s.classes.push_back({family, static_cast<int>(e.size()), quantile(e, 0.5), quantile(e, 0.9),
                         sums[family].second > 0 ? abs_diff[family] / sums[family].second : 0,
                         sums[family].first, sums[family].second});
  s.median_abs_error = quantile(all, 0.5);
  s.p90_abs_error = quantile(all, 0.9);
  s.model_error = s.measured_s > 0 ? (s.predicted_s - s.measured_s) / s.measured_s : 0;
  s.time_weighted_error = s.measured_s > 0 ? all_abs_diff / s.measured_s : 0;
  return s;
}

Analysis with_measurements(Analysis a, ProfileMeasurements m) {
  for (size_t i = 0; i < a.nodes.size() && i < m.nodes.size(); ++i)
    a.nodes[i].measured = std::move(m.nodes[i]);
  a.profile = std::make_shared<const ProfileSummary>(summarize_profile(a, std::move(m.run)));
  return a;
}

}  // namespace rooflens::profiler
