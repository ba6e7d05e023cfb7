#pragma once
// One interface for every output. A sink receives a finished Analysis and only formats it.
#include <ostream>

#include "analyzer/analysis/analysis.hpp"

namespace rooflens::reports {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(std::ostream& out, const Analysis& a) const = 0;
};

// Terminal report, readable at 100 columns: header, top-N nodes, totals, time by op, coverage.
// Rendered from the result JSON (write_table), as `rooflens report` renders a saved one.
class TableSink : public Sink {
 public:
  // by_block: fold repeated layers (model.layers.*.mlp.down_proj) into one row each.
  explicit TableSink(int top_n, bool by_block = false) : top_n_(top_n), by_block_(by_block) {}
  void write(std::ostream& out, const Analysis& a) const override;

 private:
  int top_n_;
  bool by_block_;
};

// The machine-readable result: every node and every total (docs/json.md).
class JsonSink : public Sink {
 public:
  void write(std::ostream& out, const Analysis& a) const override;
};

// The per-node table, one row per node, for pandas and spreadsheets.
class CsvSink : public Sink {
 public:
  void write(std::ostream& out, const Analysis& a) const override;
};

// The self-contained HTML report (roofline, layer table, time by op/block, memory timeline).
class HtmlSink : public Sink {
 public:
  void write(std::ostream& out, const Analysis& a) const override;
};

// 1.2: measurements (nodes[].measured, profile), device spec/l2_bandwidth. 1.3: model.name,
// inputs[].kv_cache, device.requested, totals.throughput_unit, memory.kv_cache_bytes/
// activation_bytes/peak_node_index, transformer MoE/MLA fields, measured.relative_iqr.
// 1.4: compare, nodes[].module.
// Minor versions only add.
inline constexpr const char* kJsonSchemaVersion = "1.6";

// Rows of the by-block view: nodes whose names differ only in layer numbers, summed.
struct BlockRow {
  std::string block;  // name with numeric path components as '*'
  std::string op;
  int count = 0;
  int64_t flops = 0, bytes = 0, params = 0;
  double predicted_s = 0;
};
std::vector<BlockRow> fold_blocks(const Analysis& a);

}  // namespace rooflens::reports
