// Ops a transformer needs beyond the ONNX core set: com.microsoft RotaryEmbedding and MoE (as
// ONNX Runtime defines them), rooflens.AllReduce, the tensor-parallel collective that
// lowered configs place after row-parallel layers, and rooflens.AllToAll, expert parallelism's
// dispatch and combine.
#include <fmt/format.h>

#include <cmath>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

// x*cos + rotate(x)*sin over the rotated part: 2 multiplies and 1 add per rotated element.
constexpr int64_t kRopeFlopsPerElement = 3;

int64_t rope_head_size(const Node& n, const Shape& x) {
  if (x.size() == 4) return x[3];
  int64_t heads = n.attr_int("num_heads", 0);
  return heads > 0 ? x.back() / heads : x.back();
}

void infer_rope(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.size() != 3 && x.size() != 4) ctx.fail("RotaryEmbedding input must be 3-D or 4-D");
  int64_t heads = ctx.node().attr_int("num_heads", 0);
  if (x.size() == 3 && heads > 0 && x.back() % heads != 0)
    ctx.fail("hidden size is not divisible by num_heads");
  ctx.set_output(0, ctx.dtype(0), x);
}

NodeCost cost_rope(const CostContext& ctx) {
  const Node& n = ctx.node();
  const Shape& x = ctx.in_shape(0);
  int64_t head = rope_head_size(n, x);
  int64_t rot = n.attr_int("rotary_embedding_dim", 0);
  if (rot <= 0 || rot > head) rot = head;
  int64_t elements = ctx.in_elements(0);
  int64_t rotated = elements / head * rot;
  int64_t tokens = x.size() == 4 ? x[0] * x[2] : x[0] * x[1];
  NodeCost c;
  c.flops = checked_mul(rotated, kRopeFlopsPerElement);
  ctx.read_input(c, 0);
  ctx.read_input(c, 1);
  // cos and sin rows of each token's position: rot/2 values each.
  for (size_t i : {2u, 3u})
    ctx.read_input_part(c, i, std::min(ctx.in_elements(i), checked_mul(tokens, rot / 2)));
  ctx.write_all_outputs(c);
  c.parallel_tiles = elementwise_tiles(elements);
  return c;
}

MoeDims moe_dims(const Node& n, const Shape& x, const Shape& fc1, bool gated) {
  MoeDims d;
  d.hidden = x.back();
  d.tokens = checked_product(x) / d.hidden;
  d.experts = fc1[0];
  d.inter = fc1[1] == d.hidden ? fc1[2] : fc1[1];
  d.k = n.attr_int("k", 1);
  d.gated = gated;
  return d;
}

void infer_moe(InferContext& ctx) {
  const Shape &x = ctx.shape(0), &probs = ctx.shape(1), &fc1 = ctx.shape(2);
  if (fc1.size() != 3) ctx.fail("expert weights must be [experts, hidden, inter]");
  if (x.empty() || probs.empty() || x.back() == 0)
    ctx.fail("input and router probabilities need a last dim");
  if (fc1[1] != x.back() && fc1[2] != x.back())
    ctx.fail("expert weights do not match the hidden size");
  for (size_t i : {4u, 6u})
    if (ctx.has_input(i) && ctx.shape(i).size() != 3) ctx.fail("expert weights must be 3-D");
  if (probs.back() != fc1[0])
    ctx.fail(fmt::format("router gives {} experts, weights hold {}", probs.back(), fc1[0]));
  int64_t k = ctx.node().attr_int("k", 1);
  if (k <= 0 || k > fc1[0]) ctx.fail(fmt::format("k={} is outside [1, {}]", k, fc1[0]));
  ctx.set_output(0, ctx.dtype(0), x);
}

int64_t activation_flops(const std::string& act) {
  if (act == "relu") return 1;
  if (act == "gelu") return 5;
  // gpt-oss: clamp gate (1) and up (2), gate * sigmoid(alpha * gate) (6), up + 1 (1).
  if (act == "swiglu_clamp") return 10;
  return 5;  // silu / swish: sigmoid (4) and a multiply
}

NodeCost cost_moe(const CostContext& ctx) {
  const Node& n = ctx.node();
  bool gated = ctx.has_input(6);
  MoeDims d = moe_dims(n, ctx.in_shape(0), ctx.in_shape(2), gated);
  DType w = ctx.run_dtype(ctx.input(2));
  d.fp8_weights = w == DType::f8e4m3fn || w == DType::f8e5m2;
  d.mxfp4_weights = w == DType::f4e2m1;  // only MXFP4 checkpoints store e2m1 experts
  int64_t assignments = checked_mul(d.tokens, d.k, "MoE size");
  int64_t hi = checked_mul(d.hidden, d.inter, "MoE size");
  int64_t gemms = gated ? 3 : 2;
  NodeCost c;
  c.macs = checked_mul(checked_mul(assignments, hi), gemms, "MoE MACs");
  int64_t per_assignment =
      2 * gemms * hi +
      d.inter * (activation_flops(n.attr_string("activation_type", "silu")) + (gated ? 1 : 0)) +
      2 * d.hidden;                                  // weighted sum of the k expert outputs
  if (ctx.has_input(3)) per_assignment += d.inter;   // gate bias
  if (ctx.has_input(5)) per_assignment += d.hidden;  // down bias
  if (ctx.has_input(7)) per_assignment += d.inter;   // up bias
  c.flops = checked_mul(assignments, per_assignment, "MoE FLOPs");
  // Only the experts the tokens touch are read.
  double distinct = expected_distinct_experts(d.experts, d.k, d.tokens);
  double touched = distinct / static_cast<double>(d.experts);
  ctx.read_input(c, 0);
  ctx.read_input(c, 1);
  // Expert weights, biases and (from input 8) quantization scales: one slice per expert.
  for (size_t i = 2; i < ctx.node().inputs.size(); ++i)
    if (ctx.has_input(i))
      c.read_weight += static_cast<int64_t>(
          std::ceil(touched * static_cast<double>(ctx.bytes_of(ctx.input(i)))));
  // Unfused expert intermediates: fc1 (and fc3) outputs written and read, the activation written
  // and read.
  int64_t inter_bytes = ctx.bytes_of(ctx.input(0), checked_mul(assignments, d.inter));
  c.written += inter_bytes * (gated ? 3 : 2);
  c.read_act += inter_bytes * (gated ? 3 : 2);
  ctx.write_all_outputs(c);
  c.parallel_tiles = gemm_tiles(GemmDims{1, assignments, d.inter, d.hidden});
  c.tensor_cores = true;
  c.tiled = assignments > kGemvMaxRows;
  c.kernel.moe = d;
  c.note = fmt::format("top-{} of {} experts; {:.1f} distinct experts read (uniform routing)", d.k,
                       d.experts, distinct);
  return c;
}

void infer_allreduce(InferContext& ctx) {
  if (ctx.node().attr_int("ranks", 0) < 2) ctx.fail("AllReduce needs ranks >= 2");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

NodeCost cost_allreduce(const CostContext& ctx) {
  NodeCost c;
  c.collective_bytes = ctx.bytes_of(ctx.input(0));
  c.collective_ranks = ctx.node().attr_int("ranks", 0);
  c.note = fmt::format("ring all-reduce over {} GPUs", c.collective_ranks);
  return c;
}

// Expert parallelism's dispatch and combine (analyzer/transformers/lowering_mlp.cpp): every GPU
// sends each peer its share of the rows and receives as many; the output has the input's shape.
void infer_alltoall(InferContext& ctx) {
  int64_t ranks = ctx.node().attr_int("ranks", 0);
  if (ranks < 2) ctx.fail("AllToAll needs ranks >= 2");
  if (ctx.shape(0).empty() || ctx.shape(0)[0] % ranks != 0)
    ctx.fail(fmt::format("AllToAll over {} GPUs needs a first dim they divide", ranks));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

NodeCost cost_alltoall(const CostContext& ctx) {
  NodeCost c;
  c.collective = Collective::all_to_all;
  c.collective_bytes = ctx.bytes_of(ctx.input(0));
  c.collective_ranks = ctx.node().attr_int("ranks", 0);
  c.note = fmt::format("all-to-all over {} GPUs ({} of every {} rows leave this GPU)",
                       c.collective_ranks, c.collective_ranks - 1, c.collective_ranks);
  return c;
}

}  // namespace

void register_transformer_rules(RuleRegistry& r) {
  r.add({"com.microsoft", "RotaryEmbedding", OpFamily::elementwise, infer_rope, cost_rope});
  r.add({"com.microsoft", "MoE", OpFamily::gemm, infer_moe, cost_moe});
  r.add({"rooflens", "AllReduce", OpFamily::communication, infer_allreduce, cost_allreduce});
  r.add({"rooflens", "AllToAll", OpFamily::communication, infer_alltoall, cost_alltoall});
}

}  // namespace rooflens
