#pragma once
// `rooflens compare MODEL BEFORE AFTER`: the run-to-run diff as JSON (docs/json.md's "diff") and
// as a terminal table rendered from that JSON.
#include <nlohmann/json.hpp>
#include <ostream>

#include "profiler/timeline/run_diff.hpp"

namespace rooflens::reports {

nlohmann::json run_diff_json(const profiler::RunDiff& d);
// The totals per step, then the `top_n` rows that changed most, at `width` columns.
void write_run_diff(std::ostream& out, const nlohmann::json& diff, int top_n, size_t width = 100);

}  // namespace rooflens::reports
