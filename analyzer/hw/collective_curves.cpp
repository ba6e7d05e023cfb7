#include "analyzer/hw/collective_curves.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"

namespace rooflens {

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "all-reduce";
    case Collective::all_gather:
      return "all-gather";
    case Collective::reduce_scatter:
      return "reduce-scatter";
    case Collective::all_to_all:
      return "all-to-all";
    case Collective::send_recv:
      return "send/recv";
  }
  return "?";
}

std::optional<Collective> collective_named(std::string_view name) {
  for (Collective k : kCollectives)
    if (collective_name(k) == name) return k;
  return std::nullopt;
}

double bus_factor(Collective c, int64_t ranks) {
  double n = static_cast<double>(ranks);
  switch (c) {
    case Collective::all_reduce:
      return 2 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return (n - 1) / n;
    case Collective::send_recv:
      return 1;
  }
  return 1;
}

CollectiveBuffers collective_buffers(Collective c, int64_t bytes, int64_t ranks,
                                     int64_t element_bytes) {
  bool chunked =
      c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
  int64_t unit = chunked ? element_bytes * ranks : element_bytes;
  CollectiveBuffers b;
  b.bytes = std::max(unit, bytes / unit * unit);
  b.send = c == Collective::all_gather ? b.bytes / ranks : b.bytes;
  b.recv = c == Collective::reduce_scatter ? b.bytes / ranks : b.bytes;
  return b;
}

double point_seconds(const CollectivePoint& p, CollectiveTiming timing) {
  return timing == CollectiveTiming::after_layers && p.kernel_cold_s > 0 ? p.kernel_cold_s
                                                                         : p.kernel_s;
}

std::optional<double> curve_seconds(const std::vector<CollectivePoint>& curve, int64_t bytes,
                                    CollectiveTiming timing) {
  if (curve.empty()) return std::nullopt;
  auto t = [timing](const CollectivePoint& p) { return point_seconds(p, timing); };
  if (bytes <= curve.front().bytes) return t(curve.front());
  for (size_t i = 1; i < curve.size(); ++i) {
    const CollectivePoint &a = curve[i - 1], &b = curve[i];
    if (bytes > b.bytes) continue;
    double f = static_cast<double>(bytes - a.bytes) / static_cast<double>(b.bytes - a.bytes);
    return t(a) + f * (t(b) - t(a));
  }
  const CollectivePoint& last = curve.back();
  // The last segment's marginal bandwidth; a flat or inverted segment (noise) falls back to the
  // largest size's average bandwidth.
  double bw = static_cast<double>(last.bytes) / t(last);
  if (curve.size() >= 2) {
    const CollectivePoint& prev = curve[curve.size() - 2];
    if (t(last) > t(prev)) bw = static_cast<double>(last.bytes - prev.bytes) / (t(last) - t(prev));
  }
  return t(last) + static_cast<double>(bytes - last.bytes) / bw;
}

nlohmann::json collective_curves_json(const std::vector<CollectiveCurveSet>& sets) {
  nlohmann::json out = nlohmann::json::array();
  for (const CollectiveCurveSet& s : sets) {
    nlohmann::json curves = nlohmann::json::object();
    for (const auto& [name, points] : s.curves) {
      nlohmann::json rows = nlohmann::json::array();
      for (const CollectivePoint& p : points) {
        auto four_digits = [](double t) { return std::stod(fmt::format("{:.4g}", t)); };
        nlohmann::json row = {{"bytes", p.bytes},
                              {"kernel_s", four_digits(p.kernel_s)},
                              {"wall_s", four_digits(p.wall_s)}};
        if (p.kernel_cold_s > 0) row["kernel_cold_s"] = four_digits(p.kernel_cold_s);
        rows.push_back(row);
      }
      curves[name] = rows;
    }
    out.push_back({{"gpus", s.gpus},
                   {"topology", s.topology},
                   {"nccl", s.nccl},
                   {"dtype", s.dtype},
                   {"curves", curves}});
  }
  return out;
}

std::vector<CollectiveCurveSet> collective_curves_from_json(const nlohmann::json& j,
                                                            const std::string& path) {
  std::vector<CollectiveCurveSet> sets;
  for (const auto& s : j) {
    CollectiveCurveSet set;
    set.gpus = s.at("gpus").get<int64_t>();
    if (set.gpus < 2 || set.gpus > 4096)
      throw InputError(fmt::format("{}: collectives: gpus {} is not a GPU count", path, set.gpus));
    set.topology = s.value("topology", "");
    set.nccl = s.value("nccl", "");
    set.dtype = s.value("dtype", "");
    for (const auto& item : s.at("curves").items()) {
      const std::string name =
          item.key();  // named, not a structured binding: lambdas below capture it
      const nlohmann::json& rows = item.value();
      if (!collective_named(name))
        throw InputError(fmt::format("{}: collectives: unknown collective '{}'", path, name));
      auto& points = set.curves[name];
      for (const auto& r : rows) {
        CollectivePoint p{r.at("bytes").get<int64_t>(), r.at("kernel_s").get<double>(),
                          r.at("wall_s").get<double>()};
        bool has_cold = r.contains("kernel_cold_s");
        if (has_cold) p.kernel_cold_s = r.at("kernel_cold_s").get<double>();
        auto bad = [&](const char* what) {
          return InputError(
              fmt::format("{}: collectives ({} GPUs) {}: {}", path, set.gpus, name, what));
        };
        if (p.bytes <= 0 || (!points.empty() && p.bytes <= points.back().bytes))
          throw bad("sizes must be positive and ascending");
        auto measured = [](double t) { return t > 0 && t <= 100; };
        if (!measured(p.kernel_s) || !measured(p.wall_s) ||
            (has_cold && !measured(p.kernel_cold_s)))
          throw bad("a time is not a measured time");
        points.push_back(p);
      }
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace rooflens
