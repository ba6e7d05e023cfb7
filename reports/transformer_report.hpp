#pragma once
// The transformer-only parts of the terminal and JSON reports.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens::reports {

// Terminal sections, from the result JSON's "transformer" object (`result` is the whole document).
void write_transformer_header(std::ostream& out, const nlohmann::json& t, size_t width = 100);
void write_transformer_totals(std::ostream& out, const nlohmann::json& t,
                              const nlohmann::json& result, size_t width = 100);
nlohmann::json transformer_json(const TransformerSummary& t);

}  // namespace rooflens::reports
