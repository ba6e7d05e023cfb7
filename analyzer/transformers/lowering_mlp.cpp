// Feed-forward blocks: the dense MLP (gated or plain, fused gate/up or not, its activation and
// biases) and the mixture of experts (router, top-k, routed experts with their biases and
// quantized storage, shared experts and their gate).
#include <fmt/format.h>

#include "analyzer/core/checked.hpp"
#include "analyzer/transformers/lowering_builder.hpp"
#include "analyzer/transformers/quantization.hpp"

namespace rooflens::lowering {

// act_fn(gate) * up, then down; the nodes named <module>.act_fn and <module>.act_mul.
int Builder::gated_mlp(const std::string& gate, const std::string& up, const std::string& down,
                       const std::string& module, int h, int64_t inter, bool bias) {
  int g = linear(gate, h, c_.hidden, inter, bias);
  int u = linear(up, h, c_.hidden, inter, bias);
  int a = activation(module + ".act_fn", c_.activation, g, module);
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
// storage's scales), plus the shared experts every token uses.
int Builder::experts(const std::string& p, int h) {
  const ModuleNames& n = c_.names;
  int64_t e = c_.experts, inter = s_.moe_inter, hidden = c_.hidden;
  std::string router = at(p, n.router), ex = at(p, n.experts);
  int logits = linear(router, h, hidden, e, c_.router_bias, false);
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
  std::vector<int> inputs{h, probs};
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
  int y = b_.op("MoE", ex, inputs,
                {{"k", int_attr(c_.experts_per_token)}, {"activation_type", string_attr(act)}},
                "com.microsoft");
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

}  // namespace rooflens::lowering
