#include "profiler/timeline/module_paths.hpp"

#include <algorithm>
#include <cctype>

namespace rooflens::profiler {

namespace {
bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  if (path.empty()) return parts;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    parts.push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(path.substr(start));
  return parts;
}

std::string parent_path(const std::string& path) {
  auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string last_component(const std::string& path) {
  auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

int path_depth(const std::string& path) {
  return path.empty() ? 0 : static_cast<int>(std::count(path.begin(), path.end(), '.')) + 1;
}

bool within(const std::string& path, const std::string& ancestor) {
  if (ancestor.empty()) return true;
  if (path.size() < ancestor.size() || path.compare(0, ancestor.size(), ancestor) != 0)
    return false;
  return path.size() == ancestor.size() || path[ancestor.size()] == '.';
}

ModelModules::ModelModules(const Analysis& a, const Graph& g) {
  modules_[""].path = "";
  chains_.resize(a.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeResult& n = a.nodes[i];
    std::vector<std::string>& chain = chains_[i];
    chain.push_back("");
    const Node* node =
        n.index >= 0 && static_cast<size_t>(n.index) < g.nodes.size() ? &g.nodes[n.index] : nullptr;
    std::vector<std::pair<std::string, std::string>> classes;
    if (node && !node->module_scopes.empty()) {
      for (const auto& [path, cls] : node->module_scopes) {
        if (!path.empty()) chain.push_back(path);
        classes.emplace_back(path, cls);
      }
    } else {
      std::string prefix;
      for (const std::string& part : split_path(n.name)) {
        prefix = prefix.empty() ? part : prefix + "." + part;
        chain.push_back(prefix);
      }
    }
    bool scoped = node && !node->module_scopes.empty();
    for (size_t k = 0; k < chain.size(); ++k) {
      ModelModule& m = modules_[chain[k]];
      if (m.path.empty() && !chain[k].empty()) {
        m.path = chain[k];
        ModelModule& parent = modules_[k > 0 ? chain[k - 1] : std::string()];
        parent.children.push_back(chain[k]);
      }
      m.from_scope |= scoped;
      m.ops.insert(n.op);
      ++m.nodes;
    }
    for (const auto& [path, cls] : classes)
      if (!cls.empty()) modules_[path].cls = cls;
  }
}

const ModelModule* ModelModules::find(const std::string& path) const {
  auto it = modules_.find(path);
  return it == modules_.end() ? nullptr : &it->second;
}

const std::string* ModelModules::module_of(int node, const std::set<std::string>& known) const {
  const auto& c = chains_.at(static_cast<size_t>(node));
  for (auto it = c.rbegin(); it != c.rend(); ++it)
    if (known.count(*it)) return &*it;
  return nullptr;
}

bool ModelModules::numbered_container(const ModelModule& m) const {
  if (m.children.empty()) return false;
  return std::all_of(m.children.begin(), m.children.end(),
                     [](const std::string& c) { return all_digits(last_component(c)); });
}

}  // namespace rooflens::profiler
