#include "analyzer/analysis/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/ops/rule_registry.hpp"
#include "analyzer/ops/shape_inference.hpp"

namespace rooflens {
namespace {

// The precision a node computes in: --dtype if given, else its first float operand's dtype.
Precision node_precision(const Graph& g, const Node& n, const std::optional<Precision>& forced) {
  if (forced) return *forced;
  if (int t = n.input(0); t >= 0 && (g.tensors[t].dtype == DType::i8 || g.tensors[t].dtype == DType::u8)) return Precision::int8;
  for (int t : n.inputs)
    if (t >= 0 && is_float(g.tensors[t].dtype)) return precision_of(g.tensors[t].dtype);
  for (int t : n.outputs)
    if (t >= 0 && is_float(g.tensors[t].dtype)) return precision_of(g.tensors[t].dtype);
  return Precision::fp32;
}

// The initializers each static tensor is computed from (through folded nodes), in one forward
// pass over the topological order: no recursion, whatever the depth of the graph.
std::vector<std::vector<int>> weight_origins(const Graph& g, const std::vector<bool>& folded) {
  std::vector<std::vector<int>> origins(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].role == TensorRole::weight) origins[t] = {static_cast<int>(t)};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!folded[i]) continue;
    std::set<int> acc;
    for (int in : g.nodes[i].inputs)
      if (in >= 0) acc.insert(origins[in].begin(), origins[in].end());
    for (int out : g.nodes[i].outputs)
      if (out >= 0) origins[out].assign(acc.begin(), acc.end());
  }
  return origins;
}

// Quantized exports keep learned weights as integer initializers (int8 kernels, int32 biases):
// the weight inputs of the quantized ops are parameters, in their stored dtype. Scales and zero
// points (even per-channel float ones) are not parameters.
void mark_quantized_weights(Graph& g) {
  static const std::map<std::string, std::vector<size_t>> weight_inputs{
      {"QLinearConv", {3, 8}}, {"QLinearMatMul", {3}}, {"ConvInteger", {1}}, {"MatMulInteger", {1}}, {"DequantizeLinear", {0}}};
  static const std::map<std::string, std::vector<size_t>> scale_inputs{
      {"QLinearConv", {1, 2, 4, 5, 6, 7}}, {"QLinearMatMul", {1, 2, 4, 5, 6, 7}}, {"ConvInteger", {2, 3}},
      {"MatMulInteger", {2, 3}},           {"DequantizeLinear", {1, 2}},        {"QuantizeLinear", {1, 2}}};
  for (const Node& n : g.nodes) {
    if (!n.domain.empty()) continue;
    if (auto it = weight_inputs.find(n.op_type); it != weight_inputs.end())
      for (size_t i : it->second) {
        int t = n.input(i);
        if (t < 0) continue;
        Tensor& x = g.tensors[t];
        if (x.role == TensorRole::constant && x.producer < 0 && !is_float(x.dtype) && x.shape && !x.shape->empty())
          x.role = TensorRole::weight;
      }
    if (auto it = scale_inputs.find(n.op_type); it != scale_inputs.end())
      for (size_t i : it->second)
        if (int t = n.input(i); t >= 0 && g.tensors[t].producer < 0) g.tensors[t].is_param = false;
  }
}

void join_shapes(const Graph& g, const std::vector<int>& ts, std::vector<std::string>& out) {
  for (int t : ts) {
    if (t < 0) continue;
    const Tensor& x = g.tensors[t];
    out.push_back(x.shape ? shape_string(*x.shape) : "?");
  }
}

}  // namespace

Analysis analyze_graph_unnamed(Graph g, const AnalysisOptions& opt, Graph* inferred);

std::string_view status_name(NodeStatus s) {
  switch (s) {
    case NodeStatus::costed: return "costed";
    case NodeStatus::folded: return "folded";
    case NodeStatus::not_costed: return "not costed";
  }
  return "?";
}

std::string Coverage::line() const {
  std::string s = fmt::format("{}/{} nodes costed", costed + folded, total);
  if (folded) s += fmt::format(" ({} folded before the run)", folded);
  if (missing.empty()) return s + "; every node costed";
  std::vector<std::pair<std::string, int>> items(missing.begin(), missing.end());
  std::sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::vector<std::string> parts;
  for (auto& [op, k] : items) parts.push_back(fmt::format("{} x{}", op, k));
  return s + "; not costed: " + fmt::format("{}", fmt::join(parts, ", "));
}

std::string Coverage::partial_line() const { return fmt::format("partial: {} of {} nodes costed", costed + folded, total); }

std::string model_display_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  std::string file = slash == std::string::npos ? p : p.substr(slash + 1);
  if (file != "config.json" || slash == std::string::npos || slash == 0) return file;
  size_t parent = p.rfind('/', slash - 1);
  return p.substr(parent == std::string::npos ? 0 : parent + 1);
}

MemoryTotal memory_total(int64_t weight_bytes, int64_t kv_cache_bytes, int64_t activation_bytes, int64_t device_bytes) {
  MemoryTotal m{weight_bytes, kv_cache_bytes, activation_bytes, 0, device_bytes, false};
  m.total_bytes = checked_add(checked_add(weight_bytes, kv_cache_bytes, "memory total"), activation_bytes, "memory total");
  m.fits = m.total_bytes <= device_bytes;
  return m;
}

Device resolve_device(const AnalysisOptions& o) { return o.calibrated ? *o.calibrated : find_device(o.device); }

Analysis analyze_graph(Graph g, const AnalysisOptions& opt, Graph* inferred) {
  // Rules report bad input without knowing the file; name it here.
  const std::string source = g.source;
  try {
    return analyze_graph_unnamed(std::move(g), opt, inferred);
  } catch (const InputError& e) {
    std::string what = e.what();
    if (what.rfind(source, 0) == 0) throw;
    throw InputError(source + ": " + what);
  }
}

Analysis analyze_graph_unnamed(Graph g, const AnalysisOptions& opt, Graph* inferred) {
  const RuleRegistry& rules = builtin_rules();
  Analysis a;
  a.device = resolve_device(opt);
  if (!opt.calibrated) a.device_requested = opt.device;
  InferenceResult inf = infer_shapes(g, rules, foreign_node_shapes);
  mark_quantized_weights(g);
  std::optional<DType> storage = opt.precision ? std::optional<DType>(storage_dtype(*opt.precision)) : std::nullopt;

  a.model = g.source;
  a.model_name = model_display_name(g.source);
  a.producer = g.producer;
  a.opset = g.default_opset();
  a.bound_dims = g.bound_dims;
  a.notes = g.notes;
  for (int t : g.inputs) a.inputs.push_back({g.tensors[t].name, g.tensors[t].dtype, *g.tensors[t].shape, g.tensors[t].is_kv_cache});
  std::set<DType> file_floats;
  for (const Tensor& t : g.tensors)
    if (is_float(t.dtype) && (t.role == TensorRole::weight || t.role == TensorRole::input)) file_floats.insert(t.dtype);
  std::vector<std::string> names;
  for (DType d : file_floats) names.emplace_back(dtype_name(d));
  a.dtype_label = opt.precision ? fmt::format("{} (--dtype)", precision_name(*opt.precision))
                                : fmt::format("as in the file ({})", fmt::join(names, ", "));

  // BatchNorm running statistics are buffers, not parameters.
  const std::vector<std::vector<int>> origins = weight_origins(g, inf.folded);
  std::set<int> buffers;
  for (const Node& n : g.nodes)
    if (n.op_type == "BatchNormalization" && n.domain.empty())
      for (size_t i : {3u, 4u})
        if (n.input(i) >= 0)
          for (int o : origins[n.input(i)]) buffers.insert(o);

  std::vector<bool> claimed(g.tensors.size(), false), is_view(g.nodes.size(), false);
  std::map<std::string, OpTypeSummary> by_op;
  std::map<std::string, double> by_family;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    NodeResult r;
    r.index = static_cast<int>(i);
    r.name = n.name;
    if (!n.module_scopes.empty()) r.module = n.module_scopes.back().first;
    // The dynamo exporter names nodes by op and a counter (node_MatMul_36); its module path says
    // where they are, as a TorchScript export's names do: "m.transformer.h.0.attn/MatMul_36".
    if (!r.module.empty() && n.name.rfind("node_", 0) == 0) r.name = r.module + "/" + n.name.substr(5);
    r.op = n.display_op();
    join_shapes(g, n.inputs, r.input_shapes);
    join_shapes(g, n.outputs, r.output_shapes);
    const OpRule* rule = rules.find(n.domain, n.op_type);
    if (rule) r.family = rule->family;
    is_view[i] = rule && rule->family == OpFamily::view;
    r.precision = node_precision(g, n, opt.precision);
    if (rule) {
      Precision p = math_precision(r.precision, rule->family == OpFamily::conv, rule->family == OpFamily::gemm,
                                   opt.math, a.device.tensor_flops.count("tf32") > 0);
      a.tf32_nodes += p != r.precision;
      r.precision = p;
    }
    if (inf.folded[i]) {
      r.status = NodeStatus::folded;
    } else if (!inf.unresolved[i].empty() || !rule) {
      r.status = NodeStatus::not_costed;
      r.reason = !inf.unresolved[i].empty() ? inf.unresolved[i] : "no rooflens rule for this op";
    } else {
      bool inputs_known = true;
      for (int t : n.inputs)
        if (t >= 0 && !g.tensors[t].shape) inputs_known = false;
      if (!inputs_known) {
        r.status = NodeStatus::not_costed;
        r.reason = "an input shape is unknown";
      } else {
        CostContext ctx(g, n, storage);
        r.cost = rule->cost(ctx);
        r.status = NodeStatus::costed;
        r.roof = place_on_roofline(r.cost, r.precision, a.device);
      }
    }
    if (r.status == NodeStatus::costed) {
      for (int t : n.inputs) {
        if (t < 0 || !g.tensors[t].is_static) continue;
        for (int o : origins[t]) {
          if (claimed[o]) continue;
          claimed[o] = true;
          if (!buffers.count(o) && g.tensors[o].is_param) r.params += g.tensors[o].elements();
        }
      }
      Totals& T = a.totals;
      T.flops = checked_add(T.flops, r.cost.flops, "total FLOPs");
      T.macs = checked_add(T.macs, r.cost.macs.value_or(0), "total MACs");
      T.dense_flops = checked_add(T.dense_flops, r.cost.dense_flops.value_or(r.cost.flops), "total FLOPs");
      T.read_act = checked_add(T.read_act, r.cost.read_act, "total bytes");
      T.read_weight = checked_add(T.read_weight, r.cost.read_weight, "total bytes");
      T.written = checked_add(T.written, r.cost.written, "total bytes");
      T.predicted_s += r.roof.predicted;
      if (r.roof.predicted > 0 && r.roof.bound != Bound::communication) ++T.prediction_sources[std::string(source_name(r.roof.source))];
      OpTypeSummary& s = by_op[r.op];
      s.op = r.op;
      ++s.count;
      s.predicted_s += r.roof.predicted;
      s.flops += r.cost.flops;
      s.bytes += r.cost.bytes();
      by_family[std::string(family_name(*r.family))] += r.roof.predicted;
    }
    ++a.coverage.total;
    if (r.status == NodeStatus::costed) ++a.coverage.costed;
    else if (r.status == NodeStatus::folded) ++a.coverage.folded;
    else {
      ++a.coverage.not_costed;
      ++a.coverage.missing[r.op];
    }
    a.nodes.push_back(std::move(r));
  }
  if (opt.strict && a.coverage.not_costed > 0)
    throw InputError(fmt::format("{}: --strict: {}", g.source, a.coverage.line()));

  Totals& T = a.totals;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    if (x.role == TensorRole::weight) {
      if (x.is_param) (buffers.count(static_cast<int>(t)) ? T.buffers : T.params) += x.elements();
      T.weight_bytes = checked_add(T.weight_bytes, storage_bytes(storage && is_float(x.dtype) ? *storage : x.dtype, x.elements()));
    } else if (x.role == TensorRole::constant) {
      ++T.constants;
      T.constant_bytes += storage_bytes(x.dtype, x.elements());
    }
  }
  if (!a.inputs.empty() && !a.inputs[0].shape.empty()) {
    T.batch = a.inputs[0].shape[0];
    T.batch_source = fmt::format("dim 0 of input '{}'", a.inputs[0].name);
  }
  T.throughput = T.predicted_s > 0 ? static_cast<double>(T.batch) / T.predicted_s : 0;

  a.math = opt.math;
  if (a.tf32_nodes > 0)
    a.dtype_label += fmt::format("; {} fp32 {} on TF32 (--math {}{})", a.tf32_nodes,
                                 opt.math == MathMode::tf32 ? "convolutions and matmuls" : "convolutions",
                                 math_mode_name(opt.math), opt.math == MathMode::tf32_conv ? ", PyTorch's default" : "");

  a.memory = plan_memory(g, is_view, storage);
  a.memory_total = memory_total(T.weight_bytes, 0, a.memory.peak_bytes, a.device.memory_bytes);
  if (a.memory.peak_node >= 0) a.peak_node_name = g.nodes[a.memory.peak_node].name;
  for (const LiveTensor& lt : a.memory.live_at_peak) a.peak_tensor_names.push_back(g.tensors[lt.tensor].name);
  for (auto& [k, v] : by_op) a.by_op.push_back(v);
  std::sort(a.by_op.begin(), a.by_op.end(), [](auto& x, auto& y) { return x.predicted_s > y.predicted_s; });
  for (auto& [k, v] : by_family) a.by_family.emplace_back(k, v);
  std::sort(a.by_family.begin(), a.by_family.end(), [](auto& x, auto& y) { return x.second > y.second; });
  if (inferred) *inferred = std::move(g);
  return a;
}

Analysis analyze_onnx(const std::string& path, const LoadOptions& load, const AnalysisOptions& options, Graph* inferred) {
  resolve_device(options);  // a bad --device fails before the model is read
  return analyze_graph(load_onnx(path, load), options, inferred);
}

}  // namespace rooflens
