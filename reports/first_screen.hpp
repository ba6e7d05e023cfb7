#pragma once
// The first screen of the terminal report: what a reader came for, in its first dozen lines
// (model, device and its roofs, precision, the predicted time and throughput, whether it fits,
// how much of the model was costed), before any table.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace rooflens::reports {

// The coverage as the headline and the report's last line say it. The one place to extend with
// further coverage facts (e.g. a partial-coverage flag in the totals).
std::string coverage_text(const nlohmann::json& result);

// The predicted time and throughput: "4.21 ms for batch 8 (...) -> 1900.0 samples/s".
std::string predicted_text(const nlohmann::json& result);

// The headline lines, each at most `width` columns, ending with a blank line.
void write_first_screen(std::ostream& out, const nlohmann::json& result, size_t width);

}  // namespace rooflens::reports
