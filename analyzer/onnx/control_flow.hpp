#pragma once
// Control flow resolved when the graph is loaded: an If's branch (a constant condition, else the
// branch chosen for it, else --if-branch), a Loop's body once per iteration (a constant trip
// count, else --loop-trips) and a Scan's once per step of its scanned axis, spliced into the graph
// as plain nodes, so the rules cost the work that runs. docs/ops.md.
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "analyzer/core/value.hpp"
#include "analyzer/onnx/load_options.hpp"

namespace rooflens {

// What the loader lends the splicer: its own node and initializer intake, the known contents of
// an outer tensor, and the graph's notes.
struct SpliceTarget {
  // One node; every name it reads or writes is in `rename`, else it is put under `prefix`.
  std::function<void(const onnx::NodeProto&, const std::string& prefix,
                     const std::map<std::string, std::string>& rename, int depth)>
      add_node;
  std::function<void(const onnx::TensorProto&)> add_initializer;
  std::function<std::optional<Value>(const std::string&)> constant_of;
  // An outer tensor's dims when the file states them all (a graph input, an initializer, or
  // value_info), else nullopt.
  std::function<std::optional<Shape>(const std::string&)> shape_of;
  std::function<void(std::string)> note;
  std::string path;  // the model file, for messages
};

using NameMap = std::function<std::string(const std::string&)>;

// Splices an If, Loop or Scan in and returns true; false when its branch or length is not known
// (the node then stays one node, not costed). InputError when unrolling passes the node limit.
bool splice_control_flow(const SpliceTarget& target, const LoadOptions& options,
                         const onnx::NodeProto& node, const std::string& node_name,
                         const NameMap& outer, int depth);

}  // namespace rooflens
