#pragma once
// Reads an ONNX file into the Graph IR. Weights are never needed: the file is mapped, and the
// protobuf parse sees a copy without any initializer payload (onnx_wire), so memory and time track
// the graph, not the weights. A payload is read only where a rule asks for that constant
// (Graph::value); a model whose external-data file is missing still loads.
#include <map>
#include <optional>
#include <string>

#include "analyzer/graph.hpp"

namespace rooflens {

enum class IfBranch { then_branch, else_branch };

struct LoadOptions {
  std::map<std::string, int64_t> dims;  // --dim NAME=VALUE, binds symbolic input dims
  int64_t bind_unbound_dims = 0;        // > 0: every unbound or unnamed input dim takes this (fuzzing)
  // --batch N: dim 0 of every input becomes N; every input must lead with the same dim (one
  // symbolic name, or one size), else InputError. The graph's notes say what was rewritten.
  std::optional<int64_t> batch;
  // Control flow: an If whose condition is not a constant takes this branch (--if-branch); a Loop
  // whose trip count is not a constant runs this many times (--loop-trips). Without them such a
  // node stays one node, not costed.
  std::optional<IfBranch> if_branch;
  std::optional<int64_t> loop_trips;
};

// Throws InputError (file missing, not ONNX, truncated, dangling input, cycle, unsupported
// opset or domain, unbound symbolic dim, overflowing dims).
Graph load_onnx(const std::string& path, const LoadOptions& options);
// The same from bytes in memory; `name` stands for the file in messages.
Graph load_onnx_bytes(const std::string& bytes, const std::string& name, const LoadOptions& options);

// Shapes of a node no rooflens rule covers, from the ONNX library's inference of that one node
// with its (already concrete) input shapes, after the library's checker accepts the node.
// True when any output got a shape.
bool foreign_node_shapes(Graph& g, Node& n);

// Domains rooflens knows; a node in any other domain is refused.
bool is_known_domain(const std::string& domain);

}  // namespace rooflens
