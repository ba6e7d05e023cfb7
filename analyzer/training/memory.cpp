// What autograd keeps from the forward for the backward, op by op as PyTorch and Hugging Face
// save it (docs/training.md lists every op's rule and where it was checked). The memory timeline
// of the step built from it: memory_timeline.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "analyzer/core/checked.hpp"
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
std::vector<bool> trainable_weights(const Graph& g) {
  std::vector<bool> out(g.tensors.size(), false);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& x = g.tensors[t];
    out[t] = x.role == TensorRole::weight && x.is_param && is_float(x.dtype) &&
             x.name.find(".rotary_emb.") == std::string::npos;
  }
  for (const Node& n : g.nodes)
    if (const TrainingRule* rule = training_rule(n.op_type))
      for (size_t i : rule->buffer_inputs)
        if (n.input(i) >= 0) out[n.input(i)] = false;
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
    const TrainingRule* rule = training_rule(n.op_type);
    DtypeQuery q{s, n, r};
    int64_t out = rule && rule->output_bytes ? rule->output_bytes(q) : q.promoted();
    for (int o : n.outputs) {
      if (o < 0) continue;
      if (is_float(g.tensors[o].dtype) && out > 0) r.bytes[o] = out;
      if (rule && rule->view && n.input(0) >= 0) r.base[o] = r.base[n.input(0)];
    }
  }
  return r;
}

namespace {

std::vector<SavedItem> saved_by(SaveContext& c, size_t node) {
  c.index = node;
  std::vector<SavedItem> items;
  const TrainingRule* rule = training_rule(c.node().op_type);
  if (rule && rule->saves)
    rule->saves(c, items);
  else
    default_saves(c, items);
  return items;
}

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
    const TrainingRule* rule = training_rule(n.op_type);
    bool input_only = rule && rule->weight_gemm && is_weight(g, n.input(1));
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

namespace {

SavedActivations sized(size_t nodes, size_t layers) {
  SavedActivations out;
  out.node_bytes.assign(nodes, 0);
  out.node_what.assign(nodes, "");
  out.node_param_bytes.assign(nodes, 0);
  out.node_grad_bytes.assign(nodes, 0);
  for (auto* v : {&out.layer_bytes, &out.layer_input_bytes, &out.layer_recompute_only,
                  &out.layer_transient, &out.layer_copy_bytes, &out.layer_param_bytes})
    v->assign(layers, 0);
  return out;
}

// One node's saved tensors counted: storage another node saved already is not counted again, a
// replicated tensor is split by sequence parallelism.
struct NodeSaved {
  int64_t bytes = 0, attention_core = 0;
  std::string what;
};
NodeSaved count_saved(const std::vector<SavedItem>& items, std::vector<bool>& saved,
                      int64_t sp_divisor) {
  NodeSaved out;
  for (const SavedItem& it : items) {
    if (it.storage >= 0) {
      if (saved[it.storage]) continue;
      saved[it.storage] = true;
    }
    int64_t b = it.replicated ? ceil_div(it.bytes, sp_divisor) : it.bytes;
    out.bytes = checked_add(out.bytes, b, "saved bytes");
    if (it.attention_core) out.attention_core += b;
    if (b > 0) out.what += (out.what.empty() ? "" : ", ") + std::string(it.what);
  }
  return out;
}

// A node's weights: their gradients (shared weights once) and autocast's copies.
struct NodeWeights {
  int64_t copies = 0, grads = 0;
};
NodeWeights weights_of(const StepContext& s, const Node& n, SaveContext& rules,
                       std::vector<bool>& param_seen, SavedActivations& out) {
  const Graph& g = s.graph;
  NodeWeights w;
  const TrainingRule* rule = training_rule(n.op_type);
  for (int t : n.inputs)
    if (t >= 0 && s.trainable[t]) {
      if (rule && rule->weight_gemm) w.copies += rules.copy_bytes(t);  // grouped_mm: not autocast
      if (!param_seen[t]) {
        param_seen[t] = true;
        out.params = checked_add(out.params, g.tensors[t].elements(), "params");
        w.grads = checked_add(w.grads, checked_mul(g.tensors[t].elements(), s.param_bytes),
                              "gradient bytes");
      }
    }
  return w;
}

}  // namespace

SavedActivations saved_activations(const StepContext& s) {
  const Graph& g = s.graph;
  RuntimeDtypes r = runtime_dtypes(s);
  SaveContext rules(s, r);
  size_t layers = static_cast<size_t>(s.config.layers);
  SavedActivations out = sized(g.nodes.size(), layers);
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
    NodeSaved ns = count_saved(saved_by(rules, i), saved, sp_divisor);
    NodeWeights w = weights_of(s, n, rules, param_seen, out);
    out.node_bytes[i] = ns.bytes;
    out.node_what[i] = ns.what;
    out.node_param_bytes[i] = w.grads;
    for (int t : {n.output(0), n.input(0)})
      if (t >= 0 && g.tensors[t].shape && is_float(g.tensors[t].dtype) && !is_weight(g, t) &&
          g.tensors[t].role != TensorRole::input)
        out.node_grad_bytes[i] += checked_mul(rules.elements(t), r.bytes[t], "gradient bytes");
    if (layer >= 0) {
      size_t l = static_cast<size_t>(layer);
      out.layer_bytes[l] += ns.bytes;
      out.layer_recompute_only[l] += ns.attention_core;
      out.layer_copy_bytes[l] += w.copies;
      out.layer_param_bytes[l] += w.grads;
      for (int o : n.outputs)
        if (o >= 0 && g.tensors[o].shape && is_float(g.tensors[o].dtype))
          layer_largest[l] = std::max(layer_largest[l], checked_mul(rules.elements(o), r.bytes[o]));
    } else if (!seen_layer) {
      out.before_layers += ns.bytes;
      out.embed_param_bytes += w.grads;
      out.head_copy_bytes += w.copies;  // a graph without layers: every node is "before" them
    } else {
      out.after_layers += ns.bytes;
      out.head_copy_bytes += w.copies;
      out.head_param_bytes += w.grads;
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
