#pragma once
// A transformer config analyzed as `compare` analyzes it, with the inferred graph its modules come
// from: the model side of the compare tests.
#include <string>

#include "analyzer/transformers/analyze_transformer.hpp"

namespace rooflens::test {

struct Model {
  Analysis analysis;
  Graph graph;
};

// Prefill of `seq_or_context` tokens, or one decode step at that context.
inline Model config_model(const std::string& path, Workload w, int64_t seq_or_context) {
  TransformerOptions o;
  o.workload = w;
  if (w == Workload::prefill)
    o.lowering.seq = seq_or_context;
  else
    o.lowering.context = seq_or_context;
  Model m;
  m.analysis = analyze_transformer(load_transformer_config(path), o, &m.graph);
  return m;
}

}  // namespace rooflens::test
