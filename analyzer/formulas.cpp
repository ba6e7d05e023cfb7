#include "analyzer/formulas.hpp"

#include <algorithm>
#include <cmath>

#include "analyzer/checked.hpp"

namespace rooflens {

int64_t gemm_macs(const GemmDims& d) {
  return checked_mul(checked_mul(checked_mul(d.batch, d.m, "GEMM size"), d.n, "GEMM size"), d.k, "GEMM size");
}

int64_t gemm_flops(const GemmDims& d) { return checked_mul(2, gemm_macs(d), "GEMM FLOPs"); }

int64_t gemm_tiles(const GemmDims& d) {
  int64_t split_k = std::clamp<int64_t>(d.k / 512, 1, 8);
  return checked_mul(checked_mul(d.batch, checked_mul(ceil_div(d.m, 64), ceil_div(d.n, 64))), split_k);
}

int64_t conv_macs(int64_t batch, int64_t out_channels, int64_t out_spatial, int64_t in_per_group,
                  int64_t kernel_elements) {
  int64_t outputs = checked_mul(checked_mul(batch, out_channels, "conv size"), out_spatial, "conv size");
  return checked_mul(outputs, checked_mul(in_per_group, kernel_elements, "conv size"), "conv MACs");
}

GemmDims conv_image_gemm(const ConvDims& c) {
  int64_t kernel = 1, out = 1;
  for (int64_t k : c.kernel) kernel = checked_mul(kernel, k, "conv size");
  for (int64_t o : c.out_spatial) out = checked_mul(out, o, "conv size");
  return GemmDims{c.groups, c.out_channels / c.groups, out, checked_mul(c.in_channels / c.groups, kernel, "conv size")};
}

int64_t attention_pairs(int64_t q_len, int64_t kv_len, bool causal, int64_t window) {
  if (!causal) return checked_mul(q_len, kv_len, "attention size");
  // Query i (0-based) sees v = kv_len - q_len + i + 1 keys; sum min(v, W) for v in [a, b].
  int64_t extra = q_len > kv_len ? q_len - kv_len : 0;  // queries before the first key see all
  int64_t b = kv_len, a = std::max<int64_t>(kv_len - q_len + 1, 1);
  int64_t w = window > 0 ? window : b;
  auto range_sum = [](int64_t lo, int64_t hi) {  // lo + ... + hi
    return checked_mul(lo + hi, hi - lo + 1, "attention size") / 2;
  };
  int64_t pairs;
  if (b <= w) pairs = range_sum(a, b);
  else if (a >= w) pairs = checked_mul(w, b - a + 1, "attention size");
  else pairs = checked_add(range_sum(a, w), checked_mul(w, b - w, "attention size"), "attention size");
  return checked_add(pairs, checked_mul(extra, std::min(kv_len, w), "attention size"), "attention size");
}

AttentionWork attention_core(const AttentionDims& d) {
  AttentionWork w;
  int64_t heads = checked_mul(d.batch, d.q_heads, "attention size");
  w.scores_dense = checked_mul(heads, attention_pairs(d.q_len, d.kv_len, false), "attention size");
  w.scores_executed = checked_mul(heads, attention_pairs(d.q_len, d.kv_len, d.causal, d.window), "attention size");
  // Per score: 2*Dqk for QK^T, 1 for the scale, the softmax, 2*Dv for PV.
  int64_t per_score = 2 * d.head_dim_qk + 1 + kSoftmaxFlopsPerElement + 2 * d.head_dim_v;
  w.flops = checked_mul(w.scores_executed, per_score, "attention FLOPs");
  w.dense_flops = checked_mul(w.scores_dense, per_score, "attention FLOPs");
  return w;
}

double expected_distinct_experts(int64_t experts, int64_t k, int64_t tokens) {
  if (experts <= 0) return 0;
  double miss = 1.0 - static_cast<double>(k) / static_cast<double>(experts);
  return static_cast<double>(experts) * (1.0 - std::pow(miss, static_cast<double>(tokens)));
}

double ring_allreduce_seconds(int64_t bytes, int64_t ranks, double link_bandwidth) {
  if (ranks <= 1) return 0;
  double n = static_cast<double>(ranks);
  return 2.0 * (n - 1) / n * static_cast<double>(bytes) / link_bandwidth + 2.0 * (n - 1) * kCollectiveStepLatency;
}

int64_t elementwise_tiles(int64_t elements) { return ceil_div(elements, 2048); }

}  // namespace rooflens
