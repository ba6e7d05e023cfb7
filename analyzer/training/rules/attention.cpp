// Attention and rotary embeddings in training: what SDPA's kernels save, its backward at the
// ratios measured in PyTorch or (the math path) kernel by kernel, autocast's casts of q, k, v,
// and RoPE written out as Hugging Face's eager kernels.
#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

// cuDNN's attention forward launches 2 kernels, its backward 6; the memory-efficient kernel's
// backward 5 (the H100 traces of scripts/gpu/training_kernel_breakdown.py): the ones beyond the
// first matter only to the host.
constexpr int kCudnnAttentionForwardExtra = 1, kCudnnAttentionBackwardExtra = 5;
constexpr int kEfficientAttentionBackwardExtra = 4;

// Fused attention (flash, memory-efficient) keeps q, k, v, the output and the log-sum-exp; the
// math path keeps the scaled q, k and v expanded to every query head, the probabilities and,
// under dropout, the mask and the dropped probabilities.
void attention_saves(SaveContext& c, std::vector<SavedItem>& items) {
  const StepContext& s = c.step;
  const Node& n = c.node();
  const auto& dims = c.cost().kernel.attention;
  int64_t attn_bytes = s.gemm_bytes == 1 ? 2 : s.gemm_bytes;
  if (s.attention_backend != AttentionBackend::math || !dims) {
    for (size_t i = 0; i < 3; ++i) {
      int t = n.input(i);
      if (t < 0) continue;
      if (c.bytes(t) == attn_bytes)
        items.push_back(c.tensor(t, "q/k/v"));
      else
        items.push_back(c.extra(t, attn_bytes, "autocast copy of q/k/v"));
    }
    items.push_back(c.tensor(n.output(0), "output"));
    if (dims) {
      int64_t q = s.attention_backend == AttentionBackend::efficient
                      ? ceil_div(dims->q_len, 32) * 32
                      : dims->q_len;
      items.push_back(
          SavedItem{-1, checked_mul(checked_mul(dims->batch, dims->q_heads), checked_mul(q, 4)),
                    false, false, "logsumexp"});
    }
    return;
  }
  const AttentionDims& d = *dims;
  int64_t bh = checked_mul(d.batch, d.q_heads, "attention size");
  int64_t qkv = checked_mul(bh, d.q_len * (2 * d.head_dim_qk + d.head_dim_v), "attention size");
  int64_t scores = checked_mul(bh, checked_mul(d.q_len, d.kv_len), "attention size");
  items.push_back(
      SavedItem{-1, checked_mul(qkv, attn_bytes), false, false, "scaled q, expanded k and v"});
  items.push_back(SavedItem{-1, checked_mul(scores, attn_bytes), false, true, "probabilities"});
  if (s.config.attn_dropout > 0)
    items.push_back(SavedItem{-1, checked_mul(scores, attn_bytes + 1), false, true,
                              "dropout mask and dropped probabilities"});
}

// SDPA is on autocast's bf16 list: q, k, v in another dtype (RoPE's fp32 under autocast) are cast
// first, and their gradients cast back. Separate q, k, v projections viewed as heads and
// transposed (Llama-style) get the gradients SDPA returns copied back to the projections' layout
// (ViewBackward's copies); GPT-2's split does it in its concatenation.
void attention_eager(EagerContext& c, EagerKernels& k) {
  const Node& n = c.node();
  if (c.step.autocast)
    for (size_t i = 0; i < 3; ++i) {
      int t = n.input(i);
      if (t < 0 || c.bytes(t) == 2) continue;
      k.forward.push_back({c.elements(t), c.bytes(t), 2});
      k.backward.push_back({c.elements(t), 2, c.bytes(t)});
    }
  for (size_t i = 0; i < 3; ++i) {
    int t = n.input(i);
    if (t < 0 || !c.graph.tensors[t].shape) return;
    int p = c.graph.tensors[t].producer;
    if (p >= 0 && c.graph.nodes[p].op_type == "Split") return;
  }
  for (size_t i = 0; i < 3; ++i) {
    int t = n.input(i);
    k.backward.push_back({c.elements(t), c.bytes(t), c.bytes(t)});
  }
}

// SDPA's math path as PyTorch 2.11 runs it (fp32 with grouped-query attention, or
// --attention naive), kernel by kernel as the H100 traces show it: K and V repeated to every
// query head, q scaled, the scores as a batched GEMM, the causal mask added, a safe softmax
// (softmax; rows of -inf found, reduced and zeroed: isneginf, all, where), dropout, the product
// with V; and autograd's backward of each (the GQA repeat's backward sums the copies).
void math_attention(const AttentionDims& d, bool dropout, int64_t eb, Precision p,
                    const Device& device, Work& f, Work& b) {
  int64_t bh = checked_mul(d.batch, d.q_heads, "attention size");
  int64_t scores = checked_mul(bh, checked_mul(d.q_len, d.kv_len), "attention size");
  int64_t q = checked_mul(bh, checked_mul(d.q_len, d.head_dim_qk));
  int64_t k = checked_mul(bh, checked_mul(d.kv_len, d.head_dim_qk)),
          v = checked_mul(bh, checked_mul(d.kv_len, d.head_dim_v));
  bool tensor_cores = p != Precision::fp32;
  bool gqa = d.kv_heads < d.q_heads;
  int64_t group = gqa ? d.q_heads / std::max<int64_t>(1, d.kv_heads) : 1;
  auto pass = [&](Work& w, int64_t e, int64_t r, int64_t wr) {
    w.add(pass_cost(Pass{e, r, wr}), Precision::fp32, device);
  };
  auto gemm = [&](Work& w, GemmDims g) {
    w.add(batched_gemm_cost(g, eb, tensor_cores), p, device);
  };
  f.add_small(6, device);  // the causal mask built: fills, triu, a cast
  if (gqa) {
    pass(f, k, eb, eb);
    pass(f, v, eb, eb);
  }
  pass(f, q, eb, eb);
  gemm(f, {bh, d.q_len, d.kv_len, d.head_dim_qk});
  pass(f, scores, eb, eb);      // + mask
  pass(f, scores, eb, eb);      // softmax
  pass(f, scores, eb, 1);       // isneginf
  pass(f, scores, 1, 0);        // all() over each row
  pass(f, scores, eb + 1, eb);  // where
  if (dropout) pass(f, scores, eb, eb + 1);
  gemm(f, {bh, d.q_len, d.head_dim_v, d.kv_len});
  gemm(b, {bh, d.q_len, d.kv_len, d.head_dim_v});
  gemm(b, {bh, d.kv_len, d.head_dim_v, d.q_len});
  if (dropout) pass(b, scores, eb + 1, eb);
  pass(b, scores, eb + 1, eb);  // where's backward
  pass(b, scores, 2 * eb, eb);  // softmax's
  gemm(b, {bh, d.q_len, d.head_dim_qk, d.kv_len});
  gemm(b, {bh, d.kv_len, d.head_dim_qk, d.q_len});
  pass(b, q, eb, eb);  // the scale's
  if (gqa) {
    pass(b, k, eb, eb / group);
    pass(b, v, eb, eb / group);
  }
}

// The backward at the forward's achieved rate (the forward's time may come from a measured
// table; no table times the backward), scaled by the matrix products it runs; the math path's
// forward and backward kernel by kernel.
void attention_backward(NodeKernels& k) {
  if (!k.cost.kernel.attention) return default_backward(k);
  const StepContext& s = k.step;
  const NodeCost& c = k.cost;
  Precision p = k.result.precision;
  bool math = s.attention_backend == AttentionBackend::math;
  double factor = math ? kMathAttentionBackwardFactor : kFusedAttentionBackwardFactor;
  double forward_s = place_on_roofline(c, p, k.device).predicted;
  if (math) {
    Work forward;
    for (const Pass& pass : k.eager.forward)
      forward.add(pass_cost(pass), Precision::fp32, k.device);
    math_attention(*c.kernel.attention, s.config.attn_dropout > 0, p == Precision::fp32 ? 4 : 2, p,
                   k.device, forward, k.back);
    k.forward = std::move(forward);
    k.row.forward_s = k.forward.seconds;
    k.row.forward_bytes = k.forward.bytes;
  } else {
    // The forward's time (a table measures it without dropout) and the backward's, by the
    // ratios measured in PyTorch.
    bool flash = s.attention_backend == AttentionBackend::flash;
    const AttentionTrainingTime& t = flash ? kFusedAttention16Time : kEfficientAttention32Time;
    bool dropout = s.config.attn_dropout > 0;
    k.back.add_seconds(forward_s * t.backward_over_forward * (dropout ? t.dropout_backward : 1));
    if (dropout) {
      k.forward.seconds += forward_s * (t.dropout_forward - 1);
      k.forward.launches.front().gpu_s += forward_s * (t.dropout_forward - 1);
    }
    if (flash) k.forward.add_small(kCudnnAttentionForwardExtra, k.device);
    k.back.add_small(flash ? kCudnnAttentionBackwardExtra : kEfficientAttentionBackwardExtra,
                     k.device);
    k.row.forward_s = k.forward.seconds;
  }
  k.back.flops =
      checked_add(k.back.flops, static_cast<int64_t>(static_cast<double>(c.flops) * factor));
  k.back.bytes = checked_add(
      k.back.bytes, checked_add(c.read_act, checked_add(checked_mul(c.written, 2), c.read_act)));
  int64_t dense = attention_matmul_flops(*c.kernel.attention, true);
  k.row.gemm_dense_flops =
      checked_add(dense, static_cast<int64_t>(static_cast<double>(dense) * factor), "matrix FLOPs");
}

// q*cos + rotate_half(q)*sin keeps cos and sin, computed once per forward and shared.
void rope_saves(SaveContext& c, std::vector<SavedItem>& items) {
  if (!c.first_time("rope's cos and sin")) return;
  const Node& n = c.node();
  int x = n.input(0);
  int64_t rot = n.input(2) >= 0 && c.graph.tensors[n.input(2)].shape
                    ? c.graph.tensors[n.input(2)].shape->back() * 2
                    : 0;
  items.push_back(SavedItem{-1, checked_mul(c.rows(x), checked_mul(rot, 2 * c.bytes(x))), false,
                            false, "cos and sin"});
}

// q*cos + rotate_half(q)*sin: mul, neg, cat, mul, add; the backward as many.
void rope_eager(EagerContext& c, EagerKernels& k) {
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), yb = c.bytes(c.y());
  int64_t cb = c.step.autocast ? 4 : xb;
  k.replaces = true;
  k.forward = {{e, xb + cb, yb}, {e / 2, xb, xb}, {e, xb, xb}, {e, xb + cb, yb}, {e, 2 * yb, yb}};
  // Backward: the two muls' input gradients, neg's, each slice's (a zero fill and a copy),
  // and the three paths summed.
  k.backward = {{e, yb + cb, yb}, {e, yb + cb, yb}, {e / 2, yb, yb},
                {e, 0, yb},       {e / 2, yb, yb},  {e, 0, yb},
                {e / 2, yb, yb},  {e, 2 * yb, yb},  {e, 2 * yb, xb}};
}

}  // namespace

void register_attention_training_rules(TrainingRules& r) {
  TrainingRule attention;
  attention.ops = {"Attention"};
  attention.output_bytes = [](const DtypeQuery& q) { return q.step.output_bytes; };
  attention.saves = attention_saves;
  attention.eager = attention_eager;
  attention.backward = attention_backward;
  attention.selective_recompute = true;
  r.push_back(attention);

  TrainingRule rope;
  rope.ops = {"RotaryEmbedding"};
  rope.saves = rope_saves;
  rope.eager = rope_eager;
  r.push_back(rope);
}

}  // namespace rooflens::training
