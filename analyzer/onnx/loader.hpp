#pragma once
// Reads an ONNX file into the Graph IR. Weights are never needed: the file is mapped, and the
// protobuf parse sees a copy without any initializer payload (onnx_wire), so memory and time track
// the graph, not the weights. A payload is read only where a rule asks for that constant
// (Graph::value); a model whose external-data file is missing still loads.
#include <map>
#include <optional>
#include <string>

#include "analyzer/ir/graph.hpp"
#include "analyzer/onnx/load_options.hpp"

namespace rooflens {

// Throws InputError (file missing, not ONNX, truncated, dangling input, cycle, unsupported
// opset or domain, unbound symbolic dim, overflowing dims).
Graph load_onnx(const std::string& path, const LoadOptions& options);
// The same from bytes in memory; `name` stands for the file in messages.
Graph load_onnx_bytes(const std::string& bytes, const std::string& name,
                      const LoadOptions& options);

// Shapes of a node no rooflens rule covers, from the ONNX library's inference of that one node
// with its (already concrete) input shapes, after the library's checker accepts the node.
// True when any output got a shape.
bool foreign_node_shapes(Graph& g, Node& n);

// Domains rooflens knows; a node in any other domain is refused.
bool is_known_domain(const std::string& domain);

}  // namespace rooflens
