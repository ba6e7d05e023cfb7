#include "profiler/timeline/instance_map.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <tuple>
#include <utility>

#include "profiler/timeline/kernel_names.hpp"

namespace rooflens::profiler {

std::string instance_class(const std::string& instance) {
  auto us = instance.rfind('_');
  if (us == std::string::npos || us + 1 == instance.size()) return instance;
  bool digits = std::all_of(instance.begin() + static_cast<long>(us) + 1, instance.end(),
                            [](unsigned char c) { return std::isdigit(c); });
  return digits ? instance.substr(0, us) : instance;
}

namespace {

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// What a leaf module class computes, as far as its name says.
enum class Kind { linear, conv, norm, embedding, activation, pool, inert, other };

Kind kind_of(const std::string& cls) {
  std::string l = lowercase(cls);
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
  std::string c = lowercase(cls), n = lowercase(leaf);
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

bool is_wrapper(const std::string& cls) {
  return cls == "OptimizedModule" || cls == "DistributedDataParallel" || cls == "DataParallel" ||
         cls == "FullyShardedDataParallel";
}

bool is_container(const std::string& cls) {
  return contains(cls, "Sequential") || contains(cls, "List") || contains(cls, "Dict");
}

// One call of a child inside one call of its parent: the k-th call of `instance` there.
struct Call {
  std::string instance;
  int k = 0;
  bool operator<(const Call& o) const { return std::tie(instance, k) < std::tie(o.instance, o.k); }
};

struct CallNode {
  std::string cls;
  std::vector<Call> children;  // in the order of the instance's first call that has children
};

using CallPaths = std::map<Call, std::string>;

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
    // A Sequential holds numbered children: it is not a block of named parts (ResNet's layer2
    // is not layer4.0, though both hold a few calls).
    if (is_container(c.cls) && !m.children.empty() && !model_.numbered_container(m)) return 0;
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

  void align(const Call& call, const ModelModule& module, CallPaths& out) {
    if (!out.emplace(call, module.path).second)
      return;  // a call reached twice keeps its first path
    const std::vector<Call>& a = calls_.at(call.instance).children;
    const std::vector<std::string>& b = module.children;
    if (a.empty() || b.empty()) return;
    std::vector<std::pair<Call, const ModelModule*>> matched = ordered_matches(a, b);
    // Leaf-kind calls the ordered alignment left out (called in another order than the model
    // lists them): the best remaining module that fits, order aside.
    std::set<Call> used_a;
    std::set<std::string> used_b;
    for (const auto& [c, mod] : matched) used_a.insert(c), used_b.insert(mod->path);
    for (const Call& c : a) {
      Kind k = kind_of(calls_.at(c.instance).cls);
      if (used_a.count(c) || k == Kind::other || k == Kind::inert) continue;
      const ModelModule* best_module = nullptr;
      int best_score = 0;
      for (const std::string& path : b) {
        if (used_b.count(path)) continue;
        int s = score(c.instance, *model_.find(path));
        if (s > best_score) best_score = s, best_module = model_.find(path);
      }
      if (best_module) {
        matched.emplace_back(c, best_module);
        used_a.insert(c);
        used_b.insert(best_module->path);
      }
    }
    fold_unmatched(a, matched);
    for (const auto& [c, mod] : matched) align(c, *mod, out);
  }

  // Calls folded into a neighbour's module, and that module.
  const std::vector<std::pair<Call, std::string>>& folds() const { return folds_; }

 private:
  // best[i][j]: best score aligning a[i..] with b[j..]; a numbered container in b may take a run
  // of consecutive calls, one per numbered child. Kept whole: the table and its walk share the
  // two scoring rules.
  std::vector<std::pair<Call, const ModelModule*>> ordered_matches(
      const std::vector<Call>& a, const std::vector<std::string>& b) const {
    size_t n = a.size(), m = b.size();
    std::vector<std::vector<int>> best(n + 1, std::vector<int>(m + 1, 0));
    // A numbered container (ModuleList) is never called: one instance stands for it only when
    // it is a container too, or has as many parts (a Sequential subclass such as torchvision's
    // Conv2dNormActivation), or one more (its BatchNorm folded away by the export).
    auto unit = [&](size_t i, size_t j) {
      const ModelModule& mod = *model_.find(b[j]);
      if (model_.numbered_container(mod)) {
        const CallNode& c = calls_.at(a[i].instance);
        size_t parts = c.children.size(), nodes = mod.children.size();
        if (!is_container(c.cls) && parts != nodes && parts != nodes + 1) return 0;
      }
      return score(a[i].instance, mod);
    };
    auto run = [&](size_t i, size_t j) {
      const ModelModule& c = *model_.find(b[j]);
      if (!model_.numbered_container(c) || i + c.children.size() > n) return 0;
      int total = 0;
      for (size_t k = 0; k < c.children.size(); ++k) {
        int s = score(a[i + k].instance, *model_.find(c.children[k]));
        if (s <= 0) return 0;
        total += s + 1;  // a run of layers in order is evidence of its own
      }
      return total;
    };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;) {
        int v = std::max(best[i + 1][j], best[i][j + 1]);
        if (int s = unit(i, j); s > 0) v = std::max(v, s + best[i + 1][j + 1]);
        size_t len = model_.find(b[j])->children.size();
        if (int s = run(i, j); s > 0) v = std::max(v, s + best[i + len][j + 1]);
        best[i][j] = v;
      }
    std::vector<std::pair<Call, const ModelModule*>> matched;
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
    return matched;
  }

  // A call matched to no module whose work the export fused into a neighbour: a BatchNorm folded
  // into the convolution (or linear) called just before it, or a convolution whose node the
  // export named after the BatchNorm called just after it (the module of that call runs a Conv).
  // Repeated calls of a matched instance (a `relu` the export scoped once) are not folds: they
  // keep the instance's path.
  void fold_unmatched(const std::vector<Call>& a,
                      const std::vector<std::pair<Call, const ModelModule*>>& matched) {
    std::map<Call, const ModelModule*> module_of(matched.begin(), matched.end());
    std::set<std::string> matched_instances;
    for (const auto& [c, mod] : matched) matched_instances.insert(c.instance);
    auto fits = [&](size_t at, Kind k) -> const ModelModule* {
      auto it = module_of.find(a[at]);
      if (it == module_of.end()) return nullptr;
      Kind neighbour = kind_of(calls_.at(a[at].instance).cls);
      if (k == Kind::norm)
        return neighbour == Kind::conv || neighbour == Kind::linear ? it->second : nullptr;
      return ops_fit(k, it->second->ops) ? it->second : nullptr;
    };
    for (size_t i = 0; i < a.size(); ++i) {
      if (module_of.count(a[i]) || matched_instances.count(a[i].instance)) continue;
      Kind k = kind_of(calls_.at(a[i].instance).cls);
      const ModelModule* into = nullptr;
      if (k == Kind::norm && i > 0)
        into = fits(i - 1, k);
      else if ((k == Kind::conv || k == Kind::linear) && i + 1 < a.size())
        into = fits(i + 1, k);
      if (into) folds_.emplace_back(a[i], into->path);
    }
  }

  const std::map<std::string, CallNode>& calls_;
  const ModelModules& model_;
  std::vector<std::pair<Call, std::string>> folds_;
};

// The call tree of the module ranges: per instance its class and its children's calls (of its
// first call that has any), each range's k, the roots in order, and every instance in order.
struct CallTree {
  std::map<std::string, CallNode> calls;
  std::map<const NvtxRange*, int> call_index;
  std::vector<std::string> roots, order;
};

CallTree call_tree(const std::vector<const NvtxRange*>& module_ranges) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const NvtxRange*>> by_thread;
  for (const NvtxRange* r : module_ranges) by_thread[{r->pid, r->tid}].push_back(r);
  CallTree t;
  std::set<std::string> seen_root;
  // Per instance, its first call that has children: the call its `children` list.
  std::map<std::string, const NvtxRange*> listed;
  for (auto& [thread, ranges] : by_thread) {
    std::stable_sort(ranges.begin(), ranges.end(), [](auto* x, auto* y) {
      return x->start_ns != y->start_ns ? x->start_ns < y->start_ns : x->end_ns > y->end_ns;
    });
    std::vector<const NvtxRange*> stack;
    std::map<const NvtxRange*, std::vector<Call>> inside;  // per parent range, its calls
    for (const NvtxRange* r : ranges) {
      // Sorted by start: r is inside the top unless the top ends first.
      while (!stack.empty() && stack.back()->end_ns < r->end_ns) stack.pop_back();
      auto [it, fresh] = t.calls.try_emplace(r->name);
      if (fresh) {
        it->second.cls = instance_class(r->name);
        t.order.push_back(r->name);
      }
      int k = 0;
      if (stack.empty()) {
        if (seen_root.insert(r->name).second) t.roots.push_back(r->name);
      } else if (stack.back()->name != r->name) {
        std::vector<Call>& calls = inside[stack.back()];
        k = static_cast<int>(std::count_if(calls.begin(), calls.end(),
                                           [&](const Call& c) { return c.instance == r->name; }));
        calls.push_back({r->name, k});
        if (listed.try_emplace(stack.back()->name, stack.back()).first->second == stack.back())
          t.calls[stack.back()->name].children.push_back(calls.back());
      }
      t.call_index[r] = k;
      stack.push_back(r);
    }
  }
  return t;
}

}  // namespace

const std::string* InstanceMap::path_of(const NvtxRange& r) const {
  auto k = call_index.find(&r);
  if (k != call_index.end())
    if (auto it = call_path.find({r.name, k->second}); it != call_path.end()) return &it->second;
  auto it = path.find(r.name);
  return it == path.end() ? nullptr : &it->second;
}

InstanceMap map_instances(const std::vector<const NvtxRange*>& module_ranges,
                          const ModelModules& model) {
  CallTree tree = call_tree(module_ranges);
  std::map<std::string, CallNode>& calls = tree.calls;
  // The model is the root whose calls reach the most instances.
  std::function<int(const std::string&, std::set<std::string>&)> count =
      [&](const std::string& i, std::set<std::string>& visited) {
        if (!visited.insert(i).second) return 0;
        int n = 1;
        for (const auto& c : calls[i].children) n += count(c.instance, visited);
        return n;
      };
  InstanceMap out;
  int best = 0;
  for (const auto& r : tree.roots) {
    std::set<std::string> visited;
    int n = count(r, visited);
    if (n > best) best = n, out.root = r;
  }
  // Wrappers that hold the model as their one child (torch.compile's OptimizedModule, DDP, FSDP):
  // the model is the child.
  while (!out.root.empty() && calls[out.root].children.size() == 1 &&
         is_wrapper(calls[out.root].cls))
    out.root = calls[out.root].children.front().instance;
  CallPaths paths;
  Aligner aligner(calls, model);
  if (!out.root.empty()) aligner.align({out.root, 0}, model.root(), paths);
  for (const auto& [call, module] : aligner.folds()) {
    paths.emplace(call, module);
    if (call.k == 0) out.folded.push_back(call.instance);
  }
  // An instance's path is its first mapped call's; calls mapped elsewhere keep their own.
  for (const auto& [call, module] : paths) out.path.emplace(call.instance, module);
  for (const auto& [call, module] : paths)
    if (out.path.at(call.instance) != module) out.call_path[{call.instance, call.k}] = module;
  out.call_index = std::move(tree.call_index);
  for (const auto& i : tree.order)
    if (!out.path.count(i)) out.unmapped.push_back(i);
  return out;
}

}  // namespace rooflens::profiler
