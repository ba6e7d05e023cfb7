// What autograd keeps from the forward for the backward, op by op as PyTorch and Hugging Face
// save it (docs/training.md lists every op's rule and where it was checked). The memory timeline
// of the step built from it: memory_timeline.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "analyzer/core/checked.hpp"
#include "analyzer/training/step.hpp"

namespace rooflens::training {
namespace {

bool is_view(const std::string& op) {
  return op == "Reshape" || op == "Split" || op == "Transpose" || op == "Squeeze" ||
         op == "Unsqueeze" || op == "Flatten" || op == "Identity";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

using Runtime = RuntimeDtypes;

bool is_weight(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].role == TensorRole::weight;
}

}  // namespace

std::vector<bool> trainable_weights(const Graph& g) {
  std::vector<bool> out(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    out[t] = x.role == TensorRole::weight && x.is_param && is_float(x.dtype) &&
             x.name.find(".rotary_emb.") == std::string::npos;
  }
  for (const Node& n : g.nodes)
    if (n.op_type == "BatchNormalization")
      for (size_t i : {3u, 4u})
        if (n.input(i) >= 0) out[n.input(i)] = false;  // running mean and variance: buffers
  return out;
}

RuntimeDtypes runtime_dtypes(const StepContext& s) {
  const Graph& g = s.graph;
  RuntimeDtypes r;
  r.bytes.assign(g.tensors.size(), 0);
  r.base.resize(g.tensors.size());
  std::iota(r.base.begin(), r.base.end(), 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    int64_t own = std::max<int64_t>(1, dtype_bits(x.dtype) / 8);
    r.bytes[t] = x.role == TensorRole::weight && is_float(x.dtype) ? s.param_bytes : own;
  }
  for (const Node& n : g.nodes) {
    const std::string& op = n.op_type;
    auto in = [&](size_t i) { return n.input(i) >= 0 ? r.bytes[n.input(i)] : 0; };
    int64_t out = 0;
    if (op == "MatMul" || op == "FusedMatMul" || op == "Attention" || op == "MoE" ||
        op == "Conv" || op == "Gemm")
      out = s.output_bytes;
    else if (op == "BatchNormalization")
      out = in(0);  // cuDNN's batch norm returns its input's dtype
    else if (op == "Gather")
      out = is_weight(g, n.input(0)) ? s.param_bytes : in(0);
    else if (op == "LayerNormalization")
      out = s.autocast ? 4 : in(0);  // autocast runs layer_norm in fp32
    else if (ends_with(n.name, ".bias_add"))
      out = in(0);  // the bias is part of addmm
    else if (op == "Gelu" && s.autocast && s.config.activation == "gelu_new")
      out = 4;  // its pow runs in fp32
    else
      for (int t : n.inputs)
        if (t >= 0 && is_float(g.tensors[t].dtype)) out = std::max(out, r.bytes[t]);
    for (int o : n.outputs) {
      if (o < 0) continue;
      if (is_float(g.tensors[o].dtype) && out > 0) r.bytes[o] = out;
      if (is_view(op) && n.input(0) >= 0) r.base[o] = r.base[n.input(0)];
    }
  }
  return r;
}

namespace {

// One tensor autograd keeps: a graph tensor's storage (counted once however many ops save it),
// or a tensor outside the graph (an autocast copy, an intermediate of a decomposed op, a mask).
struct Item {
  int storage = -1;
  int64_t bytes = 0;
  bool replicated = false;      // a [.., hidden] tensor every tensor-parallel rank holds whole
  bool attention_core = false;  // dropped by selective recomputation
  const char* what = "";
};

class SaveRules {
 public:
  SaveRules(const StepContext& s, const Runtime& r) : s_(s), g_(s.graph), r_(r) {}

  std::vector<Item> of(int node) {
    const Node& n = g_.nodes[static_cast<size_t>(node)];
    const std::string& op = n.op_type;
    std::vector<Item> items;
    if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm" || op == "Conv")
      linear(n, items);
    else if (op == "MaxPool")
      max_pool(n, items);
    else if (op == "BatchNormalization")
      batch_norm(n, items);
    else if (op == "Attention")
      attention(node, n, items);
    else if (op == "LayerNormalization")
      layer_norm(n, items);
    else if (op == "SimplifiedLayerNormalization")
      rms_norm(n, items);
    else if (op == "Gelu" && s_.config.activation == "gelu_new")
      gelu_new(n, items);
    else if (op == "Relu" || op == "Tanh" || op == "Sigmoid" || op == "Softmax")
      items.push_back(tensor(n.output(0), "output"));  // their backward uses the result
    else if (op == "Gelu" || op == "Swish" || op == "QuickGelu" || op == "Erf")
      items.push_back(tensor(n.input(0), "input"));
    else if (op == "Mul" || op == "Div")
      product(n, items);
    else if (op == "MoE")
      experts(node, items);
    else if (op == "TopK" && n.output(1) >= 0)
      items.push_back(tensor(n.output(1), "indices"));
    else if (op == "Gather" && n.input(1) >= 0)
      items.push_back(tensor(n.input(1), "indices"));
    else if (op == "RotaryEmbedding")
      rope(n, items);
    else if (!saves_nothing(op))
      generic(n, items);
    if (ends_with(n.name, "_residual") && s_.config.resid_dropout > 0 && n.output(0) >= 0)
      items.push_back(Item{-1, elements(n.output(0)), true, false, "dropout mask"});
    return items;
  }

  // Ops without a rule of their own, by op: their saved tensors are taken to be their float
  // activation inputs (what most autograd formulas keep), and the report names them.
  std::map<std::string, int> generic_ops;

  int64_t copy_bytes(int weight) {
    if (!s_.autocast || weight < 0 || copied_[weight]) return 0;
    copied_[weight] = true;
    return checked_mul(elements(weight), s_.gemm_bytes, "autocast copy");
  }

  int64_t elements(int t) const {
    return t >= 0 && g_.tensors[t].shape ? g_.tensors[t].elements() : 0;
  }
  bool last_dim_is_hidden(int t) const {
    return t >= 0 && g_.tensors[t].shape && !g_.tensors[t].shape->empty() &&
           g_.tensors[t].shape->back() == s_.config.hidden;
  }

 private:
  Item tensor(int t, const char* what) {
    int b = r_.base[t];
    return Item{b, checked_mul(elements(b), r_.bytes[b], "saved bytes"), last_dim_is_hidden(b),
                false, what};
  }
  Item extra(int like, int64_t bytes_per_element, const char* what) {
    return Item{-1, checked_mul(elements(like), bytes_per_element, "saved bytes"),
                last_dim_is_hidden(like), false, what};
  }
  int64_t rows(int t) const {
    const auto& sh = *g_.tensors[t].shape;
    return sh.empty() ? 1 : elements(t) / std::max<int64_t>(1, sh.back());
  }

  // y = x W: the backward needs x for dW (and W for dX). Autocast casts x for each GEMM that reads
  // it (no cache for activations) and caches one copy of each weight for the step.
  void linear(const Node& n, std::vector<Item>& items) {
    int x = n.input(0), w = n.input(1);
    if (!is_weight(g_, w)) {
      items.push_back(tensor(x, "input"));
      if (w >= 0) items.push_back(tensor(w, "input"));
      return;
    }
    if (s_.train.precision == TrainPrecision::fp8_mixed)
      items.push_back(extra(x, 1, "fp8 input"));
    else if (r_.bytes[r_.base[x]] == s_.gemm_bytes)
      items.push_back(tensor(x, "input"));
    else
      items.push_back(extra(x, s_.gemm_bytes, "autocast copy of the input"));
  }

  // max_pool2d_with_indices keeps its input and the argmax of each output (int64).
  void max_pool(const Node& n, std::vector<Item>& items) {
    items.push_back(tensor(n.input(0), "input"));
    if (n.output(0) >= 0) items.push_back(extra(n.output(0), 8, "indices"));
  }

  // Training-mode batch norm keeps its input and each channel's mean and inverse deviation.
  void batch_norm(const Node& n, std::vector<Item>& items) {
    int x = n.input(0);
    items.push_back(tensor(x, "input"));
    const auto& sh = *g_.tensors[x].shape;
    items.push_back(Item{-1, checked_mul(sh.size() > 1 ? sh[1] : 1, 8), false, false,
                         "mean and inverse deviation"});
  }

  // Fused attention (flash, memory-efficient) keeps q, k, v, the output and the log-sum-exp; the
  // math path keeps the scaled q, k and v expanded to every query head, the probabilities and,
  // under dropout, the mask and the dropped probabilities.
  void attention(int node, const Node& n, std::vector<Item>& items) {
    const auto& dims = s_.forward.nodes[static_cast<size_t>(node)].cost.kernel.attention;
    int64_t attn_bytes = s_.gemm_bytes == 1 ? 2 : s_.gemm_bytes;
    if (s_.attention_backend != AttentionBackend::math || !dims) {
      for (size_t i = 0; i < 3; ++i) {
        int t = n.input(i);
        if (t < 0) continue;
        if (r_.bytes[r_.base[t]] == attn_bytes)
          items.push_back(tensor(t, "q/k/v"));
        else
          items.push_back(extra(t, attn_bytes, "autocast copy of q/k/v"));
      }
      items.push_back(tensor(n.output(0), "output"));
      if (dims) {
        int64_t q =
            s_.attention_backend == AttentionBackend::efficient ? ceil_div(dims->q_len, 32) * 32 : dims->q_len;
        items.push_back(
            Item{-1, checked_mul(checked_mul(dims->batch, dims->q_heads), checked_mul(q, 4)), false,
                 false, "logsumexp"});
      }
      return;
    }
    const AttentionDims& d = *dims;
    int64_t bh = checked_mul(d.batch, d.q_heads, "attention size");
    int64_t qkv = checked_mul(bh, d.q_len * (2 * d.head_dim_qk + d.head_dim_v), "attention size");
    int64_t scores = checked_mul(bh, checked_mul(d.q_len, d.kv_len), "attention size");
    items.push_back(
        Item{-1, checked_mul(qkv, attn_bytes), false, false, "scaled q, expanded k and v"});
    items.push_back(Item{-1, checked_mul(scores, attn_bytes), false, true, "probabilities"});
    if (s_.config.attn_dropout > 0)
      items.push_back(Item{-1, checked_mul(scores, attn_bytes + 1), false, true,
                           "dropout mask and dropped probabilities"});
  }

  void layer_norm(const Node& n, std::vector<Item>& items) {
    int x = n.input(0);
    if (s_.autocast && r_.bytes[r_.base[x]] != 4)
      items.push_back(extra(x, 4, "fp32 copy of the input"));
    else
      items.push_back(tensor(x, "input"));
    items.push_back(Item{-1, checked_mul(rows(x), 8), false, false, "mean and rstd"});
  }

  // Hugging Face's RMSNorm: x.to(fp32), x * rsqrt(mean(x^2) + eps), weight * that.to(input dtype).
  void rms_norm(const Node& n, std::vector<Item>& items) {
    int x = n.input(0);
    int64_t xb = r_.bytes[r_.base[x]];
    if (xb == 4)
      items.push_back(tensor(x, "input"));
    else
      items.push_back(extra(x, 4, "fp32 copy of the input"));
    items.push_back(Item{-1, checked_mul(rows(x), 4), false, false, "rsqrt"});
    if (is_weight(g_, n.input(1))) items.push_back(extra(x, xb, "normalized input"));
  }

  // GPT-2's gelu_new, written out in Python: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).
  // pow keeps x, tanh its output, the last product both factors. Under autocast pow runs in fp32.
  void gelu_new(const Node& n, std::vector<Item>& items) {
    int x = n.input(0);
    int64_t xb = r_.bytes[r_.base[x]], tb = s_.autocast ? 4 : xb;
    if (s_.autocast && xb != 4)
      items.push_back(extra(x, 4, "fp32 copy of the input"));
    else
      items.push_back(tensor(x, "input"));
    items.push_back(extra(x, tb, "tanh"));
    items.push_back(extra(x, tb, "1 + tanh"));
    items.push_back(extra(x, xb, "0.5 x"));
  }

  void product(const Node& n, std::vector<Item>& items) {
    bool a = n.input(0) >= 0 && !is_weight(g_, n.input(0)) &&
             g_.tensors[n.input(0)].role != TensorRole::constant;
    bool b = n.input(1) >= 0 && !is_weight(g_, n.input(1)) &&
             g_.tensors[n.input(1)].role != TensorRole::constant;
    if (a && b) {
      items.push_back(tensor(n.input(0), "input"));
      items.push_back(tensor(n.input(1), "input"));
    } else if (a && is_weight(g_, n.input(1)) && g_.tensors[n.input(1)].is_param) {
      items.push_back(tensor(n.input(0), "input"));
    }
  }

  // transformers 5.17's experts (grouped_mm): the routed rows of x, the gate-up output, the SiLU
  // output, the product and the down output, T*k*(2h + 4i) elements; grouped_mm is not autocast,
  // so under autocast they stay in the residual stream's fp32. Plus the routing indices.
  void experts(int node, std::vector<Item>& items) {
    const auto& moe = s_.forward.nodes[static_cast<size_t>(node)].cost.kernel.moe;
    if (!moe) return;
    int64_t routed = checked_mul(moe->tokens, moe->k, "routed tokens");
    int64_t per = 2 * moe->hidden + (moe->gated ? 4 : 2) * moe->inter;
    int64_t eb = s_.autocast ? s_.stream_bytes : s_.output_bytes;
    items.push_back(Item{-1, checked_mul(checked_mul(routed, per), eb, "saved bytes"), false, false,
                         "expert rows"});
    items.push_back(
        Item{-1, checked_mul(routed, 3 * 8 + 4), false, false, "routing indices and weights"});
  }

  // Ops whose backward needs none of their tensors: sums, views, casts, collectives.
  static bool saves_nothing(const std::string& op) {
    static const std::set<std::string> none{"Add",       "Sub",     "Reshape",   "Split",
                                            "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                                            "Identity",  "Concat",  "Cast",      "AllReduce",
                                            "Neg",       "Slice",   "Expand"};
    return none.count(op) > 0;
  }

  void generic(const Node& n, std::vector<Item>& items) {
    bool any = false;
    for (int t : n.inputs)
      if (t >= 0 && !is_weight(g_, t) && g_.tensors[t].role != TensorRole::constant &&
          is_float(g_.tensors[t].dtype) && g_.tensors[t].shape) {
        items.push_back(tensor(t, "inputs (generic rule)"));
        any = true;
      }
    if (any) ++generic_ops[n.display_op()];
  }

  // q*cos + rotate_half(q)*sin keeps cos and sin, computed once per forward and shared.
  void rope(const Node& n, std::vector<Item>& items) {
    if (rope_saved_) return;
    rope_saved_ = true;
    int x = n.input(0);
    int64_t rot = n.input(2) >= 0 && g_.tensors[n.input(2)].shape
                      ? g_.tensors[n.input(2)].shape->back() * 2
                      : 0;
    items.push_back(Item{-1, checked_mul(rows(x), checked_mul(rot, 2 * r_.bytes[r_.base[x]])),
                         false, false, "cos and sin"});
  }

  const StepContext& s_;
  const Graph& g_;
  const Runtime& r_;
  std::vector<bool> copied_ = std::vector<bool>(g_.tensors.size(), false);
  bool rope_saved_ = false;
};

// Full recomputation stops early (PyTorch's non-reentrant checkpoint): a layer's nodes up to its
// last saver run again, that last one only if it saves more than its input (a GEMM against a
// weight saves only its input, which the checkpoint already holds).
std::vector<bool> recomputed_nodes(const StepContext& s, const std::vector<int64_t>& node_bytes) {
  const Graph& g = s.graph;
  std::vector<bool> recomputed(g.nodes.size(), false);
  std::vector<int> last_saver(static_cast<size_t>(s.config.layers), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (s.layer_of[i] >= 0 && node_bytes[i] > 0)
      last_saver[static_cast<size_t>(s.layer_of[i])] = static_cast<int>(i);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (s.layer_of[i] < 0) continue;
    int last = last_saver[static_cast<size_t>(s.layer_of[i])];
    const Node& n = g.nodes[i];
    bool input_only =
        (n.op_type == "MatMul" || n.op_type == "FusedMatMul") && is_weight(g, n.input(1));
    recomputed[i] = static_cast<int>(i) < last || (static_cast<int>(i) == last && !input_only);
  }
  return recomputed;
}

// Per layer: what a checkpoint keeps (its input), and the backward's transients: the residual
// stream's gradient, and the gradients into and out of the layer's largest op (an estimate;
// docs/training.md).
void layer_inputs_and_transients(const StepContext& s, const std::vector<int64_t>& layer_largest,
                                 int64_t sp_divisor, SavedActivations& out) {
  int64_t hidden_elems =
      checked_mul(checked_mul(s.lowering.batch, s.lowering.seq), s.config.hidden, "hidden size");
  for (size_t l = 0; l < layer_largest.size(); ++l) {
    out.layer_input_bytes[l] = ceil_div(checked_mul(hidden_elems, s.stream_bytes), sp_divisor);
    out.layer_transient[l] =
        checked_add(checked_mul(hidden_elems, s.stream_bytes), checked_mul(layer_largest[l], 2));
  }
}

}  // namespace

SavedActivations saved_activations(const StepContext& s) {
  const Graph& g = s.graph;
  Runtime r = runtime_dtypes(s);
  SaveRules rules(s, r);
  SavedActivations out;
  size_t layers = static_cast<size_t>(s.config.layers);
  out.node_bytes.assign(g.nodes.size(), 0);
  out.node_what.assign(g.nodes.size(), "");
  out.node_param_bytes.assign(g.nodes.size(), 0);
  out.node_grad_bytes.assign(g.nodes.size(), 0);
  out.layer_bytes.assign(layers, 0);
  out.layer_input_bytes.assign(layers, 0);
  out.layer_recompute_only.assign(layers, 0);
  out.layer_transient.assign(layers, 0);
  out.layer_copy_bytes.assign(layers, 0);
  out.layer_param_bytes.assign(layers, 0);
  int64_t sp_divisor = s.train.sp ? s.lowering.tp : 1;
  std::vector<bool> saved(g.tensors.size(), false), param_seen(g.tensors.size(), false);
  std::vector<int64_t> layer_largest(layers, 0);
  bool seen_layer = false;
  int last_before = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int layer = s.layer_of[i];
    if (layer >= 0) seen_layer = true;
    if (layer < 0 && !seen_layer && n.output(0) >= 0 && is_float(g.tensors[n.output(0)].dtype))
      last_before = static_cast<int>(i);
    std::vector<Item> items = rules.of(static_cast<int>(i));
    int64_t bytes = 0;
    std::string what;
    for (const Item& it : items) {
      if (it.storage >= 0) {
        if (saved[it.storage]) continue;
        saved[it.storage] = true;
      }
      int64_t b = it.replicated ? ceil_div(it.bytes, sp_divisor) : it.bytes;
      bytes = checked_add(bytes, b, "saved bytes");
      if (it.attention_core && layer >= 0)
        out.layer_recompute_only[static_cast<size_t>(layer)] += b;
      if (b > 0) what += (what.empty() ? "" : ", ") + std::string(it.what);
    }
    // Weights: gradients (and autocast's copies) per layer; shared weights once.
    int64_t copies = 0, grads = 0;
    for (int t : n.inputs)
      if (t >= 0 && s.trainable[t]) {
        if (n.op_type == "MatMul" || n.op_type == "FusedMatMul" || n.op_type == "Gemm" ||
            n.op_type == "Conv")
          copies += rules.copy_bytes(t);  // grouped_mm: not autocast
        if (!param_seen[t]) {
          param_seen[t] = true;
          out.params = checked_add(out.params, g.tensors[t].elements(), "params");
          grads = checked_add(grads, checked_mul(g.tensors[t].elements(), s.param_bytes),
                              "gradient bytes");
        }
      }
    out.node_bytes[i] = bytes;
    out.node_what[i] = what;
    out.node_param_bytes[i] = grads;
    for (int t : {n.output(0), n.input(0)})
      if (t >= 0 && g.tensors[t].shape && is_float(g.tensors[t].dtype) && !is_weight(g, t) &&
          g.tensors[t].role != TensorRole::input)
        out.node_grad_bytes[i] += checked_mul(rules.elements(t), r.bytes[t], "gradient bytes");
    if (layer >= 0) {
      size_t l = static_cast<size_t>(layer);
      out.layer_bytes[l] += bytes;
      out.layer_copy_bytes[l] += copies;
      out.layer_param_bytes[l] += grads;
      for (int o : n.outputs)
        if (o >= 0 && g.tensors[o].shape && is_float(g.tensors[o].dtype))
          layer_largest[l] = std::max(layer_largest[l], checked_mul(rules.elements(o), r.bytes[o]));
    } else if (!seen_layer) {
      out.before_layers += bytes;
      out.embed_param_bytes += grads;
      out.head_copy_bytes += copies;  // a graph without layers: every node is "before" them
    } else {
      out.after_layers += bytes;
      out.head_copy_bytes += copies;
      out.head_param_bytes += grads;
    }
  }
  out.recomputed = recomputed_nodes(s, out.node_bytes);
  // The embeddings' dropout keeps a 1-byte mask of their output.
  if (s.config.embed_dropout > 0 && last_before >= 0)
    out.before_layers +=
        ceil_div(rules.elements(g.nodes[static_cast<size_t>(last_before)].output(0)), sp_divisor);
  layer_inputs_and_transients(s, layer_largest, sp_divisor, out);
  out.generic_ops = rules.generic_ops;
  const Tensor& logits = g.tensors[static_cast<size_t>(g.outputs.at(0))];
  out.logits_elements = logits.shape ? logits.elements() : 0;
  return out;
}

}  // namespace rooflens::training
