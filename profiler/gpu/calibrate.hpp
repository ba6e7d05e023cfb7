#pragma once
// `rooflens calibrate`: measures the achievable roofs of the GPU this process runs on.
#include <string>
#include <vector>

#include "analyzer/hw/device.hpp"

namespace rooflens::profiler {

struct CalibrateOptions {
  bool quick = false;   // fewer sizes and smaller tables (about 90 s in all)
  bool tables = true;   // measure the performance tables (analyzer/hw/perf_model.hpp); roofs only when false
  std::string cudnn_dir;  // --cudnn
};

// InputError when there is no GPU or it is not in the device database.
DeviceProfile run_calibrate(const CalibrateOptions& options);

}  // namespace rooflens::profiler
