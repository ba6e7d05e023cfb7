#pragma once
// Prediction against measurement: achieved rates, measured bound class, signed error per layer,
// and the error summary per kernel class and for the whole model.
#include "analyzer/analysis/analysis.hpp"

namespace rooflens::profiler {

// Fills the derived fields of a measured node (achieved FLOP/s and bytes/s, fraction of the
// roof, measured class, error) from its prediction and m.time.
void complete_measurement(const NodeResult& node, const Device& device, Measurement& m);

// Counts, sums and error quantiles over every node with a measurement. `base` carries what the
// run knows (GPU, timing method, validity); the rest is computed here.
ProfileSummary summarize_profile(const Analysis& a, ProfileSummary base);

// The analysis with its nodes' measurements and the profile section (errors per class, the
// time-weighted headline) composed from them.
Analysis with_measurements(Analysis a, ProfileMeasurements m);

}  // namespace rooflens::profiler
