#pragma once
// Module paths ("model.layers.3.self_attn.q_proj") as `compare` joins a timeline to a model: the
// path helpers, and the model's module tree. A node's modules come from the exporter's scope
// metadata where the ONNX file has it (Node::module_scopes, with class names), else from the
// node's name, which config lowering makes a module path (every dotted prefix is a candidate).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/ir/graph.hpp"

namespace rooflens::profiler {

std::vector<std::string> split_path(const std::string& path);  // "" -> {}
std::string parent_path(const std::string& path);              // "a.b" -> "a"; "a" -> ""
std::string last_component(const std::string& path);           // "a.b" -> "b"
int path_depth(const std::string& path);                       // "" -> 0, "a.b" -> 2
// True when `ancestor` is `path` or one of its dotted prefixes ("" is everyone's).
bool within(const std::string& path, const std::string& ancestor);
// Shown for the root module, whose path is empty.
inline constexpr const char* kRootLabel = "(model)";
inline std::string display_path(const std::string& path) {
  return path.empty() ? kRootLabel : path;
}

struct ModelModule {
  std::string path;
  std::string cls;                    // class name, where the model file records it
  std::vector<std::string> children;  // direct children, in execution order
  std::set<std::string> ops;          // op types of every node under it
  int nodes = 0;                      // nodes under it
  bool from_scope = false;            // an exporter scope (certainly a module), not a name prefix
};

class ModelModules {
 public:
  ModelModules(const Analysis& a, const Graph& g);

  const ModelModule* find(const std::string& path) const;
  const ModelModule& root() const { return *find(""); }
  bool has(const std::string& path) const { return find(path) != nullptr; }
  // The candidate module paths of analysis node `i`, root first; the last is the innermost.
  const std::vector<std::string>& chain(int node) const {
    return chains_.at(static_cast<size_t>(node));
  }
  // The module node `i` belongs to among `known` (modules the timeline measured): the innermost
  // of its candidates that is known, or nullptr when none is.
  const std::string* module_of(int node, const std::set<std::string>& known) const;
  // Children that are all numbers ("layers" -> 0..31): a ModuleList, which is never called itself.
  bool numbered_container(const ModelModule& m) const;
  size_t size() const { return modules_.size(); }

 private:
  std::map<std::string, ModelModule> modules_;
  std::vector<std::vector<std::string>> chains_;
};

}  // namespace rooflens::profiler
