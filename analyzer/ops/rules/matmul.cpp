// GEMM family: MatMul (batched, broadcast), Gemm, Einsum, MatMulInteger, com.microsoft FusedMatMul.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

struct MatMulShapes {
  GemmDims dims;
  Shape out;
};

// numpy.matmul semantics: 1-D operands are promoted and the promoted axis dropped again.
MatMulShapes matmul_shapes(const InferContext* ctx, Shape a, Shape b, bool trans_a, bool trans_b) {
  auto fail = [&](const std::string& m) {
    if (ctx) ctx->fail(m);
    throw std::logic_error(m);
  };
  if (a.empty() || b.empty()) fail("MatMul operands must have rank >= 1");
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (trans_a) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b) std::swap(b[b.size() - 1], b[b.size() - 2]);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2) fail(fmt::format("inner dims differ: {} vs {}", k, k2));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = ctx ? rules::broadcast(*ctx, {ba, bb}) : ba;
  MatMulShapes r;
  r.dims = GemmDims{checked_product(batch, "MatMul batch"), m, n, k};
  r.out = batch;
  if (!a_vec) r.out.push_back(m);
  if (!b_vec) r.out.push_back(n);
  return r;
}

bool fused_trans(const Node& n, const char* key) {
  return n.domain == "com.microsoft" && n.attr_int(key, 0) != 0;
}

void infer_matmul(InferContext& ctx) {
  const Node& n = ctx.node();
  auto s = matmul_shapes(&ctx, ctx.shape(0), ctx.shape(1), fused_trans(n, "transA"),
                         fused_trans(n, "transB"));
  // output_dtype (set by the config lowering): an 8-bit GEMM writes a 16-bit result.
  DType out = n.op_type == "MatMulInteger" ? DType::i32 : ctx.dtype(0);
  if (auto code = n.attr_int("output_dtype", 0); code > 0) out = static_cast<DType>(code);
  ctx.set_output(0, out, s.out);
}

NodeCost cost_matmul(const CostContext& ctx) {
  const Node& n = ctx.node();
  auto s = matmul_shapes(nullptr, ctx.in_shape(0), ctx.in_shape(1), fused_trans(n, "transA"),
                         fused_trans(n, "transB"));
  // Batch broadcast was validated at inference; recompute batch from the output.
  Shape out = ctx.out_shape(0);
  int64_t rows_cols = 1;
  if (ctx.in_shape(0).size() > 1) rows_cols *= s.dims.m;
  if (ctx.in_shape(1).size() > 1) rows_cols *= s.dims.n;
  s.dims.batch = ctx.out_elements(0) / std::max<int64_t>(rows_cols, 1);
  // Leading dims that share one weight fold into M: a [8, 1, 4096] activation times a
  // [4096, 11008] weight is one 8 x 11008 x 4096 GEMM, as every library runs it.
  bool b_shared = ctx.in_shape(1).size() <= 2;
  if (b_shared && s.dims.batch > 1) {
    s.dims.m = checked_mul(s.dims.m, s.dims.batch, "GEMM size");
    s.dims.batch = 1;
  }
  NodeCost c = gemm_cost(s.dims, true);
  if (n.domain == "com.microsoft" && n.attr_float("alpha", 1.0) != 1.0)
    c.flops = checked_add(c.flops, ctx.out_elements(0));
  // Weight-only quantization (lowered configs): integer weights with their scales as a third
  // input; dequantizing is one multiply per weight element.
  if (n.domain.empty() && n.op_type == "MatMul" && ctx.has_input(2) &&
      !is_float(ctx.input(1).dtype)) {
    c.flops = checked_add(c.flops, ctx.in_elements(1));
    c.kernel.gemm_weight_only = true;
  }
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.kernel.gemm_b_shared = b_shared;
  c.kernel.gemm_b_transposed = fused_trans(n, "transB");
  return c;
}

GemmDims gemm_dims(const Node& n, const Shape& a, const Shape& b) {
  bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  return GemmDims{1, ta ? a[1] : a[0], tb ? b[0] : b[1], ta ? a[0] : a[1]};
}

void infer_gemm(InferContext& ctx) {
  const Shape &a = ctx.shape(0), &b = ctx.shape(1);
  if (a.size() != 2 || b.size() != 2) ctx.fail("Gemm operands must be 2-D");
  const Node& n = ctx.node();
  GemmDims d = gemm_dims(n, a, b);
  int64_t kb = n.attr_int("transB", 0) ? b[1] : b[0];
  if (d.k != kb) ctx.fail(fmt::format("inner dims differ: {} vs {}", d.k, kb));
  if (ctx.has_input(2)) rules::broadcast(ctx, {ctx.shape(2), Shape{d.m, d.n}});
  ctx.set_output(0, ctx.dtype(0), Shape{d.m, d.n});
}

NodeCost cost_gemm(const CostContext& ctx) {
  const Node& n = ctx.node();
  GemmDims d = gemm_dims(n, ctx.in_shape(0), ctx.in_shape(1));
  NodeCost c = gemm_cost(d, true);
  int64_t mn = checked_mul(d.m, d.n);
  if (n.attr_float("alpha", 1.0) != 1.0) c.flops += mn;
  if (ctx.has_input(2)) {
    c.flops += mn;  // + C
    if (n.attr_float("beta", 1.0) != 1.0) c.flops += mn;
  }
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.kernel.gemm_b_shared = true;
  c.kernel.gemm_b_transposed = n.attr_int("transB", 0) != 0;
  return c;
}

// ---- Einsum --------------------------------------------------------------------------------

struct EinsumPlan {
  std::vector<std::string> terms;  // one letter string per operand, ellipsis expanded
  std::string output;
  std::map<char, int64_t> sizes;
};

EinsumPlan plan_einsum(const InferContext* ctx, const std::string& equation,
                       const std::vector<Shape>& shapes) {
  auto fail = [&](const std::string& m) {
    if (ctx) ctx->fail(m);
    throw std::logic_error(m);
  };
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto p = eq.find("->"); p != std::string::npos) {
    lhs = eq.substr(0, p);
    rhs = eq.substr(p + 2);
    explicit_out = true;
  }
  EinsumPlan plan;
  std::vector<std::string> raw;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      raw.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  if (raw.size() != shapes.size()) fail("einsum equation names a different number of operands");
  // Ellipsis dims become upper-case letters that the equation cannot use otherwise.
  size_t ellipsis_rank = 0;
  for (size_t t = 0; t < raw.size(); ++t) {
    auto p = raw[t].find("...");
    if (p == std::string::npos) continue;
    size_t named = raw[t].size() - 3;
    if (shapes[t].size() < named) fail("einsum operand has fewer dims than letters");
    ellipsis_rank = std::max(ellipsis_rank, shapes[t].size() - named);
  }
  auto expand = [&](const std::string& term, size_t rank) {
    auto p = term.find("...");
    if (p == std::string::npos) return term;
    size_t k = rank - (term.size() - 3);
    std::string e;
    for (size_t i = ellipsis_rank - k; i < ellipsis_rank; ++i) e += static_cast<char>('A' + i);
    return term.substr(0, p) + e + term.substr(p + 3);
  };
  for (size_t t = 0; t < raw.size(); ++t) {
    std::string term = expand(raw[t], shapes[t].size());
    if (term.size() != shapes[t].size())
      fail(fmt::format("einsum term '{}' does not match rank {}", raw[t], shapes[t].size()));
    for (size_t i = 0; i < term.size(); ++i) {
      int64_t d = shapes[t][i];
      auto [it, fresh] = plan.sizes.emplace(term[i], d);
      if (!fresh && it->second != d) {
        if (it->second == 1)
          it->second = d;
        else if (d != 1)
          fail(fmt::format("einsum index '{}' has sizes {} and {}", term[i], it->second, d));
      }
    }
    plan.terms.push_back(term);
  }
  if (explicit_out) {
    std::string ell;
    for (size_t i = 0; i < ellipsis_rank; ++i) ell += static_cast<char>('A' + i);
    auto p = rhs.find("...");
    plan.output = p == std::string::npos ? rhs : rhs.substr(0, p) + ell + rhs.substr(p + 3);
  } else {  // implicit: ellipsis first, then letters seen once, alphabetically
    std::map<char, int> count;
    for (const auto& t : plan.terms)
      for (char ch : t) ++count[ch];
    for (size_t i = 0; i < ellipsis_rank; ++i) plan.output += static_cast<char>('A' + i);
    for (auto [ch, k] : count)
      if (k == 1 && std::islower(static_cast<unsigned char>(ch))) plan.output += ch;
  }
  for (char ch : plan.output)
    if (!plan.sizes.count(ch)) fail(fmt::format("einsum output index '{}' is in no operand", ch));
  return plan;
}

// A two-operand contraction as one batched GEMM: batch = indices in both operands and the
// output, m = first operand and output only, n = second and output only, k = summed.
GemmDims einsum_as_gemm(const EinsumPlan& plan) {
  const std::string &a = plan.terms[0], &b = plan.terms[1], &o = plan.output;
  GemmDims d;
  d.m = d.n = d.k = 1;
  for (auto [ch, size] : plan.sizes) {
    bool in_a = a.find(ch) != std::string::npos, in_b = b.find(ch) != std::string::npos,
         in_o = o.find(ch) != std::string::npos;
    if (in_a && in_b && in_o)
      d.batch = checked_mul(d.batch, size);
    else if (in_a && in_b)
      d.k = checked_mul(d.k, size);
    else if (in_a && in_o)
      d.m = checked_mul(d.m, size);
    else if (in_b && in_o)
      d.n = checked_mul(d.n, size);
  }
  return d;
}

// Pairwise, left to right: each step multiplies over the union of both operands' indices and
// keeps the ones still needed. A step with nothing summed is a product only (1 FLOP each).
NodeCost einsum_cost(const EinsumPlan& plan) {
  NodeCost c;
  int64_t macs = 0, flops = 0;
  auto size_of = [&](const std::set<char>& s) {
    int64_t p = 1;
    for (char ch : s) p = checked_mul(p, plan.sizes.at(ch), "einsum size");
    return p;
  };
  std::set<char> acc(plan.terms[0].begin(), plan.terms[0].end());
  if (plan.terms.size() == 1) {
    std::set<char> out(plan.output.begin(), plan.output.end());
    if (out.size() < acc.size()) flops = size_of(acc);  // a reduction: one add per input element
  }
  for (size_t t = 1; t < plan.terms.size(); ++t) {
    std::set<char> all = acc;
    all.insert(plan.terms[t].begin(), plan.terms[t].end());
    std::set<char> keep(plan.output.begin(), plan.output.end());
    for (size_t u = t + 1; u < plan.terms.size(); ++u)
      keep.insert(plan.terms[u].begin(), plan.terms[u].end());
    std::set<char> next;
    for (char ch : all)
      if (keep.count(ch)) next.insert(ch);
    int64_t work = size_of(all);
    bool summed = next.size() < all.size();
    macs = checked_add(macs, work);
    flops = checked_add(flops, summed ? checked_mul(2, work) : work);
    acc = next;
  }
  c.flops = flops;
  if (macs) c.macs = macs;
  if (plan.terms.size() == 2 && macs) c.kernel.gemm = einsum_as_gemm(plan);
  return c;
}

void infer_einsum(InferContext& ctx) {
  auto shapes = rules::input_shapes(ctx);
  auto plan = plan_einsum(&ctx, ctx.node().attr_string("equation", ""), shapes);
  Shape out;
  for (char ch : plan.output) out.push_back(plan.sizes.at(ch));
  ctx.set_output(0, ctx.dtype(0), out);
}

NodeCost cost_einsum(const CostContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i) shapes.push_back(ctx.in_shape(i));
  NodeCost c = einsum_cost(plan_einsum(nullptr, ctx.node().attr_string("equation", ""), shapes));
  ctx.read_all_inputs(c);
  ctx.write_all_outputs(c);
  c.tensor_cores = c.macs.has_value();
  c.parallel_tiles = c.tensor_cores ? ceil_div(ctx.out_elements(0), 128 * 128)
                                    : elementwise_tiles(ctx.out_elements(0));
  return c;
}

}  // namespace

void register_matmul_rules(RuleRegistry& r) {
  r.add({"", "MatMul", OpFamily::gemm, infer_matmul, cost_matmul});
  r.add({"", "MatMulInteger", OpFamily::gemm, infer_matmul, cost_matmul});
  r.add({"com.microsoft", "FusedMatMul", OpFamily::gemm, infer_matmul, cost_matmul});
  r.add({"", "Gemm", OpFamily::gemm, infer_gemm, cost_gemm});
  r.add({"", "Einsum", OpFamily::gemm, infer_einsum, cost_einsum});
}

}  // namespace rooflens
