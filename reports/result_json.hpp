#pragma once
// The result as JSON (docs/json.md, docs/result.schema.json): the hub every sink renders from,
// so a saved result re-renders (`rooflens report`) exactly as the run that wrote it.
#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/analysis/analysis.hpp"

namespace rooflens::reports {

nlohmann::json result_json(const Analysis& a);
// One device entry as the result's `device` holds it (and `rooflens.devices()` lists it).
nlohmann::json device_json(const Device& d);
// The document as `--json` writes it (names from model files may hold any bytes: invalid UTF-8
// becomes U+FFFD).
void write_json(std::ostream& out, const nlohmann::json& result);
void write_csv_from_json(std::ostream& out, const nlohmann::json& result);
// Rows of the terminal report's top-N table.
enum class TableRows {
  folded,  // one row per distinct node: identical repeated layers folded, with their count
  layer,   // one row per node of every layer
  block,   // repeated layers summed by name (model.layers.*.mlp.down_proj), shapes or not
};
struct TableOptions {
  int top = 15;
  TableRows rows = TableRows::folded;
  size_t width = 100;  // columns; below 100 the compact layout
};
// The terminal report (TableSink) from a result.
void write_table(std::ostream& out, const nlohmann::json& result, const TableOptions& options);
// top `top_n` rows, folded nodes or (by_block) blocks, at 100 columns.
void write_table(std::ostream& out, const nlohmann::json& result, int top_n, bool by_block);

}  // namespace rooflens::reports
