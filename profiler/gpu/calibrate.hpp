#pragma once
// `rooflens calibrate`: measures the achievable roofs of the GPU this process runs on.
#include <optional>
#include <string>
#include <vector>

#include "analyzer/hw/device.hpp"

namespace rooflens::profiler {

struct CalibrateOptions {
  bool quick = false;  // fewer sizes and smaller tables (about 90 s in all)
  bool tables =
      true;  // measure the performance tables (analyzer/hw/perf_model.hpp); roofs only when false
  std::string cudnn_dir;          // --cudnn
  int gpus = 1;                   // --gpus N > 1: NCCL's collectives among the first N GPUs too
  bool collectives_only = false;  // --add-to: only the collectives (and which GPU this is)
  std::string nccl_dir;           // --nccl
  // --tables: only the tables whose names start with one of these (empty: all of the grid set).
  std::vector<std::string> only_tables;
  // Roofs already measured on this GPU (the profile --add-to extends): they budget the table
  // points, and the roofs and floors are not measured again.
  std::optional<Device> roofs;
};

// InputError when there is no GPU or it is not in the device database.
DeviceProfile run_calibrate(const CalibrateOptions& options);

}  // namespace rooflens::profiler
