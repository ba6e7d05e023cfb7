#pragma once
// Predictions held against layers measured on a GPU: committed references list each replayed
// layer's name, op and measured median (null where it was not measured), and a test re-predicts
// them here.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/analysis/analysis.hpp"

namespace rooflens::test {

struct LayerErrors {
  double time_weighted = 0;  // sum |p - m| / sum m
  double sum = 0;            // sum p / sum m - 1
  double selected_sum = 0;   // the same over the layers of the selected ops
};

inline LayerErrors against_measured(const Analysis& a, const nlohmann::json& layers,
                                    const std::function<bool(const std::string&)>& selected) {
  std::map<std::string, double> predicted;
  for (const NodeResult& n : a.nodes) predicted[n.name] = n.roof.predicted;
  double diff = 0, measured = 0, pred = 0, sel_pred = 0, sel_meas = 0;
  for (const nlohmann::json& l : layers) {
    if (l.at("measured_s").is_null()) continue;
    INFO(l.at("name"));
    REQUIRE(predicted.count(l.at("name")));
    double p = predicted[l.at("name")], m = l.at("measured_s").get<double>();
    diff += std::fabs(p - m), measured += m, pred += p;
    if (selected(l.at("op").get<std::string>())) sel_pred += p, sel_meas += m;
  }
  REQUIRE(measured > 0);
  return {diff / measured, pred / measured - 1, sel_meas > 0 ? sel_pred / sel_meas - 1 : 0};
}

}  // namespace rooflens::test
