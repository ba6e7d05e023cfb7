#include "analyzer/analysis/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyzer/analysis/qdq_fusion.hpp"
#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/ops/rule_registry.hpp"
#include "analyzer/ops/shape_inference.hpp"

namespace rooflens {
namespace {

// The precision a node computes in: --dtype if given, else its first float operand's dtype.
Precision node_precision(const Graph& g, const Node& n, const std::optional<Precision>& forced) {
  if (forced) return *forced;
  if (int t = n.input(0);
      t >= 0 && (g.tensors[t].dtype == DType::i8 || g.tensors[t].dtype == DType::u8))
    return Precision::int8;
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
// the weight inputs of the quantized ops are parameters, in their stored dtype; packed 4-bit
// weights count the values they hold. Scales and zero points (even per-channel float ones) are
// not parameters.
void mark_quantized_weights(Graph& g) {
  static const std::map<std::string, std::vector<size_t>> weight_inputs{{"QLinearConv", {3, 8}},
                                                                        {"QLinearMatMul", {3}},
                                                                        {"ConvInteger", {1}},
                                                                        {"MatMulInteger", {1}},
                                                                        {"DequantizeLinear", {0}}};
  static const std::map<std::string, std::vector<size_t>> scale_inputs{
      {"QLinearConv", {1, 2, 4, 5, 6, 7}},
      {"QLinearMatMul", {1, 2, 4, 5, 6, 7}},
      {"ConvInteger", {2, 3}},
      {"MatMulInteger", {2, 3}},
      {"DequantizeLinear", {1, 2}},
      {"QuantizeLinear", {1, 2}}};
  auto not_params = [&](const Node& n, std::initializer_list<size_t> inputs) {
    for (size_t i : inputs)
      if (int t = n.input(i); t >= 0 && g.tensors[t].producer < 0) g.tensors[t].is_param = false;
  };
  for (const Node& n : g.nodes) {
    if (n.domain == "com.microsoft") {
      // 4-bit weights packed into bytes: the parameters are the values they hold.
      bool nbits = n.op_type == "MatMulNBits", gather = n.op_type == "GatherBlockQuantized";
      int t = n.input(nbits ? 1 : 0);
      if ((nbits || gather) && t >= 0 && g.tensors[t].producer < 0 && g.tensors[t].shape &&
          !g.tensors[t].shape->empty()) {
        Tensor& w = g.tensors[t];
        w.role = TensorRole::weight;
        if (nbits) {
          w.param_values = checked_mul(n.attr_int("N", 0), n.attr_int("K", 0), "MatMulNBits");
        } else if (w.dtype == DType::u8) {
          w.param_values =
              checked_mul(w.elements(), 8 / std::max<int64_t>(1, n.attr_int("bits", 4)),
                          "GatherBlockQuantized");
        }
        not_params(n, {2, 3});  // scales, zero points
      }
      continue;
    }
    if (!n.domain.empty()) continue;
    if (auto it = weight_inputs.find(n.op_type); it != weight_inputs.end())
      for (size_t i : it->second) {
        int t = n.input(i);
        if (t < 0) continue;
        Tensor& x = g.tensors[t];
        if (x.role == TensorRole::constant && x.producer < 0 && !is_float(x.dtype) && x.shape &&
            !x.shape->empty())
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
    case NodeStatus::costed:
      return "costed";
    case NodeStatus::folded:
      return "folded";
    case NodeStatus::fused:
      return "fused";
    case NodeStatus::not_costed:
      return "not costed";
  }
  return "?";
}

std::string Coverage::line() const {
  std::string s = fmt::format("{}/{} nodes costed", costed + folded + fused, total);
  if (folded) s += fmt::format(" ({} folded before the run)", folded);
  if (fused) s += fmt::format(" ({} quantize/dequantize fused into quantized kernels)", fused);
  if (missing.empty()) return s + "; every node costed";
  std::vector<std::pair<std::string, int>> items(missing.begin(), missing.end());
  std::sort(items.begin(), items.end(), [](auto& a, auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> parts;
  for (auto& [op, k] : items) parts.push_back(fmt::format("{} x{}", op, k));
  return s + "; not costed: " + fmt::format("{}", fmt::join(parts, ", "));
}

std::string Coverage::partial_line() const {
  return fmt::format("partial: {} of {} nodes costed", costed + folded + fused, total);
}

std::string model_display_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  std::string file = slash == std::string::npos ? p : p.substr(slash + 1);
  if (file != "config.json" || slash == std::string::npos || slash == 0) return file;
  size_t parent = p.rfind('/', slash - 1);
  return p.substr(parent == std::string::npos ? 0 : parent + 1);
}

MemoryTotal memory_total(int64_t weight_bytes, int64_t kv_cache_bytes, int64_t activation_bytes,
                         int64_t device_bytes) {
  MemoryTotal m{weight_bytes, kv_cache_bytes, activation_bytes, 0, device_bytes, false};
  m.total_bytes = checked_add(checked_add(weight_bytes, kv_cache_bytes, "memory total"),
                              activation_bytes, "memory total");
  m.fits = m.total_bytes <= device_bytes;
  return m;
}

Device resolve_device(const AnalysisOptions& o) {
  return o.calibrated ? *o.calibrated : find_device(o.device);
}

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

namespace {

// One graph's analysis, step by step: the model's description, each node priced, the weights
// counted, then the memory plan and the summaries.
class GraphAnalysis {
 public:
  GraphAnalysis(Graph& g, const AnalysisOptions& opt) : g_(g), opt_(opt), rules_(builtin_rules()) {
    a_.device = resolve_device(opt_);  // a bad --device before any work on the graph
    if (!opt_.calibrated) a_.device_requested = opt_.device;
    inf_ = infer_shapes(g_, rules_, foreign_node_shapes);
    mark_quantized_weights(g_);
    if (opt.precision) storage_ = storage_dtype(*opt.precision);
    origins_ = weight_origins(g_, inf_.folded);
    qdq_ = find_qdq_fusion(g_);
    // BatchNorm running statistics are buffers, not parameters.
    for (const Node& n : g_.nodes)
      if (n.op_type == "BatchNormalization" && n.domain.empty())
        for (size_t i : {3u, 4u})
          if (n.input(i) >= 0)
            for (int o : origins_[n.input(i)]) buffers_.insert(o);
    claimed_.assign(g_.tensors.size(), false);
    is_view_.assign(g_.nodes.size(), false);
  }

  Analysis run() {
    describe_model();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      NodeResult r = price_node(i);
      if (r.status == NodeStatus::costed) add_to_totals(g_.nodes[i], r);
      count_coverage(r);
      a_.nodes.push_back(std::move(r));
    }
    if (opt_.strict && a_.coverage.not_costed > 0)
      throw InputError(fmt::format("{}: --strict: {}", g_.source, a_.coverage.line()));
    count_weights();
    finish();
    return std::move(a_);
  }

 private:
  void describe_model() {
    a_.model = g_.source;
    a_.model_name = model_display_name(g_.source);
    a_.producer = g_.producer;
    a_.opset = g_.default_opset();
    a_.bound_dims = g_.bound_dims;
    a_.notes = g_.notes;
    for (int t : g_.inputs)
      a_.inputs.push_back({g_.tensors[t].name, g_.tensors[t].dtype, *g_.tensors[t].shape,
                           g_.tensors[t].is_kv_cache});
    std::set<DType> file_floats;
    for (const Tensor& t : g_.tensors)
      if (is_float(t.dtype) && (t.role == TensorRole::weight || t.role == TensorRole::input))
        file_floats.insert(t.dtype);
    std::vector<std::string> names;
    for (DType d : file_floats) names.emplace_back(dtype_name(d));
    a_.dtype_label = opt_.precision ? fmt::format("{} (--dtype)", precision_name(*opt_.precision))
                                    : fmt::format("as in the file ({})", fmt::join(names, ", "));
  }

  // Its rule's cost and roofline placement, or why it has none.
  NodeResult price_node(size_t i) {
    const Node& n = g_.nodes[i];
    NodeResult r;
    r.index = static_cast<int>(i);
    r.name = n.name;
    if (!n.module_scopes.empty()) r.module = n.module_scopes.back().first;
    // The dynamo exporter names nodes by op and a counter (node_MatMul_36); its module path says
    // where they are, as a TorchScript export's names do: "m.transformer.h.0.attn/MatMul_36".
    if (!r.module.empty() && n.name.rfind("node_", 0) == 0)
      r.name = r.module + "/" + n.name.substr(5);
    r.op = n.display_op();
    join_shapes(g_, n.inputs, r.input_shapes);
    join_shapes(g_, n.outputs, r.output_shapes);
    const OpRule* rule = rules_.find(n.domain, n.op_type);
    if (rule) r.family = rule->family;
    is_view_[i] = rule && rule->family == OpFamily::view;
    r.precision = node_precision(g_, n, opt_.precision);
    if (qdq_.quantized[i]) {
      r.precision = *qdq_.quantized[i];  // QDQ around it: the int8/fp8 kernel a runtime runs
      ++quantized_kernels_[{*qdq_.quantized[i], qdq_.tensor_kernel[i]}];
    } else if (rule) {
      Precision p = math_precision(r.precision, rule->family == OpFamily::conv,
                                   rule->family == OpFamily::gemm, opt_.math,
                                   a_.device.tensor_flops.count("tf32") > 0);
      a_.tf32_nodes += p != r.precision;
      r.precision = p;
    }
    bool inputs_known = std::all_of(n.inputs.begin(), n.inputs.end(),
                                    [&](int t) { return t < 0 || g_.tensors[t].shape; });
    if (inf_.folded[i]) {
      r.status = NodeStatus::folded;
    } else if (!qdq_.fused[i].empty() && rule) {
      r.status = NodeStatus::fused;
      r.reason = qdq_.fused[i];
    } else if (!inf_.unresolved[i].empty() || !rule) {
      r.status = NodeStatus::not_costed;
      r.reason = !inf_.unresolved[i].empty() ? inf_.unresolved[i] : "no rooflens rule for this op";
    } else if (!inputs_known) {
      r.status = NodeStatus::not_costed;
      r.reason = "an input shape is unknown";
    } else {
      CostContext ctx(g_, n, storage_);
      r.cost = rule->cost(ctx);
      if (qdq_.quantized[i]) {
        QdqBytes b = quantized_bytes(g_, n, qdq_, [&](const Tensor& t) { return ctx.bytes_of(t); });
        r.cost.read_act = b.read_act;
        r.cost.read_weight = b.read_weight;
        r.cost.written = b.written;
      }
      r.status = NodeStatus::costed;
      r.roof = place_on_roofline(r.cost, r.precision, a_.device);
    }
    return r;
  }

  // A costed node: the parameters it reads first, and its share of the totals and summaries.
  void add_to_totals(const Node& n, NodeResult& r) {
    for (int t : n.inputs) {
      if (t < 0 || !g_.tensors[t].is_static) continue;
      for (int o : origins_[t]) {
        if (claimed_[o]) continue;
        claimed_[o] = true;
        if (!buffers_.count(o) && g_.tensors[o].is_param) r.params += g_.tensors[o].params();
      }
    }
    Totals& T = a_.totals;
    T.flops = checked_add(T.flops, r.cost.flops, "total FLOPs");
    T.macs = checked_add(T.macs, r.cost.macs.value_or(0), "total MACs");
    T.dense_flops =
        checked_add(T.dense_flops, r.cost.dense_flops.value_or(r.cost.flops), "total FLOPs");
    T.read_act = checked_add(T.read_act, r.cost.read_act, "total bytes");
    T.read_weight = checked_add(T.read_weight, r.cost.read_weight, "total bytes");
    T.written = checked_add(T.written, r.cost.written, "total bytes");
    T.predicted_s += r.roof.predicted;
    if (r.roof.predicted > 0 && r.roof.bound != Bound::communication)
      ++T.prediction_sources[std::string(source_name(r.roof.source))];
    OpTypeSummary& s = by_op_[r.op];
    s.op = r.op;
    ++s.count;
    s.predicted_s += r.roof.predicted;
    s.flops += r.cost.flops;
    s.bytes += r.cost.bytes();
    by_family_[std::string(family_name(*r.family))] += r.roof.predicted;
  }

  void count_coverage(const NodeResult& r) {
    Coverage& c = a_.coverage;
    ++c.total;
    if (r.status == NodeStatus::costed)
      ++c.costed;
    else if (r.status == NodeStatus::folded)
      ++c.folded;
    else if (r.status == NodeStatus::fused)
      ++c.fused;
    else {
      ++c.not_costed;
      ++c.missing[r.op];
    }
  }

  // Parameters, buffers and their bytes in the run's dtype; constants; the batch.
  void count_weights() {
    Totals& T = a_.totals;
    for (size_t t = 0; t < g_.tensors.size(); ++t) {
      const Tensor& x = g_.tensors[t];
      if (x.role == TensorRole::weight) {
        if (x.is_param) (buffers_.count(static_cast<int>(t)) ? T.buffers : T.params) += x.params();
        T.weight_bytes = checked_add(
            T.weight_bytes,
            storage_bytes(storage_ && is_float(x.dtype) ? *storage_ : x.dtype, x.elements()));
      } else if (x.role == TensorRole::constant) {
        ++T.constants;
        T.constant_bytes += storage_bytes(x.dtype, x.elements());
      }
    }
    if (!a_.inputs.empty() && !a_.inputs[0].shape.empty()) {
      T.batch = a_.inputs[0].shape[0];
      T.batch_source = fmt::format("dim 0 of input '{}'", a_.inputs[0].name);
    }
    double items = opt_.items_per_run.value_or(static_cast<double>(T.batch));
    T.throughput = T.predicted_s > 0 ? items / T.predicted_s : 0;
    T.throughput_unit = opt_.items_unit;
  }

  // The math mode's note, the memory plan, the summaries sorted by time.
  void finish() {
    a_.math = opt_.math;
    for (Precision p : {Precision::int8, Precision::fp8}) {
      int tensor = quantized_kernels_[{p, true}], other = quantized_kernels_[{p, false}];
      std::vector<std::string> parts;
      if (tensor) parts.push_back(fmt::format("{} Conv/MatMul/Gemm", tensor));
      if (other) parts.push_back(fmt::format("{} other op{}", other, other == 1 ? "" : "s"));
      if (!parts.empty())
        a_.dtype_label += fmt::format("; {} in QDQ run as {} kernels", fmt::join(parts, " and "),
                                      precision_name(p));
    }
    if (a_.tf32_nodes > 0)
      a_.dtype_label += fmt::format(
          "; {} fp32 {} on TF32 (--math {}{})", a_.tf32_nodes,
          opt_.math == MathMode::tf32 ? "convolutions and matmuls" : "convolutions",
          math_mode_name(opt_.math), opt_.math == MathMode::tf32_conv ? ", PyTorch's default" : "");
    a_.memory = plan_memory(g_, is_view_, storage_);
    a_.memory_total =
        memory_total(a_.totals.weight_bytes, 0, a_.memory.peak_bytes, a_.device.memory_bytes);
    if (a_.memory.peak_node >= 0) a_.peak_node_name = g_.nodes[a_.memory.peak_node].name;
    for (const LiveTensor& lt : a_.memory.live_at_peak)
      a_.peak_tensor_names.push_back(g_.tensors[lt.tensor].name);
    for (auto& [k, v] : by_op_) a_.by_op.push_back(v);
    std::sort(a_.by_op.begin(), a_.by_op.end(),
              [](auto& x, auto& y) { return x.predicted_s > y.predicted_s; });
    for (auto& [k, v] : by_family_) a_.by_family.emplace_back(k, v);
    std::sort(a_.by_family.begin(), a_.by_family.end(),
              [](auto& x, auto& y) { return x.second > y.second; });
  }

  Graph& g_;
  const AnalysisOptions& opt_;
  const RuleRegistry& rules_;
  InferenceResult inf_;
  std::optional<DType> storage_;
  std::vector<std::vector<int>> origins_;
  QdqFusion qdq_;
  // Nodes run on quantized tensors, by precision and whether on the tensor roof (QDQ).
  std::map<std::pair<Precision, bool>, int> quantized_kernels_;
  std::set<int> buffers_;
  std::vector<bool> claimed_, is_view_;
  std::map<std::string, OpTypeSummary> by_op_;
  std::map<std::string, double> by_family_;
  Analysis a_;
};

}  // namespace

Analysis analyze_graph_unnamed(Graph g, const AnalysisOptions& opt, Graph* inferred) {
  Analysis a = GraphAnalysis(g, opt).run();
  if (inferred) *inferred = std::move(g);
  return a;
}

}  // namespace rooflens
