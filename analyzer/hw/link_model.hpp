#pragma once
// Collectives priced by a model of the links (data/collectives.json): per fabric (NVSwitch,
// NVLink bridge, PCIe; beyond a node, its scale-out network) and GPU count, time = latency steps x
// step latency + the bytes each GPU moves / the fabric's bus bandwidth, with nccl-tests'
// bus-bandwidth definitions. NCCL's ring and tree, and for small all-reduces the one-shot/two-shot
// peer-memory kernels serving engines use (vLLM's custom all-reduce), each priced; the cheapest
// applicable one is taken.
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/hw/collective_curves.hpp"
#include "analyzer/hw/device.hpp"

namespace rooflens {

enum class Fabric { nvswitch, nvlink_bridge, pcie };

struct CollectivePrice {
  double seconds = 0;
  std::string algorithm;  // "ring", "tree", "one-shot", "two-shot", "p2p"
  double busbw = 0;       // the bus bandwidth this size reaches (nccl-tests' definition)
};

// `bytes`: nccl-tests' size: the all-reduce buffer, all-gather's gathered output,
// reduce-scatter's input, all-to-all's per-GPU buffer, the message of a send. `engine_kernels`:
// the one-shot/two-shot all-reduce of serving engines is available (NVLink fabrics).
// `timing` picks which of a measured curve's times (collective_curves.hpp): a model's
// collectives are priced after_layers; back_to_back compares with NCCL's own benchmarks.
CollectivePrice price_collective(Collective c, int64_t bytes, int64_t ranks, const Device& d,
                                 bool engine_kernels = false,
                                 CollectiveTiming timing = CollectiveTiming::after_layers);
double collective_seconds(Collective c, int64_t bytes, int64_t ranks, const Device& d,
                          bool engine_kernels = false);

// A system's scale-out network (data/collectives.json "scale_out"): a group larger than one
// node's NVLink domain crosses it.
struct ScaleOut {
  std::vector<std::string> devices;
  int64_t gpus_per_node = 0;   // GPUs one NVLink domain holds (an HGX node, an NVL72 rack)
  double nic_bandwidth = 0;    // per GPU, one direction, bytes/s
  double allreduce_busbw = 0;  // published nccl-tests all-reduce busbw across nodes; 0: none
  double step_latency_s = 0;   // per step that crosses nodes
  std::string source;
};
// The device's scale-out, or null where data/collectives.json has none.
const ScaleOut* scale_out_of(const Device& d);

// One GPU's send of `bytes` to a GPU of another node (a pipeline stage boundary): through its
// network adapter. Within one NVLink domain where the device has no scale-out entry.
double send_between_nodes(int64_t bytes, const Device& d);

// The fabric a group of `ranks` GPUs of this device communicates over.
Fabric fabric_of(const Device& d, int64_t ranks);
// Large-message all-reduce bus bandwidth of the fabric at this GPU count, and its source.
double allreduce_busbw(const Device& d, int64_t ranks, std::string* source = nullptr);

}  // namespace rooflens
