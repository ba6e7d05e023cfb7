#pragma once
// The result as JSON (docs/json.md, docs/result.schema.json): the hub every sink renders from,
// so a saved result re-renders (`rooflens report`) exactly as the run that wrote it.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/analysis.hpp"

namespace rooflens::reports {

nlohmann::json result_json(const Analysis& a);
void write_csv_from_json(std::ostream& out, const nlohmann::json& result);

}  // namespace rooflens::reports
