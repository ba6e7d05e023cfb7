#include "analyzer/serving/step_cost.hpp"

#include <algorithm>
#include <cmath>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/core/errors.hpp"

namespace rooflens {
namespace {

// 1, 2, 3, 4, 6, 8, 12, 16, ...: the powers of two and the midpoints 1.5 x 2^k.
int64_t grid_below(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  if (p >= 2 && p + p / 2 <= x) return p + p / 2;
  return p;
}

int64_t grid_above(int64_t x) {
  int64_t lo = grid_below(x);
  if (lo == x) return x;
  int64_t p = 1;
  while (p * 2 <= lo) p *= 2;
  return lo == p && p >= 2 ? p + p / 2 : p * 2;
}

double lerp(double x, double x0, double x1, double y0, double y1) {
  if (x1 == x0) return y0;
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

bool is_attention_core(const NodeResult& n) {
  return n.op == "Attention" || n.op == "com.microsoft.GroupQueryAttention";
}

bool has_prefix(const std::string& s, const std::string& p) {
  return !p.empty() && s.rfind(p, 0) == 0;
}

}  // namespace

std::pair<int64_t, int64_t> grid_bracket(int64_t x) {
  if (x < 1) x = 1;
  return {grid_below(x), grid_above(x)};
}

int64_t StepShape::tokens() const {
  int64_t t = decode_seqs;
  for (const PrefillChunk& c : prefills) t += c.tokens;
  return t;
}

StepCostModel::StepCostModel(TransformerConfig config, LoweringOptions lowering,
                             std::shared_ptr<const Device> device)
    : config_(std::move(config)), lowering_(std::move(lowering)), device_(std::move(device)) {
  if (lowering_.attention != AttentionImpl::flash)
    throw InputError(
        "serve: engines run fused (flash/paged) attention; --attention naive does not apply");
}

const StepCostModel::PrefillPoint& StepCostModel::prefill_point(int64_t tokens) {
  auto it = prefill_.find(tokens);
  if (it != prefill_.end()) return it->second;
  LoweringOptions lo = lowering_;
  lo.phase = Phase::prefill;
  lo.batch = lowering_.ep;  // one sequence a GPU (ep > 1: each GPU's share of the deployment)
  lo.seq = tokens;
  // Attention DP: each GPU's all-to-all sends tokens x k rows in ep equal chunks; engines pad
  // their buffers, so a count whose rows do not divide is lowered at the next one that does.
  if (lowering_.ep > 1 && config_.experts_per_token > 0)
    while ((lo.seq * config_.experts_per_token) % lowering_.ep != 0) ++lo.seq;
  AnalysisOptions ao;
  ao.calibrated = device_;
  Analysis a = analyze_graph(lower_transformer(config_, lo).graph, ao);
  PrefillPoint p;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed) continue;
    if (n.roof.predicted > 0) ++p.kernels;
    if (is_attention_core(n))
      p.attention_s += n.roof.predicted;
    else if (has_prefix(n.name, config_.names.lm_head))
      p.head_s += n.roof.predicted;
    else
      p.linear_s += n.roof.predicted;
    if (n.op == "com.microsoft.MoE") p.moe_s += n.roof.predicted;
    if (n.family == OpFamily::communication) {
      p.allreduce_s += n.roof.predicted;
      p.allreduces += 1;
      p.allreduce_bytes += static_cast<double>(n.cost.collective_bytes);
    }
  }
  p.peak_bytes = a.memory.peak_bytes;
  p.weight_bytes = a.totals.weight_bytes;
  return prefill_.emplace(tokens, p).first->second;
}

double StepCostModel::decode_attention_point(int64_t seqs, int64_t context) {
  auto key = std::make_pair(seqs, context);
  auto it = decode_.find(key);
  if (it != decode_.end()) return it->second;
  LoweringOptions lo = lowering_;
  lo.phase = Phase::decode;
  lo.batch = seqs;
  lo.ep = 1;  // attention DP: a GPU's attention is its own sequences' with every head
  lo.context = context;
  AnalysisOptions ao;
  ao.calibrated = device_;
  Analysis a = analyze_graph(lower_transformer(config_, lo).graph, ao);
  double s = 0;
  for (const NodeResult& n : a.nodes)
    if (n.status == NodeStatus::costed && is_attention_core(n)) s += n.roof.predicted;
  decode_.emplace(key, s);
  return s;
}

double StepCostModel::prefill_linear(int64_t tokens) {
  auto [lo, hi] = grid_bracket(tokens);
  return lerp(static_cast<double>(tokens), lo, hi, prefill_point(lo).linear_s,
              prefill_point(hi).linear_s);
}

double StepCostModel::prefill_head(int64_t tokens) {
  if (tokens <= 0) return 0;
  auto [lo, hi] = grid_bracket(tokens);
  return lerp(static_cast<double>(tokens), lo, hi, prefill_point(lo).head_s,
              prefill_point(hi).head_s);
}

double StepCostModel::interpolate(int64_t tokens, double PrefillPoint::*field) {
  auto [lo, hi] = grid_bracket(tokens);
  return lerp(static_cast<double>(tokens), lo, hi, prefill_point(lo).*field,
              prefill_point(hi).*field);
}

double StepCostModel::moe_seconds(int64_t tokens) {
  return tokens <= 0 ? 0 : interpolate(tokens, &PrefillPoint::moe_s);
}

double StepCostModel::prefill_attention(int64_t tokens) {
  if (tokens <= 0) return 0;
  auto [lo, hi] = grid_bracket(tokens);
  return lerp(static_cast<double>(tokens), lo, hi, prefill_point(lo).attention_s,
              prefill_point(hi).attention_s);
}

double StepCostModel::decode_attention(int64_t seqs, int64_t mean_context) {
  if (seqs <= 0) return 0;
  auto [b0, b1] = grid_bracket(seqs);
  auto [c0, c1] = grid_bracket(std::max<int64_t>(mean_context, 1));
  double c = static_cast<double>(std::max<int64_t>(mean_context, 1)), b = static_cast<double>(seqs);
  double at_b0 = lerp(c, c0, c1, decode_attention_point(b0, c0), decode_attention_point(b0, c1));
  double at_b1 =
      b1 == b0 ? at_b0
               : lerp(c, c0, c1, decode_attention_point(b1, c0), decode_attention_point(b1, c1));
  return lerp(b, b0, b1, at_b0, at_b1);
}

StepTime StepCostModel::cost(const StepShape& s) {
  StepTime t;
  int64_t tokens = s.tokens();
  if (tokens <= 0) return t;
  t.gpu_s = prefill_linear(tokens) + prefill_head(s.logits);
  t.moe_s = moe_seconds(tokens);
  t.allreduce_s = interpolate(tokens, &PrefillPoint::allreduce_s);
  t.allreduces = interpolate(tokens, &PrefillPoint::allreduces);
  t.allreduce_bytes = interpolate(tokens, &PrefillPoint::allreduce_bytes);
  for (const PrefillChunk& c : s.prefills) {
    double rows = prefill_attention(c.past + c.tokens) - prefill_attention(c.past);
    t.gpu_s += std::max(rows, prefill_attention(c.tokens));
  }
  if (s.decode_seqs > 0)
    t.gpu_s += decode_attention(s.decode_seqs, s.decode_context_sum / s.decode_seqs);
  t.kernels = prefill_point(grid_bracket(tokens).first).kernels;
  return t;
}

int64_t StepCostModel::activation_peak_bytes(int64_t tokens) {
  return prefill_point(grid_bracket(tokens).second).peak_bytes;
}

int64_t StepCostModel::weight_bytes() {
  return prefill_point(1).weight_bytes;
}

int64_t StepCostModel::grid_points() const {
  return static_cast<int64_t>(prefill_.size() + decode_.size());
}

}  // namespace rooflens
