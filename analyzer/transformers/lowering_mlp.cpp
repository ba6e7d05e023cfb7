// Feed-forward blocks: the dense MLP (gated or plain, fused gate/up or not, its activation and
// biases) and the mixture of experts (router, top-k, routed experts with their biases and
// quantized storage, shared experts and their gate).
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/transformers/lowering_builder.hpp"
#include "analyzer/transformers/quantization.hpp"

namespace rooflens::lowering {

// act_fn(gate) * up, then down; the nodes named <module>.act_fn and <module>.act_mul. In the
// order Hugging Face's `down_proj(act_fn(gate_proj(x)) * up_proj(x))` runs them: the activation
// before the up projection (what `compare` aligns a CUDA graph's kernels against).
int Builder::gated_mlp(const std::string& gate, const std::string& up, const std::string& down,
                       const std::string& module, int h, int64_t inter, bool bias) {
  int g = linear(gate, h, c_.hidden, inter, bias);
  int a = activation(module + ".act_fn", c_.activation, g, module);
  int u = linear(up, h, c_.hidden, inter, bias);
  return linear(down, b_.op("Mul", module + ".act_mul", {a, u}), inter, c_.hidden, bias);
}

int Builder::dense_mlp(const std::string& p, int h, int64_t inter) {
  const ModuleNames& n = c_.names;
  std::string module = at(p, n.mlp.empty() ? "mlp" : n.mlp);
  if (!c_.gated_mlp) {
    int up = linear(at(p, n.up), h, c_.hidden, inter, c_.mlp_bias);
    return linear(at(p, n.down), activation(module + ".act", c_.activation, up, module), inter,
                  c_.hidden, c_.mlp_bias);
  }
  if (n.gate_up.empty())
    return gated_mlp(at(p, n.gate), at(p, n.up), at(p, n.down), module, h, inter, c_.mlp_bias);
  // One fused gate/up projection (Phi-3, GLM), split in two.
  std::string name = at(p, n.gate_up);
  auto parts =
      split(name + ".split", linear(name, h, c_.hidden, 2 * inter, c_.mlp_bias), {inter, inter}, 2);
  int a = activation(module + ".act_fn", c_.activation, parts[0], module);
  return linear(at(p, n.down), b_.op("Mul", module + ".act_mul", {a, parts[1]}), inter, c_.hidden,
                c_.mlp_bias);
}

// Router, top-k and the routed experts as one com.microsoft.MoE node (x, router probabilities,
// gate [E,H,I], gate bias, down [E,I,H], down bias, up [E,H,I], up bias, then the quantized
// storage's scales), plus the shared experts every token uses. Under --ep the node holds this
// GPU's experts and takes the token copies routed to them (dispatch_routed).
int Builder::experts(const std::string& p, int h) {
  const ModuleNames& n = c_.names;
  int64_t e = c_.experts / o_.ep, inter = s_.moe_inter, hidden = c_.hidden;
  std::string router = at(p, n.router), ex = at(p, n.experts);
  int logits = linear(router, h, hidden, c_.experts, c_.router_bias, false);
  int probs = c_.sigmoid_router
                  ? b_.op("Sigmoid", router + ".sigmoid", {logits})
                  : b_.op("Softmax", router + ".softmax", {logits}, {{"axis", int_attr(-1)}});
  b_.node("TopK", router + ".topk", {probs, b_.int_constant(router + ".k", {c_.experts_per_token})},
          2);
  bool quantized = quant_ && quantizes(*quant_, ex, true);
  DType wd = quant_ ? plain_ : w_;
  struct Matrix {
    const char* suffix;
    int64_t rows, cols;
  };
  const Matrix mats[3] = {
      {".gate_proj", hidden, inter}, {".down_proj", inter, hidden}, {".up_proj", hidden, inter}};
  std::vector<int> inputs = o_.ep > 1 ? dispatch_routed(ex, h, probs) : std::vector<int>{h, probs};
  std::vector<int> aux;
  for (const Matrix& m : mats) {
    QuantizedStorage st;
    if (quantized) st = quantized_storage(*quant_, m.rows, m.cols);
    inputs.push_back(b_.weight(ex + m.suffix, quantized ? st.weight : wd, {e, m.rows, m.cols}));
    inputs.push_back(c_.expert_bias ? b_.weight(ex + m.suffix + "_bias", plain_, {e, m.cols}) : -1);
    for (const auto& x : st.aux) {
      Shape s{e};
      s.insert(s.end(), x.shape.begin(), x.shape.end());
      aux.push_back(b_.weight(ex + m.suffix + x.suffix, x.dtype, s, false));
    }
  }
  inputs.insert(inputs.end(), aux.begin(), aux.end());
  std::string act = c_.expert_activation == "swiglu_clamp" ? "swiglu_clamp" : "silu";
  // Dispatched, each row is one (token, expert) pair: top-1 of this GPU's experts.
  int64_t k = o_.ep > 1 ? 1 : c_.experts_per_token;
  int y = b_.op("MoE", ex, inputs, {{"k", int_attr(k)}, {"activation_type", string_attr(act)}},
                "com.microsoft");
  if (o_.ep > 1) y = combine_routed(ex, y);
  if (s_.shared_inter > 0) {
    std::string sh = at(p, n.shared);
    int shared = gated_mlp(sh + ".gate_proj", sh + ".up_proj", sh + ".down_proj", sh, h,
                           s_.shared_inter, false);
    if (c_.shared_expert_gate) {
      std::string g = at(p, n.shared_gate);
      int gate = b_.op("Sigmoid", g + ".sigmoid", {linear(g, h, hidden, 1, false, false)});
      shared = b_.op("Mul", g + ".mul", {gate, shared});
    }
    y = b_.op("Add", at(p, n.moe) + ".shared_add", {y, shared});
  }
  return y;
}

// Expert parallelism's dispatch: every token copied once for each of its k experts (the permute
// kernel), the copies sent to their experts' GPUs (all-to-all; uniform routing leaves each GPU as
// many rows as it sent), and the routing probabilities of this GPU's experts. Returns the MoE
// node's first two inputs.
std::vector<int> Builder::dispatch_routed(const std::string& ex, int h, int probs) {
  int64_t tokens = B_ * S_, k = c_.experts_per_token, hidden = c_.hidden, e = c_.experts / o_.ep;
  int copies = b_.op("Expand", ex + ".dispatch_permute",
                     {reshape(ex + ".dispatch_tokens", h, {tokens, 1, hidden}),
                      b_.int_constant(ex + ".dispatch_permute.shape", {tokens, k, hidden})});
  int rows = reshape(ex + ".dispatch_rows", copies, {tokens * k, hidden});
  int sent = b_.op("AllToAll", ex + ".dispatch", {rows}, {{"ranks", int_attr(o_.ep)}}, "rooflens");
  int local = split(ex + ".local_probs", probs, {e, c_.experts - e}, 2)[0];
  return {sent, local};
}

// ... and the combine: the expert outputs sent back to their tokens' GPUs (all-to-all), then each
// token's k outputs summed (the unpermute kernel; the MoE node counted the routing weights).
int Builder::combine_routed(const std::string& ex, int y) {
  int64_t tokens = B_ * S_, k = c_.experts_per_token, hidden = c_.hidden;
  int back = b_.op("AllToAll", ex + ".combine", {y}, {{"ranks", int_attr(o_.ep)}}, "rooflens");
  int per_token = reshape(ex + ".combine_rows", back, {tokens, k, hidden});
  int summed = b_.op("ReduceSum", ex + ".combine_sum",
                     {per_token, b_.int_constant(ex + ".combine_sum.axes", {1})},
                     {{"keepdims", int_attr(0)}});
  return reshape(ex + ".combine_tokens", summed, {B_, S_, hidden});
}

}  // namespace rooflens::lowering
