#pragma once
// The training step's parts of the JSON and terminal reports (--phase train).
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/training/training.hpp"

namespace rooflens::reports {

// The result JSON's "training" object (node names from the analysis' forward nodes).
nlohmann::json training_json(const TrainingSummary& t, const Analysis& a);
// Terminal: the step's headline, the nodes by forward + backward time with both columns, the
// memory timeline's main moments and the peak. `result` is the whole document.
// Below 100 columns (`width`) the compact layout; `fold`: identical repeated layers in one row.
void write_training(std::ostream& out, const nlohmann::json& result, int top_n, size_t width = 100,
                    bool fold = true);

}  // namespace rooflens::reports
