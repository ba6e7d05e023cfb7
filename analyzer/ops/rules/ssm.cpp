// Recurrent mixers that replace attention's KV cache with a fixed state: rooflens.SelectiveScan
// and rooflens.CausalConv1d (Mamba, as mamba_ssm's fused kernels run them) and
// rooflens.LinearAttention (MiniMax's lightning attention). FLOPs come from formulas.hpp; the
// traffic is the fused kernel's: inputs read once, the output (and the state) written once.
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

// SelectiveScan(x [B,S,D], dt [B,S,D], A [D,N], B [B,S,N], C [B,S,N], D [D], z [B,S,D], state
// [B,D,N]?)
void infer_scan(InferContext& ctx) {
  const Shape &x = ctx.shape(0), &a = ctx.shape(2), &b = ctx.shape(3);
  if (x.size() != 3 || a.size() != 2 || b.size() != 3)
    ctx.fail("SelectiveScan needs x [B,S,D], A [D,N], B [B,S,N]");
  if (ctx.shape(1) != x || ctx.shape(6) != x) ctx.fail("SelectiveScan: dt and z must match x");
  if (a[0] != x[2] || b[2] != a[1] || ctx.shape(4) != b)
    ctx.fail("SelectiveScan: A, B and C disagree on the channels or the state");
  if (ctx.has_input(7) && ctx.shape(7) != Shape{x[0], a[0], a[1]})
    ctx.fail("SelectiveScan state must be [B, D, N]");
  ctx.set_output(0, ctx.dtype(0), x);
}

NodeCost cost_scan(const CostContext& ctx) {
  const Shape &x = ctx.in_shape(0), &a = ctx.in_shape(2);
  int64_t tokens = checked_mul(x[0], x[1], "scan size");
  NodeCost c;
  c.flops = selective_scan_flops(tokens, x[2], a[1]);
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  if (ctx.has_input(7))
    c.written = checked_add(c.written, ctx.bytes_of(ctx.input(7)));  // the state, updated in place
  c.parallel_tiles =
      checked_mul(x[0], ceil_div(x[2], 64), "scan tiles");  // a block per 64 channels
  c.note = fmt::format("selective scan, state {} per channel (fused: inputs read once{})", a[1],
                       ctx.has_input(7) ? ", state read and written" : "");
  return c;
}

// CausalConv1d(x [B,S,D], weight [D,K], bias [D]?, conv_state [B,D,K]?): depthwise, causal, SiLU.
void infer_conv(InferContext& ctx) {
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  if (x.size() != 3 || w.size() != 2 || w[0] != x[2])
    ctx.fail("CausalConv1d needs x [B,S,D] and weight [D,K]");
  ctx.set_output(0, ctx.dtype(0), x);
}

NodeCost cost_conv(const CostContext& ctx) {
  const Shape &x = ctx.in_shape(0), &w = ctx.in_shape(1);
  int64_t outputs = ctx.in_elements(0);
  // Per output: K multiply-adds, the bias, SiLU (5).
  int64_t per = 2 * w[1] + (ctx.has_input(2) ? 1 : 0) +
                (ctx.node().attr_string("activation", "") == "silu" ? 5 : 0);
  NodeCost c;
  c.flops = checked_mul(outputs, per, "conv FLOPs");
  c.macs = checked_mul(outputs, w[1], "conv MACs");
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  if (ctx.has_input(3)) c.written = checked_add(c.written, ctx.bytes_of(ctx.input(3)));
  c.parallel_tiles = elementwise_tiles(outputs);
  c.note = fmt::format("depthwise causal conv, kernel {}", w[1]);
  (void)x;
  return c;
}

// LinearAttention(q, k, v [B,S,H*d], state [B,H,d,d]?): blocks of `block_size` with the state in
// between; one token with a state is the recurrent (decode) form.
void infer_linear(InferContext& ctx) {
  const Shape& q = ctx.shape(0);
  int64_t heads = ctx.node().attr_int("num_heads", 0);
  if (q.size() != 3 || heads <= 0 || q[2] % heads)
    ctx.fail("LinearAttention needs q [B,S,H*d] and num_heads dividing it");
  if (ctx.shape(1) != q || ctx.shape(2) != q)
    ctx.fail("LinearAttention: q, k and v must have one shape");
  if (ctx.node().attr_int("block_size", 0) <= 0)
    ctx.fail("LinearAttention needs a positive block_size");
  ctx.set_output(0, ctx.dtype(0), q);
}

NodeCost cost_linear(const CostContext& ctx) {
  const Shape& q = ctx.in_shape(0);
  int64_t heads = ctx.node().attr_int("num_heads", 1), d = q[2] / heads;
  bool recurrent = ctx.has_input(3) && q[1] == 1;
  LinearAttentionWork w = linear_attention_work(q[0], heads, q[1], d,
                                                ctx.node().attr_int("block_size", 256), recurrent);
  NodeCost c;
  c.flops = w.flops;
  c.macs = w.matmul_flops / 2;
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  if (ctx.has_input(3)) c.written = checked_add(c.written, ctx.bytes_of(ctx.input(3)));
  c.parallel_tiles = checked_mul(q[0], heads, "attention tiles");
  c.tensor_cores = !recurrent;
  c.tiled = !recurrent;
  c.note =
      recurrent
          ? fmt::format("linear attention, one token against the {}x{} state per head", d, d)
          : fmt::format(
                "lightning attention, blocks of {}: quadratic inside, through the state across",
                ctx.node().attr_int("block_size", 256));
  return c;
}

}  // namespace

void register_ssm_rules(RuleRegistry& r) {
  r.add({"rooflens", "SelectiveScan", OpFamily::elementwise, infer_scan, cost_scan});
  r.add({"rooflens", "CausalConv1d", OpFamily::elementwise, infer_conv, cost_conv});
  r.add({"rooflens", "LinearAttention", OpFamily::attention, infer_linear, cost_linear});
}

}  // namespace rooflens
