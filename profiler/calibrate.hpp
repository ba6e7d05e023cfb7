#pragma once
// `rooflens calibrate`: measures the achievable roofs of the GPU this process runs on.
#include <string>
#include <vector>

#include "analyzer/device.hpp"

namespace rooflens::profiler {

struct CalibrateOptions {
  bool quick = false;  // fewer sizes: what `profile` runs when no --device-profile is given
};

// InputError when there is no GPU or it is not in the device database.
DeviceProfile run_calibrate(const CalibrateOptions& options);

}  // namespace rooflens::profiler
