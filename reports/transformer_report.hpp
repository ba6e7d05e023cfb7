#pragma once
// The transformer-only parts of the terminal and JSON reports.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/transformer_analysis.hpp"

namespace rooflens::reports {

void write_transformer_header(std::ostream& out, const TransformerSummary& t);
void write_transformer_totals(std::ostream& out, const TransformerSummary& t, const Analysis& a);
nlohmann::json transformer_json(const TransformerSummary& t);

}  // namespace rooflens::reports
