#pragma once
// The transformer-only parts of the terminal and JSON reports.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/runtime/runtime.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens::reports {

// Terminal sections, from the result JSON's "transformer" object (`result` is the whole document).
void write_transformer_header(std::ostream& out, const nlohmann::json& t, size_t width = 100);
void write_transformer_totals(std::ostream& out, const nlohmann::json& t,
                              const nlohmann::json& result, size_t width = 100);
nlohmann::json transformer_json(const TransformerSummary& t);
// The "runtime" object (--runtime), and its lines in the transformer section.
nlohmann::json runtime_json(const RuntimeSummary& r);
void write_runtime(std::ostream& out, const nlohmann::json& runtime, size_t width);

}  // namespace rooflens::reports
