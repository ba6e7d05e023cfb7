#include "analyzer/transformer_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analyzer/checked.hpp"
#include "analyzer/errors.hpp"
#include "analyzer/rule_registry.hpp"

namespace rooflens {
namespace {

struct Lowered {
  Analysis analysis;
  Graph graph;  // with shapes bound
  LoweredModel model;
};

Lowered lower_and_analyze(const TransformerConfig& c, const LoweringOptions& lo, const TransformerOptions& o) {
  Lowered l;
  l.model = lower_transformer(c, lo);
  AnalysisOptions ao;
  ao.device = o.device;
  ao.calibrated = o.calibrated;
  ao.strict = o.strict;
  l.analysis = analyze_graph(std::move(l.model.graph), ao, &l.graph);
  return l;
}

// Parameters an MoE layer does not use for a given token: (E - k)/E of its expert weights.
int64_t inactive_expert_params(const Graph& g) {
  int64_t inactive = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "MoE") continue;
    int64_t k = n.attr_int("k", 1);
    for (size_t i : {2u, 4u, 6u}) {
      int t = n.input(i);
      if (t < 0 || !g.tensors[t].is_param) continue;
      int64_t experts = (*g.tensors[t].shape)[0];
      inactive += g.tensors[t].elements() / experts * (experts - k);
    }
  }
  return inactive;
}

// Re-costs one decode step at a new context. Only the nodes that read the KV cache (and what
// their changed shapes reach) change; every layer attends alike, so layer 0 is re-costed and
// multiplied by the layer count.
class DecodeSweep {
 public:
  DecodeSweep(Lowered& step, const Device& device) : l_(step), device_(device) {
    layers_ = 0;
    for (int layer : l_.model.layer_of_node) layers_ = std::max<int64_t>(layers_, layer + 1);
    for (auto [t, axis] : l_.model.cache_inputs)
      if (l_.graph.tensors[t].consumers.size() && layer_of(l_.graph.tensors[t].consumers[0]) == 0) cache0_.emplace_back(t, axis);
    for (size_t i = 0; i < l_.graph.nodes.size(); ++i)
      if (layer_of(static_cast<int>(i)) == 0) layer0_.push_back(static_cast<int>(i));
    double context_part = 0;
    for (int i : layer0_) context_part += l_.analysis.nodes[i].roof.predicted;
    base_s_ = l_.analysis.totals.predicted_s - context_part * static_cast<double>(layers_);
  }

  // Seconds of one decode step with `cached` tokens in the cache.
  double step_seconds(int64_t cached) {
    std::set<int> changed;
    for (auto [t, axis] : cache0_) {
      (*l_.graph.tensors[t].shape)[axis] = cached;
      changed.insert(t);
    }
    const RuleRegistry& rules = builtin_rules();
    double layer_s = 0;
    for (int i : layer0_) {
      Node& n = l_.graph.nodes[i];
      const NodeResult& r = l_.analysis.nodes[i];
      bool touched = false;
      for (int t : n.inputs) touched = touched || (t >= 0 && changed.count(t));
      if (!touched || r.status != NodeStatus::costed) {
        layer_s += r.roof.predicted;
        continue;
      }
      const OpRule* rule = rules.find(n.domain, n.op_type);
      std::vector<Shape> before;
      for (int t : n.outputs) before.push_back(t >= 0 ? *l_.graph.tensors[t].shape : Shape{});
      InferContext ictx(l_.graph, n);
      rule->infer(ictx);
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] >= 0 && *l_.graph.tensors[n.outputs[k]].shape != before[k]) changed.insert(n.outputs[k]);
      CostContext cctx(l_.graph, n, std::nullopt);
      layer_s += place_on_roofline(rule->cost(cctx), r.precision, device_).predicted;
    }
    return base_s_ + layer_s * static_cast<double>(layers_);
  }

 private:
  int layer_of(int node) const { return l_.model.layer_of_node[node]; }

  Lowered& l_;
  const Device& device_;
  int64_t layers_ = 0;
  double base_s_ = 0;
  std::vector<std::pair<int, size_t>> cache0_;
  std::vector<int> layer0_;
};

int64_t sequence_tokens(const TransformerOptions& o) {
  switch (o.workload) {
    case Workload::prefill: return o.lowering.seq;
    case Workload::decode: return o.lowering.context + 1;
    case Workload::generate: return o.prompt + o.gen;
  }
  return 0;
}

MemoryFit fit_memory(const TransformerConfig& c, const TransformerOptions& o, const Analysis& a, int64_t activation_peak,
                     int64_t kv_per_token) {
  MemoryFit m;
  int64_t batch = o.lowering.batch;
  m.cached_tokens = c.sliding_window > 0 ? std::min(sequence_tokens(o), c.sliding_window) : sequence_tokens(o);
  int64_t kv_per_seq = checked_mul(kv_per_token, m.cached_tokens, "KV cache size");
  m.weight_bytes = a.totals.weight_bytes;
  m.kv_cache_bytes = checked_mul(kv_per_seq, batch, "KV cache size");
  m.activation_bytes = activation_peak;
  MemoryTotal total = memory_total(m.weight_bytes, m.kv_cache_bytes, m.activation_bytes, a.device.memory_bytes);
  m.total_bytes = total.total_bytes;
  m.device_bytes = total.device_bytes;
  m.fits = total.fits;
  int64_t free_bytes = m.device_bytes - m.weight_bytes;
  // Activations grow with the batch; the KV cache with batch and context.
  int64_t per_seq = kv_per_seq + ceil_div(activation_peak, batch);
  m.max_batch = free_bytes > 0 && per_seq > 0 ? free_bytes / per_seq : 0;
  int64_t for_kv = free_bytes - activation_peak;
  if (c.sliding_window > 0 && for_kv >= checked_mul(checked_mul(kv_per_token, c.sliding_window), batch)) m.max_context = -1;
  else m.max_context = for_kv > 0 && kv_per_token > 0 ? for_kv / (kv_per_token * batch) : 0;
  return m;
}

}  // namespace

std::string_view workload_name(Workload w) {
  switch (w) {
    case Workload::prefill: return "prefill";
    case Workload::decode: return "decode";
    case Workload::generate: return "generate";
  }
  return "?";
}

Analysis analyze_transformer(const TransformerConfig& c, const TransformerOptions& o, Graph* inferred) {
  const Device device = o.calibrated ? *o.calibrated : find_device(o.device);
  LoweringOptions lo = o.lowering;
  if (o.workload == Workload::generate) {
    if (o.prompt <= 0 || o.gen <= 0) throw InputError(fmt::format("{}: --prompt and --gen must be positive", c.path));
    lo.phase = Phase::prefill;
    lo.seq = o.prompt;
  } else {
    lo.phase = o.workload == Workload::prefill ? Phase::prefill : Phase::decode;
  }
  Lowered main = lower_and_analyze(c, lo, o);
  auto summary = std::make_shared<TransformerSummary>();
  summary->config = c;
  summary->workload = std::string(workload_name(o.workload));
  summary->lowering = lo;
  summary->params_per_gpu = main.analysis.totals.params;
  if (lo.tp > 1) {
    LoweringOptions whole = lo;
    whole.tp = 1;
    whole.batch = 1;
    whole.seq = 1;
    whole.context = 0;
    Lowered one = lower_and_analyze(c, whole, o);
    summary->params_total = one.analysis.totals.params;
    summary->params_active = one.analysis.totals.params - inactive_expert_params(one.graph);
  } else {
    summary->params_total = main.analysis.totals.params;
    summary->params_active = main.analysis.totals.params - inactive_expert_params(main.graph);
  }
  summary->kv_bytes_per_token = kv_cache_bytes_per_token(c, lo);
  for (const NodeResult& n : main.analysis.nodes)
    if (n.family == OpFamily::communication && n.status == NodeStatus::costed) {
      ++summary->allreduces;
      summary->allreduce_s += n.roof.predicted;
    }
  int64_t activation_peak = main.analysis.memory.peak_bytes;

  if (o.workload == Workload::generate) {
    LoweringOptions dl = lo;
    dl.phase = Phase::decode;
    dl.context = o.prompt;
    Lowered step = lower_and_analyze(c, dl, o);
    activation_peak = std::max(activation_peak, step.analysis.memory.peak_bytes);
    GenerationSweep g;
    g.prompt = o.prompt;
    g.gen = o.gen;
    g.ttft_s = main.analysis.totals.predicted_s;
    DecodeSweep sweep(step, device);
    double decode_total = 0;
    for (int64_t i = 1; i < o.gen; ++i) {
      double s = sweep.step_seconds(cached_tokens(c, o.prompt + i - 1));
      g.step_s.push_back(s);
      decode_total += s;
    }
    g.tpot_first_s = g.step_s.empty() ? 0 : g.step_s.front();
    g.tpot_last_s = g.step_s.empty() ? 0 : g.step_s.back();
    g.total_s = g.ttft_s + decode_total;
    g.tokens_per_s = static_cast<double>(lo.batch * o.gen) / g.total_s;
    summary->generation = std::move(g);
    summary->decode_step = std::make_shared<Analysis>(std::move(step.analysis));
  }
  summary->kv_bytes_per_sequence = checked_mul(summary->kv_bytes_per_token,
                                               c.sliding_window > 0 ? std::min(sequence_tokens(o), c.sliding_window) : sequence_tokens(o));
  summary->kv_bytes_batch = checked_mul(summary->kv_bytes_per_sequence, lo.batch);
  summary->memory = fit_memory(c, o, main.analysis, activation_peak, summary->kv_bytes_per_token);
  const MemoryFit& fit = summary->memory;
  main.analysis.memory_total = memory_total(fit.weight_bytes, fit.kv_cache_bytes, fit.activation_bytes, fit.device_bytes);
  // Throughput in tokens: a prefill's prompt tokens, or a decode step's one token a sequence.
  Totals& totals = main.analysis.totals;
  double tokens = static_cast<double>(lo.batch) * static_cast<double>(lo.phase == Phase::prefill ? lo.seq : 1);
  totals.throughput = totals.predicted_s > 0 ? tokens / totals.predicted_s : 0;
  totals.throughput_unit = "tokens/s";
  main.analysis.transformer = summary;
  if (inferred) *inferred = std::move(main.graph);
  return std::move(main.analysis);
}

}  // namespace rooflens
