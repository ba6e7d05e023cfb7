#include "analyzer/transformers/analyze_transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/ops/rule_registry.hpp"
#include "analyzer/transformers/checkpoint_index.hpp"

namespace rooflens {
namespace {

struct Lowered {
  Analysis analysis;
  Graph graph;  // with shapes bound
  LoweredModel model;
};

Lowered lower_and_analyze(const TransformerConfig& c, const LoweringOptions& lo,
                          const TransformerOptions& o) {
  Lowered l;
  l.model = lower_transformer(c, lo);
  AnalysisOptions ao;
  ao.device = o.device;
  ao.calibrated = o.calibrated;
  ao.strict = o.strict;
  // Throughput in tokens: a prefill's prompt tokens, or a decode step's one token a sequence.
  ao.items_per_run =
      static_cast<double>(lo.batch) * static_cast<double>(lo.phase == Phase::prefill ? lo.seq : 1);
  ao.items_unit = "tokens/s";
  l.analysis = analyze_graph(std::move(l.model.graph), ao, &l.graph);
  return l;
}

// Parameters an MoE layer does not use for a given token: (E - k)/E of its expert weights and
// biases.
int64_t inactive_expert_params(const Graph& g) {
  int64_t inactive = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "MoE") continue;
    int64_t k = n.attr_int("k", 1);
    for (size_t i : {2u, 3u, 4u, 5u, 6u, 7u}) {
      int t = n.input(i);
      if (t < 0 || !g.tensors[t].is_param) continue;
      int64_t experts = (*g.tensors[t].shape)[0];
      inactive += g.tensors[t].elements() / experts * (experts - k);
    }
  }
  return inactive;
}

// Re-costs one decode step at a new context. Only the nodes that read the KV cache (and what
// their changed shapes reach) change. Layers that are alike (same mixer, window, chunk, RoPE,
// MLP or experts) attend alike: one of each kind is re-costed and multiplied by their count.
class DecodeSweep {
 public:
  DecodeSweep(Lowered& step, const TransformerConfig& c, const Device& device)
      : l_(step), c_(c), device_(device) {
    std::map<std::tuple<int, int64_t, int64_t, bool, bool, bool>, size_t> kinds;
    for (int64_t i = 0; i < c.layers; ++i) {
      const LayerSpec& s = c.layer_specs[static_cast<size_t>(i)];
      auto key =
          std::make_tuple(static_cast<int>(s.mixer), s.window, s.chunk, s.rope, s.moe, s.mlp);
      auto [it, fresh] = kinds.emplace(key, groups_.size());
      if (fresh) groups_.push_back(Group{static_cast<int>(i), 0, {}, {}});
      ++groups_[it->second].count;
    }
    std::map<int, size_t> group_of_rep;
    for (size_t g = 0; g < groups_.size(); ++g) group_of_rep[groups_[g].rep] = g;
    for (size_t i = 0; i < l_.graph.nodes.size(); ++i)
      if (auto it = group_of_rep.find(layer_of(static_cast<int>(i))); it != group_of_rep.end())
        groups_[it->second].nodes.push_back(static_cast<int>(i));
    for (auto [t, axis] : l_.model.cache_inputs) {
      const auto& users = l_.graph.tensors[t].consumers;
      if (users.empty()) continue;
      if (auto it = group_of_rep.find(layer_of(users[0])); it != group_of_rep.end())
        groups_[it->second].cache.emplace_back(t, axis);
    }
    base_s_ = l_.analysis.totals.predicted_s;
    for (const Group& g : groups_) {
      double layer_s = 0;
      for (int i : g.nodes) layer_s += l_.analysis.nodes[i].roof.predicted;
      base_s_ -= layer_s * static_cast<double>(g.count);
    }
  }

  // Seconds of one decode step after `seen` tokens (the new token attends to what is cached).
  double step_seconds(int64_t seen) {
    double total = base_s_;
    for (const Group& g : groups_)
      total += layer_seconds(g, cached_tokens(c_, g.rep, seen)) * static_cast<double>(g.count);
    return total;
  }

 private:
  struct Group {
    int rep;
    int64_t count;
    std::vector<int> nodes;
    std::vector<std::pair<int, size_t>> cache;
  };

  double layer_seconds(const Group& g, int64_t cached) {
    std::set<int> changed;
    for (auto [t, axis] : g.cache) {
      (*l_.graph.tensors[t].shape)[axis] = cached;
      changed.insert(t);
    }
    const RuleRegistry& rules = builtin_rules();
    double layer_s = 0;
    for (int i : g.nodes) {
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
        if (n.outputs[k] >= 0 && *l_.graph.tensors[n.outputs[k]].shape != before[k])
          changed.insert(n.outputs[k]);
      CostContext cctx(l_.graph, n, std::nullopt);
      layer_s += place_on_roofline(rule->cost(cctx), r.precision, device_).predicted;
    }
    return layer_s;
  }

  int layer_of(int node) const { return l_.model.layer_of_node[node]; }

  Lowered& l_;
  const TransformerConfig& c_;
  const Device& device_;
  std::vector<Group> groups_;
  double base_s_ = 0;
};

// Tokens a sequence has seen when the workload ends: the prompt, or the cache plus the new token.
// An encoder-decoder counts its decoder's tokens (the source is the cross cache): its prefill
// ends with the first, a generation with --gen.
int64_t sequence_tokens(const TransformerConfig& c, const TransformerOptions& o) {
  if (c.encdec && o.workload == Workload::prefill) return 1;
  if (c.encdec && o.workload == Workload::generate) return o.gen;
  switch (o.workload) {
    case Workload::prefill:
      return o.lowering.seq;
    case Workload::decode:
      return o.lowering.context + 1;
    case Workload::generate:
      return o.prompt + o.gen;
  }
  return 0;
}

int64_t most_cached(const TransformerConfig& c, int64_t tokens) {
  int64_t most = 0;
  for (int64_t i = 0; i < c.layers; ++i) most = std::max(most, cached_tokens(c, i, tokens));
  return most;
}

MemoryFit fit_memory(const TransformerConfig& c, const TransformerOptions& o,
                     const LoweringOptions& lo, const Analysis& a, int64_t weight_bytes,
                     int64_t activation_peak, std::vector<std::string>& notes) {
  MemoryFit m;
  int64_t batch = lo.batch_per_gpu(), tokens = sequence_tokens(c, o);
  m.cached_tokens = most_cached(c, tokens);
  int64_t kv_per_seq = kv_cache_bytes(c, lo, tokens);
  m.weight_bytes = weight_bytes;
  m.kv_cache_bytes = checked_mul(kv_per_seq, batch, "KV cache size");
  m.activation_bytes = activation_peak;
  MemoryTotal total =
      memory_total(m.weight_bytes, m.kv_cache_bytes, m.activation_bytes, a.device.memory_bytes);
  m.total_bytes = total.total_bytes;
  m.device_bytes = total.device_bytes;
  m.fits = total.fits;
  int64_t free_bytes = m.device_bytes - m.weight_bytes;
  // Activations grow with the batch; the KV cache with batch and context.
  int64_t per_seq = kv_per_seq + ceil_div(activation_peak, batch);
  m.max_batch = free_bytes > 0 && per_seq > 0 ? free_bytes / per_seq : 0;
  int64_t for_kv = free_bytes - activation_peak;
  m.max_context = for_kv > 0 ? longest_context(c, lo, for_kv / batch) : 0;
  m.context_limit = c.context_limit();
  // The remarks on the KV cache's context are an inference's, not a training step's.
  bool remark = !o.training_forward;
  if (m.context_limit > 0 && (m.max_context < 0 || m.max_context > m.context_limit)) {
    if (remark)
      notes.push_back(fmt::format(
          "largest context capped at the model's stated limit {} (memory alone would allow {})",
          m.context_limit, m.max_context < 0 ? std::string("any") : std::to_string(m.max_context)));
    m.max_context = m.context_limit;
  } else if (m.max_context < 0 && remark && c.causal) {  // an encoder keeps no cache at all
    notes.push_back(
        "the cache stops growing (windowed or recurrent layers) and no context limit is stated");
  }
  return m;
}

// The checkpoint's own account of its weights against the lowered model's.
void cross_check(const CheckpointIndex& ck, const TransformerConfig& c, int64_t params,
                 int64_t weight_bytes, std::vector<std::string>& notes) {
  int64_t ck_bytes = ck.total_bytes;
  if (ck.header_elements > 0) {
    double b = 0;
    for (auto& [d, n] : ck.dtype_elements) b += safetensors_dtype_bytes(d) * static_cast<double>(n);
    if (ck.shards_missing == 0) ck_bytes = static_cast<int64_t>(b);
  }
  std::string line = fmt::format("checkpoint: {} tensors", ck.tensors);
  if (ck_bytes > 0) {
    double diff = static_cast<double>(ck_bytes - weight_bytes) / static_cast<double>(ck_bytes);
    line +=
        fmt::format(", {:.3f} GB; rooflens' weights {:.3f} GB", ck_bytes / 1e9, weight_bytes / 1e9);
    line +=
        std::fabs(diff) <= 0.01
            ? " (agree)"
            : fmt::format(" (MISMATCH {:+.1f}%: check the dtype and quantization)", -100 * diff);
  }
  notes.push_back(line);
  if (ck.header_elements > 0 && ck.shards_missing == 0 && !c.quantization) {
    double diff =
        static_cast<double>(ck.header_elements - params) / static_cast<double>(ck.header_elements);
    if (std::fabs(diff) > 0.001)
      notes.push_back(
          fmt::format("checkpoint: {} weight elements, config: {} params (MISMATCH {:+.2f}%)",
                      ck.header_elements, params, -100 * diff));
    std::string dominant;
    int64_t most = 0;
    for (auto& [d, n] : ck.dtype_elements)
      if (n > most) most = n, dominant = d;
    static const std::map<std::string, std::string> names{
        {"BF16", "bfloat16"}, {"F16", "float16"}, {"F32", "float32"}};
    auto it = names.find(dominant);
    if (it != names.end() && !c.dtype.empty() && it->second != c.dtype)
      notes.push_back(
          fmt::format("checkpoint weights are {} but the config's dtype is {} (MISMATCH)",
                      it->second, c.dtype));
  }
  if (ck.shards_missing > 0 && ck.header_elements > 0)
    notes.push_back(
        fmt::format("checkpoint: {} of {} shards present; headers of the present ones read",
                    ck.shards_read, ck.shards_read + ck.shards_missing));
}

// Weight bytes as a checkpoint stores them: the graph's weights without the rope tables.
int64_t checkpoint_bytes(const Graph& g) {
  int64_t total = 0;
  for (const Tensor& t : g.tensors)
    if (t.role == TensorRole::weight && t.name.find(".rotary_emb.") == std::string::npos &&
        t.name.find(".rotary_pos_emb.") == std::string::npos)
      total = checked_add(total, storage_bytes(t.dtype, t.elements()), "weight bytes");
  return total;
}

void check_context(const TransformerConfig& c, const TransformerOptions& o,
                   std::vector<std::string>& notes) {
  int64_t limit = c.context_limit(), tokens = sequence_tokens(c, o);
  if (limit <= 0 || tokens <= limit) return;
  std::string what = c.rope_stated_limit > c.max_positions ? "the rope scaling's stated limit"
                                                           : "max_position_embeddings";
  std::string line =
      fmt::format("{} tokens exceed {} {} ({})", tokens, what, limit,
                  c.positions == PositionKind::learned ? "learned table: costed as if longer"
                                                       : "beyond the trained context");
  if (o.strict) throw InputError(fmt::format("{}: --strict: {}", c.path, line));
  notes.push_back(line);
}

// What the encoder-decoder phases cover, and a source longer than BART's learned table.
void encoder_decoder_notes(const TransformerConfig& c, const TransformerOptions& o,
                           const LoweringOptions& lo, std::vector<std::string>& notes) {
  const EncoderDecoderSpec& e = *c.encdec;
  int64_t source = e.source_tokens(lo.seq);
  if (e.kind == EncoderDecoderKind::whisper)
    notes.push_back(
        fmt::format("Whisper's encoder takes {} mel frames ({} positions after its stride-2 "
                    "convolution); --seq and --prompt do not apply",
                    2 * source, source));
  if (e.kind == EncoderDecoderKind::bart && source > e.source_positions)
    notes.push_back(fmt::format(
        "{} source tokens exceed max_position_embeddings {} (learned table: costed as if longer)",
        source, e.source_positions));
  if (o.workload == Workload::generate) {
    notes.push_back(fmt::format(
        "the encoder once over {} source tokens, then {} decoder tokens: the first with the "
        "prefill (its cross-attention projects the encoder's K/V, cached), each next one over "
        "the decoder tokens before it and the {} cached encoder K/V",
        source, o.gen, source));
    return;
  }
  notes.push_back(lo.phase == Phase::prefill
                      ? fmt::format("encoder over {} source tokens, then the decoder's first token "
                                    "(its cross-attention projects the "
                                    "encoder's K/V, cached for decode)",
                                    source)
                      : fmt::format("one decoder token: self-attention over {} cached tokens, "
                                    "cross-attention over the {} cached "
                                    "encoder K/V",
                                    lo.context, source));
}

std::string weights_label(const LoweringOptions& lo) {
  if (!lo.weights_source.empty()) return lo.weights_source;
  if (lo.quantization) return "quantization (" + lo.quantization->label + ")";
  return fmt::format("{} (the lowering's weights dtype)", dtype_name(lo.weights));
}

}  // namespace

std::string_view workload_name(Workload w) {
  switch (w) {
    case Workload::prefill:
      return "prefill";
    case Workload::decode:
      return "decode";
    case Workload::generate:
      return "generate";
  }
  return "?";
}

namespace {

void check_transformer_options(const TransformerConfig& c, const TransformerOptions& o) {
  if (o.strict && !c.verified)
    throw InputError(
        fmt::format("{}: --strict: model_type {} is not verified (generic decoder lowering)",
                    c.path, c.model_type));
  if (o.strict && c.has_unknown_keys)
    for (const std::string& w : c.warnings)
      if (w.find("not read") != std::string::npos)
        throw InputError(fmt::format("--strict: {}: {}", c.path, w));
}

// The lowering of the workload's main graph: a generation's prompt as a prefill.
LoweringOptions main_lowering(const TransformerConfig& c, const TransformerOptions& o) {
  LoweringOptions lo = o.lowering;
  if (c.encdec && c.encdec->kind == EncoderDecoderKind::whisper)
    lo.seq = c.encdec->source_positions;  // fixed by the stem
  if (o.workload == Workload::generate) {
    if (o.prompt <= 0 || o.gen <= 0)
      throw InputError(fmt::format("{}: --prompt and --gen must be positive", c.path));
    lo.phase = Phase::prefill;
    // The prompt is the encoder's source; Whisper's is fixed by its stem.
    if (!c.encdec || c.encdec->kind != EncoderDecoderKind::whisper) lo.seq = o.prompt;
  } else {
    lo.phase = o.workload == Workload::prefill ? Phase::prefill : Phase::decode;
  }
  return lo;
}

// The model's parameters (per GPU, total, active) and checkpoint cross-check. Returns the weight
// bytes that stay resident: an encoder-decoder's decode step runs only the decoder, but its
// encoder stays in memory for the next request's prefill.
int64_t model_size(const TransformerConfig& c, const TransformerOptions& o,
                   const LoweringOptions& lo, const Lowered& main, TransformerSummary& summary,
                   std::vector<std::string>& notes) {
  summary.params_per_gpu = main.analysis.totals.params;
  int64_t whole_bytes;
  int64_t resident_weight_bytes = main.analysis.totals.weight_bytes;
  bool decoder_only_graph = c.encdec && lo.phase == Phase::decode;
  if (lo.gpus() > 1 || decoder_only_graph) {
    LoweringOptions whole = lo;
    whole.tp = 1;
    whole.ep = 1;
    whole.batch = 1;
    whole.seq = 1;
    whole.context = 0;
    whole.phase = Phase::prefill;
    Lowered one = lower_and_analyze(c, whole, o);
    if (decoder_only_graph) {
      summary.params_per_gpu = one.analysis.totals.params;
      resident_weight_bytes = one.analysis.totals.weight_bytes;
    }
    summary.params_total = one.analysis.totals.params;
    summary.params_active = one.analysis.totals.params - inactive_expert_params(one.graph);
    whole_bytes = checkpoint_bytes(one.graph);
  } else {
    summary.params_total = main.analysis.totals.params;
    summary.params_active = main.analysis.totals.params - inactive_expert_params(main.graph);
    whole_bytes = checkpoint_bytes(main.graph);
  }
  if (lo.quantization || summary.weights_source.find("overrides") != std::string::npos)
    notes.push_back("weights: " + summary.weights_source);
  if (c.checkpoint) cross_check(*c.checkpoint, c, summary.params_total, whole_bytes, notes);
  return resident_weight_bytes;
}

// --phase generate: the prompt's prefill (the main graph) then a decode step per token as the
// context grows. Returns the decode step's activation peak.
int64_t generation_sweep(const TransformerConfig& c, const TransformerOptions& o,
                         const LoweringOptions& lo, const Lowered& main, const Device& device,
                         TransformerSummary& summary) {
  // Tokens cached before the first decode step: the prompt, or an encoder-decoder's first decoder
  // token (its source sits in the cross cache, the same for every step).
  int64_t before = c.encdec ? 1 : o.prompt;
  LoweringOptions dl = lo;
  dl.phase = Phase::decode;
  dl.context = before;
  Lowered step = lower_and_analyze(c, dl, o);
  GenerationSweep g;
  g.prompt = o.prompt;
  g.gen = o.gen;
  g.ttft_s = main.analysis.totals.predicted_s;
  DecodeSweep sweep(step, c, device);
  double decode_total = 0;
  for (int64_t i = 1; i < o.gen; ++i) {
    double s = sweep.step_seconds(before + i - 1);
    g.step_s.push_back(s);
    decode_total += s;
  }
  g.tpot_first_s = g.step_s.empty() ? 0 : g.step_s.front();
  g.tpot_last_s = g.step_s.empty() ? 0 : g.step_s.back();
  g.total_s = g.ttft_s + decode_total;
  g.tokens_per_s = static_cast<double>(lo.batch * o.gen) / g.total_s;
  summary.generation = std::move(g);
  int64_t peak = step.analysis.memory.peak_bytes;
  summary.decode_step = std::make_shared<Analysis>(std::move(step.analysis));
  return peak;
}

}  // namespace

Analysis analyze_transformer(const TransformerConfig& c, const TransformerOptions& o,
                             Graph* inferred) {
  check_transformer_options(c, o);
  const Device device = o.calibrated ? *o.calibrated : find_device(o.device);
  LoweringOptions lo = main_lowering(c, o);
  std::vector<std::string> notes = c.warnings;
  check_context(c, o, notes);
  if (c.encdec) encoder_decoder_notes(c, o, lo, notes);
  Lowered main = lower_and_analyze(c, lo, o);
  auto summary = std::make_shared<TransformerSummary>();
  summary->config = c;
  summary->workload = o.training_forward ? "train" : std::string(workload_name(o.workload));
  summary->lowering = lo;
  summary->weights_source = weights_label(lo);
  int64_t resident_weight_bytes = model_size(c, o, lo, main, *summary, notes);
  summary->kv_bytes_per_token = kv_cache_bytes_per_token(c, lo);
  for (const NodeResult& n : main.analysis.nodes)
    if (n.family == OpFamily::communication && n.status == NodeStatus::costed &&
        n.cost.collective == Collective::all_reduce) {
      ++summary->allreduces;
      summary->allreduce_s += n.roof.predicted;
    }
  int64_t activation_peak = main.analysis.memory.peak_bytes;
  if (o.workload == Workload::generate)
    activation_peak = std::max(activation_peak, generation_sweep(c, o, lo, main, device, *summary));
  summary->kv_bytes_per_sequence = kv_cache_bytes(c, lo, sequence_tokens(c, o));
  summary->kv_bytes_batch = checked_mul(summary->kv_bytes_per_sequence, lo.batch_per_gpu());
  summary->memory =
      fit_memory(c, o, lo, main.analysis, resident_weight_bytes, activation_peak, notes);
  main.analysis.notes.insert(main.analysis.notes.end(), notes.begin(), notes.end());
  const MemoryFit& fit = summary->memory;
  main.analysis.memory_total =
      memory_total(fit.weight_bytes, fit.kv_cache_bytes, fit.activation_bytes, fit.device_bytes);
  main.analysis.transformer = summary;
  if (inferred) *inferred = std::move(main.graph);
  return std::move(main.analysis);
}

}  // namespace rooflens
