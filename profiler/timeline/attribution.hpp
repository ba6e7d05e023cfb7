#pragma once
// Which kernels belong to which layer: by CUPTI external correlation (the id pushed around the
// layer's launches), cross-checked by NVTX containment of the launching API call.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

struct SampleTime {
  double gpu_ns = 0;  // GPU busy time of the sample's kernels, memsets and memcpys: their
                      // intervals' union, so gaps between them and overlaps among them do not count
  double span_ns = 0;  // first start to last end
  int kernels = 0;
  std::vector<std::string> names;  // in start order
};

struct Attribution {
  std::map<std::pair<int, int>, SampleTime> samples;  // (layer, sample) -> time
  int unattributed = 0;     // GPU activities without an external id (L2 flushes, set-up)
  int nvtx_checked = 0;     // activities whose launch call was checked against the ranges
  int nvtx_mismatches = 0;  // launched outside the NVTX range of the layer it is attributed to
  std::vector<std::string> problems;  // first few mismatches, for the report
};

// `layer_paths[i]` names layer i as its NVTX ranges do; a layer with no NVTX range recorded
// (CUPTI fallback or markers off) is not cross-checked.
Attribution attribute(const Trace& trace, const std::map<int, std::string>& layer_paths);

}  // namespace rooflens::profiler
