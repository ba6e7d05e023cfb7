#include "analyzer/hw/link_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/collectives_json.hpp"

namespace rooflens {
namespace {

struct BusbwPoint {
  std::vector<std::string> devices;
  int64_t ranks = 0;
  double busbw = 0;
  std::string source;
};

// Curves measured through NCCL (calibrate --gpus N) that rooflens ships, with the devices they
// apply to.
struct ShippedCurves {
  std::vector<std::string> devices;
  CollectiveCurveSet set;
};

struct LinkData {
  double step_latency_s = 0;
  int64_t custom_max_bytes = 0;
  std::map<std::string, std::vector<BusbwPoint>> fabrics;
  std::vector<ShippedCurves> measured;
  std::vector<ScaleOut> scale_out;
};

const LinkData& link_data() {
  static const LinkData data = [] {
    LinkData d;
    nlohmann::json j = nlohmann::json::parse(kCollectivesJson);
    d.step_latency_s = j.at("step_latency_s").get<double>();
    d.custom_max_bytes = j.at("custom_allreduce_max_bytes").get<int64_t>();
    for (const auto& f : j.at("fabrics")) {
      auto& points = d.fabrics[f.at("id").get<std::string>()];
      for (const auto& p : f.at("all_reduce_busbw"))
        points.push_back({p.at("devices").get<std::vector<std::string>>(),
                          p.at("ranks").get<int64_t>(), p.at("busbw").get<double>(),
                          p.at("source").get<std::string>()});
    }
    for (const auto& o : j.at("scale_out").at("systems"))
      d.scale_out.push_back(
          {o.at("devices").get<std::vector<std::string>>(), o.at("gpus_per_node").get<int64_t>(),
           o.at("nic_bandwidth").get<double>(), o.value("allreduce_busbw", 0.0),
           o.at("step_latency_s").get<double>(), o.at("source").get<std::string>()});
    if (j.contains("measured"))
      for (const auto& m : j.at("measured")) {
        nlohmann::json one = nlohmann::json::array({m});
        d.measured.push_back({m.at("devices").get<std::vector<std::string>>(),
                              collective_curves_from_json(one, "data/collectives.json").front()});
      }
    return d;
  }();
  return data;
}

std::string fabric_id(Fabric f) {
  switch (f) {
    case Fabric::nvswitch:
      return "nvswitch";
    case Fabric::nvlink_bridge:
      return "nvlink-bridge";
    case Fabric::pcie:
      return "pcie";
  }
  return "pcie";
}

// One direction of one GPU's links: NVIDIA quotes NVLink with both directions together.
double link_per_direction(const Device& d, Fabric f) {
  if (f != Fabric::pcie && d.nvlink_bandwidth) return *d.nvlink_bandwidth / 2;
  if (d.pcie_bandwidth) return *d.pcie_bandwidth;
  if (d.nvlink_bandwidth) return *d.nvlink_bandwidth / 2;
  throw InputError(fmt::format("device {} lists no GPU-to-GPU link bandwidth", d.id));
}

const std::vector<CollectivePoint>* curve_in(const CollectiveCurveSet& set, Collective c,
                                             int64_t ranks) {
  if (set.gpus != ranks) return nullptr;
  auto it = set.curves.find(std::string(collective_name(c)));
  return it != set.curves.end() && !it->second.empty() ? &it->second : nullptr;
}

// A measured curve for this collective and GPU count: the device profile's (calibrate --gpus N
// on this machine), else one rooflens ships for this device (data/collectives.json); null when
// neither has one.
const std::vector<CollectivePoint>* measured_curve(const Device& d, Collective c, int64_t ranks) {
  if (d.collective_curves)
    for (const CollectiveCurveSet& set : *d.collective_curves)
      if (const auto* curve = curve_in(set, c, ranks)) return curve;
  const std::string& id = d.spec ? d.spec->id : d.id;
  for (const ShippedCurves& m : link_data().measured)
    if (std::find(m.devices.begin(), m.devices.end(), id) != m.devices.end())
      if (const auto* curve = curve_in(m.set, c, ranks)) return curve;
  return nullptr;
}

// Beyond one node's NVLink domain: NCCL's rings and trees cross nodes through the GPUs' network
// adapters (one per GPU, rail-optimized), each ring through a different adapter, so the ring
// collectives' bus bandwidth is the published cross-node figure, else the node's adapters
// together, never above the node's own; an all-to-all sends the share of its buffer that lives
// on other nodes through the GPU's own adapter. Each step that crosses nodes adds the network's
// latency.
CollectivePrice across_nodes(Collective c, int64_t bytes, int64_t ranks, const Device& spec,
                             const ScaleOut& so) {
  const LinkData& data = link_data();
  double n = static_cast<double>(ranks), g = static_cast<double>(so.gpus_per_node),
         s = static_cast<double>(bytes);
  double nodes = std::ceil(n / g), a = data.step_latency_s, ax = so.step_latency_s;
  double link = link_per_direction(spec, fabric_of(spec, so.gpus_per_node));
  double node_busbw = allreduce_busbw(spec, so.gpus_per_node);
  double ring_busbw = so.allreduce_busbw > 0 ? std::min(so.allreduce_busbw, node_busbw)
                                             : std::min(node_busbw, so.nic_bandwidth * g);
  double factor = bus_factor(c, ranks);
  CollectivePrice best;
  auto consider = [&](const char* name, double seconds) {
    if (best.algorithm.empty() || seconds < best.seconds) best = {seconds, name, 0};
  };
  switch (c) {
    case Collective::all_reduce:
      consider("ring across nodes",
               2 * (n - 1) * a + 2 * (nodes - 1) * ax + factor * s / ring_busbw);
      consider("tree across nodes", 2 * std::ceil(std::log2(g)) * a +
                                        2 * std::ceil(std::log2(nodes)) * ax +
                                        factor * s / ring_busbw);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      consider("ring across nodes",
               (n - 1) * a + (nodes - 1) * ax + factor * s / std::min(ring_busbw, link));
      break;
    case Collective::all_to_all:
      consider("p2p across nodes", ax + std::max((n - g) / n * s / so.nic_bandwidth,  // off node
                                                 (g - 1) / n * s / link));            // on the node
      break;
    case Collective::send_recv:
      consider("p2p across nodes", ax + s / so.nic_bandwidth);
      break;
  }
  best.busbw = best.seconds > 0 ? s / best.seconds * factor : 0;
  return best;
}

}  // namespace

const ScaleOut* scale_out_of(const Device& d) {
  const std::string& id = d.spec ? d.spec->id : d.id;
  for (const ScaleOut& o : link_data().scale_out)
    if (std::find(o.devices.begin(), o.devices.end(), id) != o.devices.end()) return &o;
  return nullptr;
}

double send_between_nodes(int64_t bytes, const Device& d) {
  const ScaleOut* so = scale_out_of(d);
  if (!so) return collective_seconds(Collective::send_recv, bytes, 2, d);
  const Device& spec = d.spec ? *d.spec : d;
  return across_nodes(Collective::send_recv, bytes, so->gpus_per_node + 1, spec, *so).seconds;
}

Fabric fabric_of(const Device& d, int64_t ranks) {
  const Device& spec = d.spec ? *d.spec : d;
  if (!spec.nvlink_bandwidth) return Fabric::pcie;
  // PCIe cards (their id says so) bridge NVLink in pairs only; SXM parts sit on NVSwitch.
  bool pcie_card = spec.id.find("PCIe") != std::string::npos;
  if (!pcie_card) return Fabric::nvswitch;
  return ranks <= 2 ? Fabric::nvlink_bridge : Fabric::pcie;
}

double allreduce_busbw(const Device& d, int64_t ranks, std::string* source) {
  const Device& spec = d.spec ? *d.spec : d;
  Fabric f = fabric_of(d, ranks);
  const auto& points = link_data().fabrics.at(fabric_id(f));
  const BusbwPoint* best = nullptr;
  for (const BusbwPoint& p : points) {
    if (std::find(p.devices.begin(), p.devices.end(), spec.id) == p.devices.end()) continue;
    if (!best || std::llabs(p.ranks - ranks) < std::llabs(best->ranks - ranks)) best = &p;
  }
  if (best) {
    if (source)
      *source = best->ranks == ranks
                    ? best->source
                    : fmt::format("{} (published for {} GPUs)", best->source, best->ranks);
    return best->busbw;
  }
  // No published figure for this device on this fabric: its links' per-direction bandwidth,
  // which a ring all-reduce's bus bandwidth approaches and cannot pass without in-switch reduction.
  if (source)
    *source = fmt::format(
        "no published all-reduce figure for {} ({}): the link's per-direction bandwidth", spec.id,
        fabric_id(f));
  return link_per_direction(spec, f);
}

CollectivePrice price_collective(Collective c, int64_t bytes, int64_t ranks, const Device& d,
                                 bool engine_kernels, CollectiveTiming timing) {
  CollectivePrice best;
  if (ranks <= 1 || bytes <= 0) return best;
  const LinkData& data = link_data();
  const Device& spec = d.spec ? *d.spec : d;
  if (const ScaleOut* so = scale_out_of(spec); so && ranks > so->gpus_per_node)
    return across_nodes(c, bytes, ranks, spec, *so);
  Fabric f = fabric_of(spec, ranks);
  double n = static_cast<double>(ranks), s = static_cast<double>(bytes),
         alpha = data.step_latency_s;
  double link = link_per_direction(spec, f);
  // The all-reduce busbw is the fabric's measured one; the other collectives have no in-switch
  // reduction to gain from, so they stay within the links.
  double busbw = c == Collective::all_reduce ? allreduce_busbw(spec, ranks)
                                             : std::min(allreduce_busbw(spec, ranks), link);
  double factor = bus_factor(c, ranks);
  auto consider = [&](const char* name, double steps, double moved_bytes, double bandwidth) {
    double t = steps * alpha + moved_bytes / bandwidth;
    if (best.algorithm.empty() || t < best.seconds) best = {t, name, 0};
  };
  // Measured through NCCL on this machine (calibrate --gpus N): NCCL's own choice of algorithm
  // at each size, in place of the ring and tree modelled from published bus bandwidths.
  if (const std::vector<CollectivePoint>* curve = measured_curve(d, c, ranks)) {
    best = {*curve_seconds(*curve, bytes, timing), "NCCL, measured", 0};
    if (engine_kernels && c == Collective::all_reduce && f != Fabric::pcie &&
        bytes <= data.custom_max_bytes) {
      consider("one-shot", 2, (n - 1) * s, link);
      consider("two-shot", 4, 2 * (n - 1) / n * s, link);
    }
    best.busbw = s / best.seconds * factor;
    return best;
  }
  switch (c) {
    case Collective::all_reduce:
      consider("ring", 2 * (n - 1), factor * s, busbw);
      consider("tree", 2 * std::ceil(std::log2(n)), factor * s, busbw);
      if (engine_kernels && f != Fabric::pcie && bytes <= data.custom_max_bytes) {
        // One-shot: every GPU reads every peer's whole buffer and reduces it (two barriers).
        consider("one-shot", 2, (n - 1) * s, link);
        // Two-shot: reduce-scatter then all-gather through peer reads (four barriers).
        consider("two-shot", 4, 2 * (n - 1) / n * s, link);
      }
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      consider("ring", n - 1, factor * s, busbw);
      break;
    case Collective::all_to_all:
      consider("p2p", 1, factor * s, busbw);
      break;
    case Collective::send_recv:
      consider("p2p", 1, s, link);
      break;
  }
  best.busbw = best.seconds > 0 ? s / best.seconds * factor : 0;
  return best;
}

double collective_seconds(Collective c, int64_t bytes, int64_t ranks, const Device& d,
                          bool engine_kernels) {
  return price_collective(c, bytes, ranks, d, engine_kernels).seconds;
}

}  // namespace rooflens
