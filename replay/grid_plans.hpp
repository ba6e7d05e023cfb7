#pragma once
// The replay plan calibrate times for a point of a performance table (analyzer/hw/perf_model.hpp):
// the kernel a node with those coordinates runs, on synthetic buffers.
#include <string>
#include <vector>

#include "replay/plan.hpp"

namespace rooflens::replay {

struct GridPlan {
  ReplayPlan plan;
  // The plan's time times this is the nominal point's: an alignment class is measured on dims
  // moved off the power of two (1024 -> 1032 for 8, 1025 for 1) and scaled back by the work.
  double scale = 1;
};
// InputError for a table key calibrate does not know.
GridPlan plan_for_grid_point(const std::string& table, const std::vector<double>& x);

}  // namespace rooflens::replay
