#include "profiler/timeline/graph_alignment.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "profiler/timeline/kernel_names.hpp"

namespace rooflens::profiler {
namespace {

// What a node runs as, for the alignment.
enum class NodeKind { matrix, attention, convolution, norm, softmax, reduce, elementwise, copy };

NodeKind node_kind(const NodeResult& n) {
  switch (n.family.value_or(OpFamily::elementwise)) {
    case OpFamily::gemm:
      return NodeKind::matrix;
    case OpFamily::attention:
      return NodeKind::attention;
    case OpFamily::conv:
      return NodeKind::convolution;
    case OpFamily::norm:
      return NodeKind::norm;
    case OpFamily::softmax:
      return NodeKind::softmax;
    case OpFamily::reduce:
    case OpFamily::pooling:
      return NodeKind::reduce;
    case OpFamily::data_movement:
      return NodeKind::copy;
    default:
      return NodeKind::elementwise;
  }
}

bool matrix_node(NodeKind k) {
  return k == NodeKind::matrix || k == NodeKind::attention || k == NodeKind::convolution;
}

// Whether a kernel of class `k` can be part of a node of kind `n`.
bool fits(NodeKind n, KernelClass k) {
  if (k == KernelClass::other) return true;
  switch (n) {
    case NodeKind::matrix:
      return k == KernelClass::gemm;
    case NodeKind::attention:
      return k == KernelClass::attention || k == KernelClass::reduce;
    case NodeKind::convolution:
      return k == KernelClass::convolution || k == KernelClass::gemm || k == KernelClass::copy;
    case NodeKind::norm:
      return k == KernelClass::norm || k == KernelClass::elementwise || k == KernelClass::reduce ||
             k == KernelClass::copy;
    case NodeKind::softmax:
      return k == KernelClass::softmax || k == KernelClass::reduce || k == KernelClass::elementwise;
    case NodeKind::reduce:
      return k == KernelClass::reduce || k == KernelClass::elementwise;
    case NodeKind::elementwise:
    case NodeKind::copy:
      return k == KernelClass::elementwise || k == KernelClass::copy;
  }
  return false;
}

constexpr double kMismatch = 1.0;      // a kernel on a node of another kind
constexpr double kSkipMatrix = 2.0;    // a GEMM, attention or convolution node with no kernel
constexpr double kSkipOther = 0.3;     // any other node with no kernel (fused, or not launched)
constexpr double kSecondMatrix = 0.8;  // a second matrix kernel on one matrix node
constexpr double kLargerNode = 0.01;   // a tie between fitting nodes goes to the larger
// The table holds kernels x nodes cells (12 bytes each): a launch past this is left unaligned.
constexpr size_t kMaxCells = 40'000'000;

struct Kernel {
  size_t activity;
  KernelClass cls;
  bool finishing;
};

// The cheapest monotone assignment of `kernels` to `nodes`; per kernel, the index into `nodes`.
// `weight`: per node, its predicted time over the largest node's: between two nodes a kernel fits
// equally (a fused bias add and GELU), the larger takes it.
std::vector<int> align(const std::vector<Kernel>& kernels, const std::vector<NodeKind>& nodes,
                       const std::vector<double>& weight) {
  size_t n = kernels.size(), m = nodes.size();
  std::vector<double> skip_before(m + 1, 0);  // cost of skipping nodes [0, j)
  for (size_t j = 0; j < m; ++j)
    skip_before[j + 1] = skip_before[j] + (matrix_node(nodes[j]) ? kSkipMatrix : kSkipOther);
  auto match = [&](size_t i, size_t j) {
    return fits(nodes[j], kernels[i].cls) ? -kLargerNode * weight[j] : kMismatch;
  };
  auto stay = [&](size_t i, size_t j) {
    bool matrix_kernel = kernels[i].cls == KernelClass::gemm ||
                         kernels[i].cls == KernelClass::attention ||
                         kernels[i].cls == KernelClass::convolution;
    return matrix_node(nodes[j]) && matrix_kernel && !kernels[i].finishing ? kSecondMatrix : 0.0;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(n, std::vector<double>(m, inf));
  std::vector<std::vector<int>> from(n, std::vector<int>(m, -1));  // previous kernel's node
  for (size_t j = 0; j < m; ++j) cost[0][j] = skip_before[j] + match(0, j);
  for (size_t i = 1; i < n; ++i) {
    // best over j' < j of cost[i-1][j'] + skipping the nodes between: running minimum of
    // cost[i-1][j'] - skip_before[j'+1].
    double best = inf;
    int best_j = -1;
    for (size_t j = 0; j < m; ++j) {
      double via_stay = cost[i - 1][j] + stay(i, j);
      double via_advance = best_j >= 0 ? best + skip_before[j] : inf;
      if (via_stay <= via_advance) {
        cost[i][j] = via_stay + match(i, j);
        from[i][j] = static_cast<int>(j);
      } else {
        cost[i][j] = via_advance + match(i, j);
        from[i][j] = best_j;
      }
      double candidate = cost[i - 1][j] - skip_before[j + 1];
      if (candidate < best) best = candidate, best_j = static_cast<int>(j);
    }
  }
  size_t end = 0;
  double best = inf;
  for (size_t j = 0; j < m; ++j)
    if (double c = cost[n - 1][j] + skip_before[m] - skip_before[j + 1]; c < best)
      best = c, end = j;
  std::vector<int> out(n);
  int j = static_cast<int>(end);
  for (size_t i = n; i-- > 0;) {
    out[i] = j;
    j = from[i][static_cast<size_t>(j)];
  }
  return out;
}

}  // namespace

GraphAlignment align_graph_kernels(const Trace& t, const std::vector<ActivityPlace>& places,
                                   const Analysis& a, int root_module, size_t steps) {
  GraphAlignment out;
  out.node.assign(t.activities.size(), -1);
  std::vector<int> node_index;  // nodes that launch kernels, in execution order
  std::vector<NodeKind> kinds;
  std::vector<double> weight;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeResult& n = a.nodes[i];
    if (n.status != NodeStatus::costed || n.family == OpFamily::view ||
        n.family == OpFamily::communication)
      continue;
    node_index.push_back(static_cast<int>(i));
    kinds.push_back(node_kind(n));
    weight.push_back(n.roof.predicted);
  }
  if (kinds.empty()) return out;
  double largest = *std::max_element(weight.begin(), weight.end());
  for (double& w : weight) w = largest > 0 ? w / largest : 0;
  // The sequences to align: each graph launch's kernels with no module; and, per step, the kernels
  // only the model's own range holds where they are most of the step (a compiled model).
  std::map<const ApiCall*, std::vector<size_t>> by_launch;
  std::vector<std::vector<size_t>> by_step(steps);
  std::vector<double> step_s(steps, 0), root_s(steps, 0);
  for (size_t i = 0; i < t.activities.size(); ++i) {
    const ActivityPlace& p = places[i];
    const GpuActivity& x = t.activities[i];
    bool kernel = x.kind == GpuActivity::Kind::kernel;
    if (p.from_graph && p.module < 0 && p.launch && kernel) by_launch[p.launch].push_back(i);
    if (p.step < 0 || static_cast<size_t>(p.step) >= steps) continue;
    size_t s = static_cast<size_t>(p.step);
    double d = static_cast<double>(x.end_ns - x.start_ns);
    step_s[s] += d;
    if (root_module >= 0 && p.module == root_module && !p.from_graph && kernel) {
      by_step[s].push_back(i);
      root_s[s] += d;
    }
  }
  std::vector<std::vector<size_t>> groups;
  for (auto& [launch, activities] : by_launch) groups.push_back(std::move(activities));
  out.launches = static_cast<int>(groups.size());
  for (size_t s = 0; s < steps; ++s)
    if (!by_step[s].empty() && root_s[s] >= 0.5 * step_s[s]) {
      groups.push_back(std::move(by_step[s]));
      ++out.root_steps;
    }
  for (std::vector<size_t>& activities : groups) {
    std::sort(activities.begin(), activities.end(), [&](size_t x, size_t y) {
      return t.activities[x].start_ns < t.activities[y].start_ns;
    });
    if (activities.size() * kinds.size() > kMaxCells) {
      ++out.too_large;
      continue;
    }
    std::vector<Kernel> kernels;
    for (size_t i : activities)
      kernels.push_back(
          {i, kernel_class(t.activities[i].name), finishing_kernel(t.activities[i].name)});
    std::vector<int> assigned = align(kernels, kinds, weight);
    for (size_t k = 0; k < kernels.size(); ++k) {
      const GpuActivity& x = t.activities[kernels[k].activity];
      double s = static_cast<double>(x.end_ns - x.start_ns) * 1e-9;
      size_t j = static_cast<size_t>(assigned[k]);
      out.node[kernels[k].activity] = node_index[j];
      ++out.kernels;
      out.kernel_s += s;
      if (places[kernels[k].activity].from_graph) ++out.graph_kernels, out.graph_s += s;
      if (fits(kinds[j], kernels[k].cls)) out.matched_s += s;
    }
  }
  return out;
}

}  // namespace rooflens::profiler
