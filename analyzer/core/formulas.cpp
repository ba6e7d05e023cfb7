#include "analyzer/core/formulas.hpp"

#include <algorithm>
#include <cmath>

#include "analyzer/core/checked.hpp"

namespace rooflens {

int64_t gemm_macs(const GemmDims& d) {
  return checked_mul(checked_mul(checked_mul(d.batch, d.m, "GEMM size"), d.n, "GEMM size"), d.k,
                     "GEMM size");
}

int64_t gemm_flops(const GemmDims& d) {
  return checked_mul(2, gemm_macs(d), "GEMM FLOPs");
}

int64_t gemm_tiles(const GemmDims& d) {
  int64_t split_k = std::clamp<int64_t>(d.k / 512, 1, 8);
  return checked_mul(checked_mul(d.batch, checked_mul(ceil_div(d.m, 64), ceil_div(d.n, 64))),
                     split_k);
}

double roofline_seconds(double flops, double bytes, double compute_roof, double bandwidth,
                        double wave_fraction) {
  double t_compute = flops > 0 ? flops / compute_roof / wave_fraction : 0;
  return std::max(t_compute, bytes / bandwidth);
}

int64_t conv_macs(int64_t batch, int64_t out_channels, int64_t out_spatial, int64_t in_per_group,
                  int64_t kernel_elements) {
  int64_t outputs =
      checked_mul(checked_mul(batch, out_channels, "conv size"), out_spatial, "conv size");
  return checked_mul(outputs, checked_mul(in_per_group, kernel_elements, "conv size"), "conv MACs");
}

GemmDims conv_image_gemm(const ConvDims& c) {
  int64_t kernel = 1, out = 1;
  for (int64_t k : c.kernel) kernel = checked_mul(kernel, k, "conv size");
  for (int64_t o : c.out_spatial) out = checked_mul(out, o, "conv size");
  return GemmDims{c.groups, c.out_channels / c.groups, out,
                  checked_mul(c.in_channels / c.groups, kernel, "conv size")};
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
  if (b <= w)
    pairs = range_sum(a, b);
  else if (a >= w)
    pairs = checked_mul(w, b - a + 1, "attention size");
  else
    pairs = checked_add(range_sum(a, w), checked_mul(w, b - w, "attention size"), "attention size");
  return checked_add(pairs, checked_mul(extra, std::min(kv_len, w), "attention size"),
                     "attention size");
}

int64_t chunked_attention_pairs(int64_t q_len, int64_t kv_len, int64_t chunk) {
  // Query at 0-based position p sees (p mod chunk) + 1 keys; sum over p in [kv_len - q_len,
  // kv_len).
  auto upto = [chunk](int64_t n) {  // sum over p in [0, n)
    int64_t full = n / chunk, rest = n % chunk;
    int64_t per_chunk = checked_mul(chunk, chunk + 1, "attention size") / 2;
    return checked_add(checked_mul(full, per_chunk, "attention size"),
                       checked_mul(rest, rest + 1, "attention size") / 2, "attention size");
  };
  int64_t first = std::max<int64_t>(kv_len - q_len, 0);
  return upto(kv_len) - upto(first);
}

namespace {

int64_t executed_pairs(const AttentionDims& d) {
  if (d.causal && d.chunk > 0) return chunked_attention_pairs(d.q_len, d.kv_len, d.chunk);
  return attention_pairs(d.q_len, d.kv_len, d.causal, d.window);
}

}  // namespace

AttentionWork attention_core(const AttentionDims& d) {
  AttentionWork w;
  int64_t heads = checked_mul(d.batch, d.q_heads, "attention size");
  w.scores_dense = checked_mul(heads, attention_pairs(d.q_len, d.kv_len, false), "attention size");
  w.scores_executed = checked_mul(heads, executed_pairs(d), "attention size");
  // Per score: 2*Dqk for QK^T, 1 for the scale, the softmax, 2*Dv for PV.
  int64_t per_score = 2 * d.head_dim_qk + 1 + kSoftmaxFlopsPerElement + 2 * d.head_dim_v;
  if (d.softcap) per_score += kSoftcapFlopsPerScore;
  if (d.alibi) per_score += kAlibiFlopsPerScore;
  w.flops = checked_mul(w.scores_executed, per_score, "attention FLOPs");
  w.dense_flops = checked_mul(w.scores_dense, per_score, "attention FLOPs");
  if (d.sinks) {  // one more logit in each softmax row
    int64_t rows = checked_mul(heads, d.q_len, "attention size");
    w.flops = checked_add(w.flops, checked_mul(rows, kSoftmaxFlopsPerElement), "attention FLOPs");
    w.dense_flops =
        checked_add(w.dense_flops, checked_mul(rows, kSoftmaxFlopsPerElement), "attention FLOPs");
  }
  return w;
}

int64_t attention_matmul_flops(const AttentionDims& d, bool dense) {
  int64_t heads = checked_mul(d.batch, d.q_heads, "attention size");
  int64_t pairs = dense ? attention_pairs(d.q_len, d.kv_len, false) : executed_pairs(d);
  return checked_mul(checked_mul(heads, pairs, "attention size"),
                     2 * (d.head_dim_qk + d.head_dim_v), "attention FLOPs");
}

int64_t selective_scan_flops(int64_t tokens, int64_t channels, int64_t state) {
  int64_t per_channel = checked_add(checked_mul(kScanFlopsPerState, state), kScanFlopsPerChannel);
  return checked_mul(checked_mul(tokens, channels, "scan size"), per_channel, "scan FLOPs");
}

LinearAttentionWork linear_attention_work(int64_t batch, int64_t heads, int64_t tokens, int64_t d,
                                          int64_t block, bool recurrent) {
  LinearAttentionWork w;
  int64_t dd = checked_mul(d, d, "attention size");
  int64_t per_head = 0, matmul = 0;
  if (recurrent) {
    // K^T V (2 d^2), the state's decay and sum (2 d^2), q times the state (2 d^2), per token.
    matmul = checked_mul(tokens, 4 * dd, "attention FLOPs");
    per_head = checked_mul(tokens, 6 * dd, "attention FLOPs");
  } else {
    for (int64_t start = 0; start < tokens; start += block) {
      int64_t L = std::min(block, tokens - start);
      int64_t LL = checked_mul(L, L, "attention size"), Ld = checked_mul(L, d, "attention size");
      // Intra: QK^T (2 L^2 d), the decay mask (L^2), times V (2 L^2 d). Inter: q decay (L d), q
      // times the state (2 L d^2), the sum (L d). State: k decay (L d), K^T V (2 L d^2), decay and
      // add (2 d^2).
      int64_t mm = checked_add(checked_mul(4 * d, LL, "attention FLOPs"),
                               checked_mul(4 * d, Ld, "attention FLOPs"));
      matmul = checked_add(matmul, mm, "attention FLOPs");
      per_head = checked_add(per_head, checked_add(mm, checked_add(LL, 3 * Ld + 2 * dd)),
                             "attention FLOPs");
    }
  }
  int64_t hb = checked_mul(batch, heads, "attention size");
  w.flops = checked_mul(hb, per_head, "attention FLOPs");
  w.matmul_flops = checked_mul(hb, matmul, "attention FLOPs");
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
  return 2.0 * (n - 1) / n * static_cast<double>(bytes) / link_bandwidth +
         2.0 * (n - 1) * kCollectiveStepLatency;
}

int64_t elementwise_tiles(int64_t elements) {
  return ceil_div(elements, 2048);
}

OptimizerWork optimizer_work(OptimizerKind kind, int64_t elements, int64_t rows, int64_t cols,
                             int64_t param_bytes, int64_t state_bytes) {
  OptimizerWork w;
  auto per = [&](int64_t bytes) { return checked_mul(elements, bytes, "optimizer bytes"); };
  switch (kind) {
    case OptimizerKind::adamw:
      // PyTorch's foreach AdamW, one kernel per list op: p *= 1 - lr*wd (r p, w p); m.lerp_(g)
      // (r m g, w m); v *= b2 (r v, w v); v.addcmul_(g, g) (r v g, w v); s = sqrt(v) (r v, w s);
      // s /= bc2 (r s, w s); s += eps (r s, w s); p.addcdiv_(m, s) (r p m s, w p). s is a temporary
      // as large as the states. FLOPs: 1 + 3 + 1 + 3 + 1 + 1 + 1 + 3 = 14 per element.
      w.flops = checked_mul(elements, 14, "optimizer FLOPs");
      w.bytes = checked_add(per(4 * param_bytes + 2 * param_bytes), per(14 * state_bytes),
                            "optimizer bytes");
      w.state_bytes = per(2 * state_bytes);
      w.temporary_bytes = per(state_bytes);
      w.launches = 8;
      break;
    case OptimizerKind::sgd:
      // Plain SGD (no momentum, PyTorch's default): p.add_(g, alpha=-lr).
      w.flops = checked_mul(elements, 2, "optimizer FLOPs");
      w.bytes = per(3 * param_bytes);
      w.launches = 1;
      break;
    case OptimizerKind::adafactor: {
      // torch.optim.Adafactor (beta1 unset): a matrix keeps row and column means of g^2, a vector
      // a full second moment; the update reads p, g and the factors, forms the factored estimate
      // (a temporary as large as p), and writes p. ~12 FLOPs per element.
      bool factored = rows > 1 && cols > 1;
      int64_t state_elems =
          factored ? checked_add(elements / cols, elements / rows, "optimizer state") : elements;
      w.state_bytes = checked_mul(state_elems, state_bytes, "optimizer state");
      w.temporary_bytes = per(state_bytes);
      w.flops = checked_mul(elements, 12, "optimizer FLOPs");
      w.bytes = checked_add(per(4 * param_bytes),
                            checked_add(per(4 * state_bytes), 4 * w.state_bytes, "optimizer bytes"),
                            "optimizer bytes");
      w.launches = 8;
      break;
    }
  }
  return w;
}

ModelState zero_partition(const ModelState& whole, int stage, int64_t ranks) {
  ModelState s = whole;
  if (ranks <= 1) return s;
  if (stage >= 1) s.optimizer = ceil_div(whole.optimizer, ranks);
  if (stage >= 2) s.grads = ceil_div(whole.grads, ranks);
  if (stage >= 3) s.weights = ceil_div(whole.weights, ranks);
  return s;
}

int64_t korthikanti_layer_bytes(int64_t seq, int64_t batch, int64_t hidden, int64_t heads,
                                int64_t tp, bool sp, bool selective) {
  double sbh = static_cast<double>(seq) * static_cast<double>(batch) * static_cast<double>(hidden);
  double t = static_cast<double>(std::max<int64_t>(tp, 1));
  double scores = selective ? 0.0
                            : 5.0 * static_cast<double>(heads) * static_cast<double>(seq) /
                                  static_cast<double>(hidden);
  double per = sp ? (34.0 + scores) / t : 10.0 + 24.0 / t + scores / t;
  return static_cast<int64_t>(sbh * per);
}

}  // namespace rooflens
