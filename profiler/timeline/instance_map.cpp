#include "profiler/timeline/instance_map.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <utility>

namespace rooflens::profiler {

std::string instance_class(const std::string& instance) {
  auto us = instance.rfind('_');
  if (us == std::string::npos || us + 1 == instance.size()) return instance;
  bool digits = std::all_of(instance.begin() + static_cast<long>(us) + 1, instance.end(),
                            [](unsigned char c) { return std::isdigit(c); });
  return digits ? instance.substr(0, us) : instance;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// What a leaf module class computes, as far as its name says.
enum class Kind { linear, conv, norm, embedding, activation, pool, inert, other };

Kind kind_of(const std::string& cls) {
  std::string l = lower(cls);
  if (l == "dropout" || l.rfind("dropout", 0) == 0 || l == "identity") return Kind::inert;
  if (cls == "Conv1D" || contains(l, "linear"))
    return Kind::linear;  // HF's Conv1D is a linear layer
  if (contains(l, "conv")) return Kind::conv;
  if (contains(l, "norm")) return Kind::norm;
  if (contains(l, "rotary") || contains(l, "positional")) return Kind::other;
  if (contains(l, "embedding")) return Kind::embedding;
  if (contains(l, "pool")) return Kind::pool;
  for (const char* a : {"relu", "gelu", "silu", "swish", "tanh", "sigmoid", "mish", "activation",
                        "softmax", "hardswish"})
    if (contains(l, a)) return Kind::activation;
  return Kind::other;
}

bool ops_fit(Kind k, const std::set<std::string>& ops) {
  auto any = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      for (const std::string& op : ops)
        if (op == n ||
            (op.size() > std::char_traits<char>::length(n) && op.find(n) != std::string::npos))
          return true;
    return false;
  };
  switch (k) {
    case Kind::linear:
      return any({"MatMul", "Gemm", "FusedMatMul", "MatMulNBits", "Einsum"});
    case Kind::conv:
      return any({"Conv"});
    case Kind::norm:
      return any({"Normalization", "RMSNorm", "LayerNorm"});
    case Kind::embedding:
      return any({"Gather"});
    case Kind::pool:
      return any({"Pool", "ReduceMean"});
    case Kind::activation:
      return any({"Relu", "Gelu", "Swish", "Silu", "Sigmoid", "Tanh", "Softmax", "Mul", "Erf",
                  "HardSwish", "Mish", "Clip"});
    case Kind::inert:
      return false;
    case Kind::other:
      return true;
  }
  return true;
}

// Words of a module's attribute name that say what class it is ("self_attn" -> attention).
bool name_fits(const std::string& leaf, const std::string& cls) {
  std::string c = lower(cls), n = lower(leaf);
  struct Synonym {
    const char* word;
    const char* classes[3];
  };
  static const Synonym kSynonyms[] = {{"attn", {"attention"}},
                                      {"ln", {"norm"}},
                                      {"norm", {"norm"}},
                                      {"wte", {"embedding"}},
                                      {"wpe", {"embedding"}},
                                      {"emb", {"embedding"}},
                                      {"fc", {"linear", "conv1d"}},
                                      {"proj", {"linear", "conv1d"}},
                                      {"head", {"linear"}},
                                      {"mlp", {"mlp", "feedforward", "ffn"}},
                                      {"act", {"activation", "gelu", "silu"}},
                                      {"pool", {"pool"}},
                                      {"downsample", {"sequential"}},
                                      {"dense", {"linear"}},
                                      {"layer", {"layer", "block"}},
                                      {"conv", {"conv"}},
                                      {"bn", {"batchnorm"}}};
  std::vector<std::string> words;
  std::string w;
  for (char ch : n + "_") {
    if (std::isalpha(static_cast<unsigned char>(ch)))
      w += ch;
    else if (!w.empty())
      words.push_back(std::exchange(w, std::string()));
  }
  for (const std::string& word : words) {
    if (word.size() >= 3 && contains(c, word.c_str())) return true;
    for (const Synonym& syn : kSynonyms)
      if (word == syn.word ||
          (std::string(syn.word).size() >= 3 && word.find(syn.word) != std::string::npos))
        for (const char* k : syn.classes)
          if (k && contains(c, k)) return true;
  }
  return false;
}

struct CallNode {
  std::string cls;
  std::vector<std::string> children;  // child instances, in order of first call
  int descendants = 0;
};

class Aligner {
 public:
  Aligner(const std::map<std::string, CallNode>& calls, const ModelModules& model)
      : calls_(calls), model_(model) {}

  // Score of naming instance `a` by module `m`; <= 0: not a match.
  int score(const std::string& a, const ModelModule& m) const {
    const CallNode& c = calls_.at(a);
    if (!m.cls.empty())
      return m.cls == c.cls ? 10 : 0;  // the file names the class: nothing else counts
    Kind k = kind_of(c.cls);
    if (k == Kind::inert) return 0;
    int s = 1;
    if (k != Kind::other) {
      if (!ops_fit(k, m.ops)) return 0;
      // Where call order and the model's order disagree (an activation called between two
      // projections), skipping the cheap module beats skipping a GEMM.
      s += k == Kind::linear || k == Kind::conv      ? 8
           : k == Kind::norm || k == Kind::embedding ? 5
                                                     : 3;
    }
    if (name_fits(last_component(m.path), c.cls)) s += 2;
    // Composite on both sides, with about as many parts.
    if (!c.children.empty() && !m.children.empty()) {
      s += 1;
      size_t x = c.children.size(), y = m.children.size();
      if (std::max(x, y) <= std::min(x, y) + 1) s += 1;
    }
    return s;
  }

  void align(const std::string& instance, const ModelModule& module,
             std::map<std::string, std::string>& out) {
    if (!out.emplace(instance, module.path).second)
      return;  // an instance called in several places keeps its first path
    const std::vector<std::string>& a = calls_.at(instance).children;
    const std::vector<std::string>& b = module.children;
    size_t n = a.size(), m = b.size();
    if (n == 0 || m == 0) return;
    // best[i][j]: best score aligning a[i..] with b[j..]; a numbered container in b may take a
    // run of consecutive instances, one per numbered child.
    std::vector<std::vector<int>> best(n + 1, std::vector<int>(m + 1, 0));
    // A numbered container (ModuleList) is never called: one instance stands for it only when
    // it is a container too, or has as many parts (a Sequential of blocks).
    auto unit = [&](size_t i, size_t j) {
      const ModelModule& m = *model_.find(b[j]);
      if (model_.numbered_container(m)) {
        const CallNode& c = calls_.at(a[i]);
        bool container = c.cls.find("Sequential") != std::string::npos ||
                         c.cls.find("List") != std::string::npos ||
                         c.cls.find("Dict") != std::string::npos;
        if (!container && c.children.size() != m.children.size()) return 0;
      }
      return score(a[i], m);
    };
    auto run = [&](size_t i, size_t j) {
      const ModelModule& c = *model_.find(b[j]);
      if (!model_.numbered_container(c) || i + c.children.size() > n) return 0;
      int total = 0;
      for (size_t k = 0; k < c.children.size(); ++k) {
        int s = score(a[i + k], *model_.find(c.children[k]));
        if (s <= 0) return 0;
        total += s + 1;  // a run of layers in order is evidence of its own
      }
      return total;
    };
    for (size_t i = n + 1; i-- > 0;)
      for (size_t j = m + 1; j-- > 0;) {
        if (i == n || j == m) continue;
        int v = std::max(best[i + 1][j], best[i][j + 1]);
        if (int s = unit(i, j); s > 0) v = std::max(v, s + best[i + 1][j + 1]);
        size_t len = model_.find(b[j])->children.size();
        if (int s = run(i, j); s > 0) v = std::max(v, s + best[i + len][j + 1]);
        best[i][j] = v;
      }
    // Walk the best alignment and recurse into each matched pair.
    std::vector<std::pair<std::string, const ModelModule*>> matched;
    size_t i = 0, j = 0;
    while (i < n && j < m) {
      int here = best[i][j];
      if (int s = unit(i, j); s > 0 && here == s + best[i + 1][j + 1]) {
        matched.emplace_back(a[i], model_.find(b[j]));
        ++i, ++j;
        continue;
      }
      const ModelModule& c = *model_.find(b[j]);
      if (int s = run(i, j); s > 0 && here == s + best[i + c.children.size()][j + 1]) {
        for (const std::string& child : c.children)
          matched.emplace_back(a[i++], model_.find(child));
        ++j;
        continue;
      }
      if (here == best[i + 1][j])
        ++i;
      else
        ++j;
    }
    // Leaf-kind instances the ordered alignment left out (called in another order than the model
    // lists them): the best remaining module that fits, order aside.
    std::set<std::string> used_a, used_b;
    for (const auto& [inst, mod] : matched) used_a.insert(inst), used_b.insert(mod->path);
    for (const std::string& inst : a) {
      Kind k = kind_of(calls_.at(inst).cls);
      if (used_a.count(inst) || k == Kind::other || k == Kind::inert) continue;
      const ModelModule* best_module = nullptr;
      int best_score = 0;
      for (const std::string& path : b) {
        if (used_b.count(path)) continue;
        int s = score(inst, *model_.find(path));
        if (s > best_score) best_score = s, best_module = model_.find(path);
      }
      if (best_module) {
        matched.emplace_back(inst, best_module);
        used_a.insert(inst);
        used_b.insert(best_module->path);
      }
    }
    for (const auto& [inst, mod] : matched) align(inst, *mod, out);
  }

 private:
  const std::map<std::string, CallNode>& calls_;
  const ModelModules& model_;
};

}  // namespace

InstanceMap map_instances(const std::vector<const NvtxRange*>& module_ranges,
                          const ModelModules& model) {
  // The call tree: per thread, ranges nest in time.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const NvtxRange*>> by_thread;
  for (const NvtxRange* r : module_ranges) by_thread[{r->pid, r->tid}].push_back(r);
  std::map<std::string, CallNode> calls;
  std::vector<std::string> roots, order;
  std::set<std::string> seen_root;
  for (auto& [thread, ranges] : by_thread) {
    std::stable_sort(ranges.begin(), ranges.end(), [](auto* x, auto* y) {
      return x->start_ns != y->start_ns ? x->start_ns < y->start_ns : x->end_ns > y->end_ns;
    });
    std::vector<const NvtxRange*> stack;
    for (const NvtxRange* r : ranges) {
      // Sorted by start: r is inside the top unless the top ends first.
      while (!stack.empty() && stack.back()->end_ns < r->end_ns) stack.pop_back();
      auto [it, fresh] = calls.try_emplace(r->name);
      if (fresh) {
        it->second.cls = instance_class(r->name);
        order.push_back(r->name);
      }
      if (stack.empty()) {
        if (seen_root.insert(r->name).second) roots.push_back(r->name);
      } else {
        auto& siblings = calls[stack.back()->name].children;
        if (stack.back()->name != r->name &&
            std::find(siblings.begin(), siblings.end(), r->name) == siblings.end())
          siblings.push_back(r->name);
      }
      stack.push_back(r);
    }
  }
  // The model is the root whose calls reach the most instances.
  std::function<int(const std::string&, std::set<std::string>&)> count =
      [&](const std::string& i, std::set<std::string>& visited) {
        if (!visited.insert(i).second) return 0;
        int n = 1;
        for (const auto& c : calls[i].children) n += count(c, visited);
        return n;
      };
  InstanceMap out;
  int best = 0;
  for (const auto& r : roots) {
    std::set<std::string> visited;
    int n = count(r, visited);
    if (n > best) best = n, out.root = r;
  }
  if (!out.root.empty()) Aligner(calls, model).align(out.root, model.root(), out.path);
  for (const auto& i : order)
    if (!out.path.count(i)) out.unmapped.push_back(i);
  return out;
}

}  // namespace rooflens::profiler
