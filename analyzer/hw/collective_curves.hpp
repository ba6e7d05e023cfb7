#pragma once
// Collectives measured through NCCL on one machine (`rooflens calibrate --gpus N`): per GPU
// count, the time of each collective over sizes from 1 KiB to 1 GiB, as the kernels took it
// (CUPTI: the slowest rank's NCCL kernels) and as the host call did (launch to completion).
// The link model (link_model.hpp) prices a collective from these curves where the device's
// profile has them, for that collective and GPU count.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/core/collective.hpp"

namespace rooflens {

inline constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather,
                                              Collective::reduce_scatter, Collective::all_to_all,
                                              Collective::send_recv};
std::string_view collective_name(Collective c);
std::optional<Collective> collective_named(std::string_view name);  // nullopt: no such collective
// nccl-tests' bus-bandwidth factor: busbw = size / time x factor (2(n-1)/n for an all-reduce).
double bus_factor(Collective c, int64_t ranks);

// One rank's buffers for a collective of nccl-tests' size `bytes` (link_model.hpp): the size
// rounded down to whole elements per rank (gathers, scatters and all-to-all split the buffer into
// one chunk per rank), all-gather's send buffer and reduce-scatter's receive buffer a rank's chunk.
struct CollectiveBuffers {
  int64_t bytes = 0, send = 0, recv = 0;
};
CollectiveBuffers collective_buffers(Collective c, int64_t bytes, int64_t ranks,
                                     int64_t element_bytes);

struct CollectivePoint {
  int64_t bytes = 0;    // nccl-tests' size (link_model.hpp)
  double kernel_s = 0;  // median over samples of the slowest rank's kernel time, back to back
  double wall_s = 0;    // median host time of the call until every rank's stream finished
  // The same after every GPU's L2 was flushed, as a model's layers leave it before their
  // collectives; 0 where a profile predates it.
  double kernel_cold_s = 0;
};

struct CollectiveCurveSet {
  int64_t gpus = 0;
  std::string topology;  // "NVLink (NV18) x 2", "PCIe", as the GPUs reported their peer links
  std::string nccl;      // the NCCL version that ran them
  std::string dtype;     // the element type reduced ("bf16")
  // By collective_name(): "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send/recv";
  // points in ascending bytes.
  std::map<std::string, std::vector<CollectivePoint>> curves;
};

// Which of a point's kernel times: a collective inside a model meets an L2 its layers have
// evicted (the replay's and real steps' small collectives take the flushed time, not the
// back-to-back one); back to back is how NCCL's own benchmarks and profilers time it.
enum class CollectiveTiming { after_layers, back_to_back };
// after_layers: kernel_cold_s where the point has one, else kernel_s.
double point_seconds(const CollectivePoint& p, CollectiveTiming timing);

// The kernel time of `bytes` on a measured curve: linear between the two measured sizes around
// it (time is affine in size between neighbouring sizes: a fixed latency and a bandwidth);
// below the smallest, the smallest's time (latency-bound); past the largest, the largest's time
// plus the rest at the last segment's bandwidth. nullopt for an empty curve.
std::optional<double> curve_seconds(const std::vector<CollectivePoint>& curve, int64_t bytes,
                                    CollectiveTiming timing = CollectiveTiming::after_layers);

nlohmann::json collective_curves_json(const std::vector<CollectiveCurveSet>& sets);
// InputError naming `path` and what is wrong (sizes not ascending, a time not positive).
std::vector<CollectiveCurveSet> collective_curves_from_json(const nlohmann::json& j,
                                                            const std::string& path);

}  // namespace rooflens
