#pragma once
// calibrate's performance tables: every point of analyzer/hw/perf_model.hpp's grids that fits the
// time and memory budget, timed by the LayerTimer, and the tables' error on random held-out
// shapes timed the same way.
#include <ostream>

#include "analyzer/hw/device.hpp"
#include "profiler/gpu/layer_timer.hpp"

namespace rooflens::profiler {

// `device`: the calibrated roofs so far (to budget the points). Progress lines go to `progress`.
PerfDatabase measure_tables(LayerTimer& timer, const Device& device, bool quick,
                            const std::vector<std::string>& only, std::ostream& progress);

}  // namespace rooflens::profiler
