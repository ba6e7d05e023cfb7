#pragma once
// Results saved with --json, read back for `rooflens report`, and the renderers that work from
// the JSON alone (HTML, CSV, a short summary).
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "analyzer/analysis.hpp"
#include "profiler/records.hpp"

namespace rooflens::reports {

struct SavedResult {
  nlohmann::json json;
};
// InputError on an unreadable file, a file that is not a rooflens result, or another major
// schema version than this build writes.
SavedResult read_result(const std::string& path);

// The self-contained page: CSS, JavaScript and SVG inline, the result embedded as JSON.
void write_html(std::ostream& out, const nlohmann::json& result);
std::string summary_from_json(const nlohmann::json& result, int top_n);

// The measured timeline as Chrome trace JSON (Perfetto, chrome://tracing): kernels on their
// stream tracks, NVTX layer ranges, and each layer's predicted duration on a track of its own.
void write_chrome_trace(std::ostream& out, const Analysis& a, const profiler::Trace& trace);

}  // namespace rooflens::reports
