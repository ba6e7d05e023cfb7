#pragma once
// Results saved with --json, read back for `rooflens report`, and the renderers that work from
// the JSON alone (HTML, CSV, a short summary).
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::reports {

// A JSON file read whole; InputError, the file called `name` ("PATH", "--flag PATH"), when it
// cannot be opened or is not JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& name);

struct SavedResult {
  nlohmann::json json;
};
// InputError on an unreadable file, a file that is not a rooflens result, or another major
// schema version than this build writes.
SavedResult read_result(const std::string& path);
// Adds what later minor versions added to a result of an older 1.x, derived from what it holds
// (model.name from the path, the memory total's parts from the transformer section, ...).
void upgrade_older_minor(nlohmann::json& result);

// The self-contained page: CSS, JavaScript and SVG inline, the result embedded as JSON.
void write_html(std::ostream& out, const nlohmann::json& result);

// The timeline as Chrome trace JSON (Perfetto, chrome://tracing). Without a measurement, the
// predicted one: each costed node a slice, back to back in execution order, on a "predicted"
// track (FLOPs, bytes, bound in its args); a generate run's prefill and decode steps on a track of
// their own. With a measurement: kernels on their stream tracks, NVTX layer ranges, and each
// layer's predicted duration from where its first kernel started.
void write_chrome_trace(std::ostream& out, const nlohmann::json& result,
                        const profiler::Trace* measured = nullptr);
// profile --tp N: every rank's records, each GPU's kernels, NVTX ranges and predictions on tracks
// of their own, on one time axis.
void write_chrome_trace(std::ostream& out, const nlohmann::json& result,
                        const std::vector<profiler::Trace>& ranks);
// `profile`'s call: the analysis as its result JSON, with the measured trace.
void write_chrome_trace(std::ostream& out, const Analysis& a, const profiler::Trace& trace);

}  // namespace rooflens::reports
