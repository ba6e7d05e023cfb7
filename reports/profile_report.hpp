#pragma once
// Measurement output: the terminal section and the JSON fields `rooflens profile` adds.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/analysis/analysis.hpp"

namespace rooflens::reports {

// The terminal section, from the result JSON (its "profile" and each node's "measured").
void write_profile_table(std::ostream& out, const nlohmann::json& result, int top_n, size_t width);
nlohmann::json measurement_json(const Measurement& m);
nlohmann::json profile_json(const ProfileSummary& p);

}  // namespace rooflens::reports
