#pragma once
// `rooflens compare` output: the "compare" object of the result JSON (docs/json.md), and the
// terminal, CSV and Chrome-trace renderers. The terminal and CSV views render from the JSON
// alone, so `rooflens report result.json` prints what `compare` printed.
#include <nlohmann/json.hpp>
#include <ostream>

#include "profiler/timeline/module_compare.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::reports {

nlohmann::json compare_json(const profiler::TimelineComparison& c);

// Readable at `width` columns (100, or fewer for a narrow terminal): the headline per step and for
// the whole timeline, modules (or blocks) ranked by gap with their hints, where the time above the
// prediction goes, the top kernels of the largest gaps, notes.
void write_compare_table(std::ostream& out, const nlohmann::json& result, int top_n, bool by_block,
                         size_t width = 100);
// One row per module (or block): path, prediction, measurement, efficiency, gap, kernels, hint.
void write_compare_csv(std::ostream& out, const nlohmann::json& result, bool by_block);
// The timeline as a Chrome/Perfetto trace: GPU activities on their streams (with their module),
// the module ranges on their threads, and each module's predicted time on a track of its own,
// placed at the module's first activity in every step.
void write_compare_trace(std::ostream& out, const profiler::Trace& t,
                         const profiler::TimelineComparison& c);

}  // namespace rooflens::reports
