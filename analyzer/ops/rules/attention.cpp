// Fused attention ops: com.microsoft Attention / MultiHeadAttention / GroupQueryAttention and
// ONNX Attention (opset 23). FLOPs come from attention_core (formulas.hpp); traffic is the
// fused kernel's: Q, K, V (and past K/V) read once, the output and present K/V written once.
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

struct AttentionLayout {
  AttentionDims core;
  int64_t past_len = 0;
  int64_t present_len = 0;
  Shape out;
  int64_t projection_in = 0, projection_out = 0;  // com.microsoft Attention's packed QKV GEMM
};

int64_t divide_exact(const InferContext* ctx, int64_t a, int64_t b, const char* what) {
  if (b <= 0 || a % b != 0) {
    std::string m = fmt::format("{} ({}) is not divisible by the head count ({})", what, a, b);
    if (ctx) ctx->fail(m);
    throw std::logic_error(m);
  }
  return a / b;
}

// Accessors that work at inference (InferContext) and at costing (shapes already known).
struct Inputs {
  const InferContext* ictx;
  std::function<bool(size_t)> has;
  std::function<Shape(size_t)> shape;
  std::function<const Value*(size_t)> value;
  const Node& node;
};

[[noreturn]] void reject(const Inputs& in, const std::string& message) {
  if (in.ictx) in.ictx->fail(message);
  throw std::logic_error(message);  // shapes were validated at inference
}

AttentionLayout ms_attention(const Inputs& in) {
  const Node& n = in.node;
  AttentionLayout L;
  Shape x = in.shape(0), w = in.shape(1);
  if (x.size() != 3 || w.size() != 2)
    reject(in, "Attention input must be (B,S,hidden) and weights 2-D");
  int64_t heads = n.attr_int("num_heads", 0);
  auto sizes = n.attr_ints("qkv_hidden_sizes");
  int64_t qh = sizes && sizes->size() == 3 ? (*sizes)[0] : w[1] / 3;
  int64_t kh = sizes && sizes->size() == 3 ? (*sizes)[1] : w[1] / 3;
  int64_t vh = sizes && sizes->size() == 3 ? (*sizes)[2] : w[1] / 3;
  L.core.batch = x[0];
  L.core.q_heads = L.core.kv_heads = heads;
  L.core.q_len = x[1];
  L.core.head_dim_qk = divide_exact(in.ictx, qh, heads, "q hidden size");
  divide_exact(in.ictx, kh, heads, "k hidden size");
  L.core.head_dim_v = divide_exact(in.ictx, vh, heads, "v hidden size");
  if (in.has(4)) L.past_len = in.shape(4).size() == 5 ? in.shape(4)[3] : 0;
  L.core.kv_len = L.past_len + x[1];
  L.present_len = L.core.kv_len;
  L.core.causal = n.attr_int("unidirectional", 0) != 0;
  L.out = {x[0], x[1], vh};
  L.projection_in = w[0];
  L.projection_out = w[1];
  return L;
}

// Past K/V are (batch, heads, length, head_dim).
int64_t past_length(const Inputs& in, size_t i) {
  Shape p = in.shape(i);
  if (p.size() != 4) reject(in, "past key/value must be (batch, heads, length, head_dim)");
  return p[2];
}

AttentionLayout ms_multi_head(const Inputs& in) {
  const Node& n = in.node;
  AttentionLayout L;
  Shape q = in.shape(0);
  if (q.size() != 3 && q.size() != 5)
    reject(in, "MultiHeadAttention query must be (B,S,hidden) or packed (B,S,N,3,H)");
  if (in.has(1) && in.shape(1).size() != 3 && in.shape(1).size() != 4)
    reject(in, "key must be 3-D or 4-D");
  if (in.has(2) && in.shape(2).size() != 3 && in.shape(2).size() != 4)
    reject(in, "value must be 3-D or 4-D");
  int64_t heads = n.attr_int("num_heads", 0);
  L.core.q_heads = L.core.kv_heads = heads;
  L.core.batch = q[0];
  L.core.q_len = q[1];
  int64_t kv_new = 0, v_hidden = 0;
  if (!in.has(1)) {  // packed QKV: (B, S, N, 3, H)
    if (q.size() != 5) reject(in, "MultiHeadAttention without key needs packed (B,S,N,3,H) query");
    L.core.head_dim_qk = L.core.head_dim_v = q[4];
    kv_new = q[1];
    v_hidden = heads * q[4];
  } else {
    L.core.head_dim_qk = divide_exact(in.ictx, q[2], heads, "query hidden size");
    Shape k = in.shape(1);
    if (k.size() == 4) {  // (B, N, L, H): already with the past
      kv_new = k[2];
    } else {
      kv_new = k[1];
    }
    Shape v = in.has(2) ? in.shape(2) : k;
    v_hidden = v.size() == 4 ? v[1] * v[3] : v.size() == 3 ? v[2] : q[2];
    L.core.head_dim_v = divide_exact(in.ictx, v_hidden, heads, "value hidden size");
  }
  if (in.has(6)) L.past_len = past_length(in, 6);
  L.core.kv_len = L.past_len + kv_new;
  L.present_len = L.core.kv_len;
  L.core.causal = n.attr_int("unidirectional", 0) != 0;
  L.out = {q[0], q[1], v_hidden};
  return L;
}

AttentionLayout ms_group_query(const Inputs& in) {
  const Node& n = in.node;
  AttentionLayout L;
  Shape q = in.shape(0);
  if (q.size() != 3) reject(in, "GroupQueryAttention query must be (B,S,hidden)");
  int64_t heads = n.attr_int("num_heads", 0), kv_heads = n.attr_int("kv_num_heads", 0);
  L.core.batch = q[0];
  L.core.q_len = q[1];
  L.core.q_heads = heads;
  L.core.kv_heads = kv_heads;
  int64_t head_dim =
      in.has(1) ? divide_exact(in.ictx, q[2], heads, "query hidden size")
                : divide_exact(in.ictx, q[2], heads + 2 * kv_heads, "packed QKV hidden size");
  L.core.head_dim_qk = L.core.head_dim_v = head_dim;
  if (in.has(3)) L.past_len = past_length(in, 3);
  int64_t total = L.past_len + q[1];
  if (in.has(6)) {
    if (const Value* v = in.value(6); v && v->size() == 1) total = v->int_at(0);
  }
  L.core.kv_len = total;
  L.present_len = std::max(L.past_len, total);
  L.core.causal = true;
  L.core.window = std::max<int64_t>(n.attr_int("local_window_size", -1), 0);
  L.out = {q[0], q[1], heads * head_dim};
  return L;
}

AttentionLayout onnx_attention(const Inputs& in) {
  const Node& n = in.node;
  AttentionLayout L;
  Shape q = in.shape(0), k = in.shape(1), v = in.shape(2);
  bool four_d = q.size() == 4;
  if ((q.size() != 3 && q.size() != 4) || k.size() != q.size() || v.size() != q.size())
    reject(in, "Q, K and V must all be 3-D or all 4-D");
  L.core.batch = q[0];
  if (four_d) {
    L.core.q_heads = q[1];
    L.core.q_len = q[2];
    L.core.head_dim_qk = q[3];
    L.core.kv_heads = k[1];
    L.core.head_dim_v = v[3];
    L.core.kv_len = k[2];
  } else {
    L.core.q_heads = n.attr_int("q_num_heads", 0);
    L.core.kv_heads = n.attr_int("kv_num_heads", 0);
    L.core.q_len = q[1];
    L.core.head_dim_qk = divide_exact(in.ictx, q[2], L.core.q_heads, "Q hidden size");
    L.core.head_dim_v = divide_exact(in.ictx, v[2], L.core.kv_heads, "V hidden size");
    L.core.kv_len = k[1];
  }
  if (in.has(4)) L.past_len = past_length(in, 4);
  L.core.kv_len += L.past_len;
  L.present_len = L.core.kv_len;
  L.core.causal = n.attr_int("is_causal", 0) != 0;
  if (four_d)
    L.out = {q[0], L.core.q_heads, L.core.q_len, L.core.head_dim_v};
  else
    L.out = {q[0], L.core.q_len, L.core.q_heads * L.core.head_dim_v};
  return L;
}

// Score options the lowered configs set: soft-capping (ONNX/ORT `softcap`), chunked attention
// (`chunk_size`), ALiBi (`alibi`) and a per-head sink logit (GroupQueryAttention input 11).
void score_options(const Inputs& in, AttentionDims& d) {
  d.softcap = in.node.attr_float("softcap", 0) > 0;
  d.chunk = std::max<int64_t>(in.node.attr_int("chunk_size", 0), 0);
  d.alibi = in.node.attr_int("alibi", 0) != 0;
  d.sinks = in.node.op_type == "GroupQueryAttention" && in.has(11);
}

using LayoutFn = AttentionLayout (*)(const Inputs&);

Inputs infer_inputs(const InferContext& ctx) {
  return Inputs{&ctx, [&ctx](size_t i) { return ctx.has_input(i); },
                [&ctx](size_t i) { return ctx.shape(i); },
                [&ctx](size_t i) { return ctx.value(i); }, ctx.node()};
}

Inputs cost_inputs(const CostContext& ctx) {
  return Inputs{nullptr, [&ctx](size_t i) { return ctx.has_input(i); },
                [&ctx](size_t i) { return ctx.in_shape(i); },
                [&ctx](size_t i) -> const Value* {
                  return ctx.input(i).value ? &*ctx.input(i).value : nullptr;
                },
                ctx.node()};
}

void infer_attention(InferContext& ctx, LayoutFn layout) {
  const Node& n = ctx.node();
  AttentionLayout L = layout(infer_inputs(ctx));
  score_options(infer_inputs(ctx), L.core);
  if (L.core.q_heads <= 0 || L.core.kv_heads <= 0) ctx.fail("head counts must be positive");
  if (L.core.q_heads % L.core.kv_heads != 0) ctx.fail("query heads must be a multiple of KV heads");
  DType dt = ctx.dtype(0);
  ctx.set_output(0, dt, L.out);
  Shape kv{L.core.batch, L.core.kv_heads, L.present_len, L.core.head_dim_qk};
  Shape vv{L.core.batch, L.core.kv_heads, L.present_len, L.core.head_dim_v};
  if (n.op_type == "Attention" && n.domain == "com.microsoft") {
    ctx.set_output(1, dt,
                   Shape{2, L.core.batch, L.core.q_heads, L.present_len, L.core.head_dim_qk});
  } else {
    ctx.set_output(1, dt, kv);
    ctx.set_output(2, dt, vv);
    if (n.domain.empty())
      ctx.set_output(3, dt, Shape{L.core.batch, L.core.q_heads, L.core.q_len, L.core.kv_len});
  }
}

NodeCost cost_attention(const CostContext& ctx, LayoutFn layout) {
  AttentionLayout L = layout(cost_inputs(ctx));
  score_options(cost_inputs(ctx), L.core);
  AttentionWork w = attention_core(L.core);
  NodeCost c;
  c.flops = w.flops;
  c.dense_flops = w.dense_flops;
  if (L.projection_out > 0) {  // com.microsoft Attention projects QKV itself
    GemmDims proj{1, checked_mul(L.core.batch, L.core.q_len), L.projection_out, L.projection_in};
    c.macs = gemm_macs(proj);
    int64_t extra =
        checked_add(gemm_flops(proj), ctx.has_input(2) ? checked_mul(proj.m, proj.n) : 0);
    c.flops = checked_add(c.flops, extra);
    c.dense_flops = checked_add(*c.dense_flops, extra);
  }
  // kv_shared (lowered MLA): the values are a prefix of the keys' latent, read once with them.
  bool shared = ctx.node().attr_int("kv_shared", 0) != 0;
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i)
    if (!(shared && (i == 2 || i == 5))) ctx.read_input(c, i);
  ctx.write_all_outputs(c);
  // One block per 128 queries per head; the key length is split in chunks of 256 (split-KV,
  // as flash-decoding does) so a decode step still fills the GPU.
  c.parallel_tiles = checked_mul(
      checked_mul(checked_mul(L.core.batch, L.core.q_heads), ceil_div(L.core.q_len, 128)),
      ceil_div(L.core.kv_len, 256));
  c.tensor_cores = true;
  c.tiled = L.core.q_len > 1;  // flash attention tiles; a decode step streams the cache
  c.kernel.attention = L.core;
  // Keys or values from an fp8 cache: its inputs' dtype, or a lowered prefill over one (kv_fp8).
  c.kernel.attention_fp8_cache = ctx.node().attr_int("kv_fp8", 0) != 0;
  for (size_t i = 1; i < ctx.node().inputs.size(); ++i)
    if (ctx.has_input(i) && ctx.run_dtype(ctx.input(i)) == DType::f8e4m3fn)
      c.kernel.attention_fp8_cache = true;
  if (L.projection_out > 0)
    c.kernel.gemm =
        GemmDims{1, checked_mul(L.core.batch, L.core.q_len), L.projection_out, L.projection_in};
  c.note = L.core.causal ? "causal: executed scores only (dense figure kept); fused traffic"
                         : "fused traffic";
  if (L.core.window > 0) c.note += fmt::format("; local window {}", L.core.window);
  if (L.core.chunk > 0) c.note += fmt::format("; chunks of {}", L.core.chunk);
  if (L.core.softcap) c.note += "; soft-capped scores";
  if (L.core.alibi) c.note += "; ALiBi bias";
  if (L.core.sinks) c.note += "; sink logits";
  if (c.kernel.attention_fp8_cache)
    c.note += c.kernel.fp8_attention() ? "; fp8 attention over an fp8 cache" : "; fp8 cache";
  return c;
}

void add_attention(RuleRegistry& r, const char* domain, const char* op, LayoutFn layout) {
  r.add({domain, op, OpFamily::attention, [layout](InferContext& c) { infer_attention(c, layout); },
         [layout](const CostContext& c) { return cost_attention(c, layout); }});
}

}  // namespace

void register_attention_rules(RuleRegistry& r) {
  add_attention(r, "com.microsoft", "Attention", ms_attention);
  add_attention(r, "com.microsoft", "MultiHeadAttention", ms_multi_head);
  add_attention(r, "com.microsoft", "GroupQueryAttention", ms_group_query);
  add_attention(r, "", "Attention", onnx_attention);
}

}  // namespace rooflens
