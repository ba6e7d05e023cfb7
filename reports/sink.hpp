#pragma once
// One interface for every output. A sink receives a finished Analysis and only formats it.
#include <ostream>

#include "analyzer/analysis.hpp"

namespace rooflens::reports {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(std::ostream& out, const Analysis& a) const = 0;
};

// Terminal report, readable at 100 columns: header, top-N nodes, totals, time by op, coverage.
class TableSink : public Sink {
 public:
  explicit TableSink(int top_n) : top_n_(top_n) {}
  void write(std::ostream& out, const Analysis& a) const override;

 private:
  int top_n_;
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

inline constexpr const char* kJsonSchemaVersion = "1.0";

}  // namespace rooflens::reports
