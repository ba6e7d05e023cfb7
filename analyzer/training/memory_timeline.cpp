// The step's memory moment by moment (forward layer by layer, the loss, the backward, the
// optimizer step), built from what autograd saves (memory.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "analyzer/core/checked.hpp"
#include "analyzer/training/step.hpp"

namespace rooflens::training {
namespace {

// Optimizer states (per weight tensor for Adafactor's factoring; by element otherwise) and the
// temporaries its step allocates.
std::pair<int64_t, int64_t> optimizer_bytes(const StepContext& s) {
  int64_t states = 0, temporary = 0;
  std::vector<bool> seen(s.graph.tensors.size(), false);
  for (const Node& n : s.graph.nodes)
    for (int w : n.inputs) {
      if (w < 0 || seen[w] || !s.trainable[w]) continue;
      seen[w] = true;
      const Shape& sh = *s.graph.tensors[w].shape;
      int64_t cols = sh.empty() ? 1 : sh.back(),
              rows = sh.size() < 2 ? 1 : s.graph.tensors[w].elements() / cols;
      OptimizerWork ow = optimizer_work(s.train.optimizer, s.graph.tensors[w].elements(), rows,
                                        cols, s.param_bytes, s.state_bytes);
      states = checked_add(states, ow.state_bytes, "optimizer states");
      temporary = checked_add(temporary, ow.temporary_bytes, "optimizer temporaries");
    }
  return {states, temporary};
}

// The step's memory moment by moment: forward layer by layer, the loss, the backward (layer by
// layer, or node by node for a graph without layers), the optimizer step.
class MemoryWalk {
 public:
  MemoryWalk(const StepContext& s, const SavedActivations& saved, TrainingSummary& out)
      : s_(s),
        t_(s.train),
        saved_(saved),
        out_(out),
        layers_(saved.layer_bytes.size()),
        full_(t_.recompute == Recompute::full),
        selective_(t_.recompute == Recompute::selective) {
    logits_fp32_ = checked_mul(saved.logits_elements, 4, "logits bytes");
    logits_out_ = checked_mul(saved.logits_elements, s.output_bytes, "logits bytes");
    all_copies_ = saved.head_copy_bytes;
    for (int64_t c : saved.layer_copy_bytes) all_copies_ += c;
  }

  void model_state();
  void forward();
  void loss();
  void backward_by_node();
  void backward_by_layer();
  void optimizer_step();
  void summarize();

 private:
  int64_t kept(size_t l) const {
    if (full_) return saved_.layer_input_bytes[l];
    return selective_ ? saved_.layer_bytes[l] - saved_.layer_recompute_only[l]
                      : saved_.layer_bytes[l];
  }
  int64_t grad_share(int64_t g) const { return t_.zero >= 2 && t_.dp > 1 ? ceil_div(g, t_.dp) : g; }
  void moment(std::string name, int64_t grads, int64_t copies, int64_t act, int64_t transient) {
    MemoryMoment m;
    m.moment = std::move(name);
    m.weights = per_gpu_.weights + gathered_;
    m.optimizer = per_gpu_.optimizer;
    m.grads = std::max(grads, grads_between_) + ddp_buckets_;
    m.autocast_copies =
        sharded_weights_ ? 0 : copies;  // ZeRO-3 gathers each layer in the compute dtype
    m.saved = act;
    m.transient = transient;
    m.workspace = kCublasWorkspaceBytes;
    out_.timeline.push_back(m);
  }

  const StepContext& s_;
  const TrainingOptions& t_;
  const SavedActivations& saved_;
  TrainingSummary& out_;
  size_t layers_;
  bool full_, selective_;
  int64_t logits_fp32_ = 0, logits_out_ = 0, all_copies_ = 0, temporary_ = 0;
  ModelState per_gpu_;
  bool sharded_weights_ = false;
  int64_t gathered_ = 0, grads_between_ = 0, ddp_buckets_ = 0;
  int64_t through_ = 0, at_loss_ = 0, copies_bwd_ = 0, grads_ = 0;
};

void MemoryWalk::model_state() {
  int64_t grads_all = saved_.embed_param_bytes + saved_.head_param_bytes;
  for (int64_t p : saved_.layer_param_bytes) grads_all += p;
  ModelState whole{checked_mul(saved_.params, s_.param_bytes), grads_all, 0};
  auto [states, temporary] = optimizer_bytes(s_);
  whole.optimizer = states;
  temporary_ = temporary;
  // Mixed precision as autocast runs it: the fp32 weights are the master copy, nothing beside them.
  per_gpu_ = zero_partition(whole, t_.zero, t_.dp);
  out_.model_state = per_gpu_;
  out_.master_weight_bytes = 0;
  // Under ZeRO-3 a layer's weights are gathered whole, in the compute dtype, while it runs: two
  // layers' worth (this one and the next, prefetched); no step-long autocast cache beside them.
  sharded_weights_ = t_.zero >= 3 && t_.dp > 1;
  if (sharded_weights_) {
    int64_t largest = 0;
    for (int64_t p : saved_.layer_param_bytes) largest = std::max(largest, p);
    gathered_ = checked_mul(largest / s_.param_bytes, 2 * s_.gemm_bytes);
  }
  out_.autocast_copy_bytes = sharded_weights_ ? 0 : all_copies_;
  grads_between_ = t_.grad_accum > 1 ? per_gpu_.grads : 0;  // kept across micro-batches
  // Data parallel without ZeRO is PyTorch DDP: its reducer keeps a flat bucket copy of every
  // gradient for the whole run (gradient_as_bucket_view=False, the default), beside the .grad
  // tensors. Measured on 2 x H200 (llama-4l, batch 4 x 1024, bf16-mixed): the steady peak is the
  // one-GPU peak + the fp32 gradients' bytes, to 1 MB (tests/data/reference/multi_gpu/).
  ddp_buckets_ = t_.zero == 0 && t_.dp > 1 ? per_gpu_.grads : 0;
}

void MemoryWalk::forward() {
  moment("step start", 0, 0, 0, 0);
  through_ = saved_.before_layers;
  int64_t copies_fwd = 0;
  for (size_t l = 0; l < layers_; ++l) {
    copies_fwd += saved_.layer_copy_bytes[l];
    through_ += kept(l);
    // A checkpointed layer's own tensors live until it returns.
    moment(fmt::format("forward, layer {}", l), 0, copies_fwd, through_,
           full_ ? saved_.layer_bytes[l] : 0);
  }
}

// The loss: logits, their fp32 copy (Hugging Face upcasts before the cross-entropy) and the
// log-softmax it keeps. The 16-bit logits live until the model returns.
void MemoryWalk::loss() {
  at_loss_ = checked_add(through_, saved_.after_layers, "saved bytes");
  moment("loss forward", 0, all_copies_, checked_add(at_loss_, logits_fp32_),
         s_.output_bytes == 4 ? logits_out_ : checked_add(logits_out_, logits_fp32_));
  // Autocast's cache is cleared when the forward leaves autocast; copies saved by GEMMs stay.
  copies_bwd_ = full_ ? saved_.head_copy_bytes : all_copies_;
  moment("loss backward", 0, copies_bwd_, checked_add(at_loss_, logits_fp32_),
         checked_mul(logits_fp32_, 2));
}

// No layers to group by (an ONNX graph): the backward node by node, each freeing what its
// forward saved once it has run; the moment with the most memory is the one shown.
void MemoryWalk::backward_by_node() {
  if (layers_ != 0) return;
  int64_t acts = at_loss_, g = 0, best = -1, best_acts = 0, best_grads = 0;
  size_t at = 0;
  for (size_t i = saved_.node_bytes.size(); i-- > 0;) {
    int64_t total = checked_add(checked_add(acts, g), saved_.node_grad_bytes[i]);
    if (total > best) {
      best = total;
      at = i;
      best_acts = acts;
      best_grads = g;
    }
    acts -= saved_.node_bytes[i];
    g = checked_add(g, grad_share(saved_.node_param_bytes[i]));
  }
  if (!saved_.node_bytes.empty())
    moment(fmt::format("backward, {}", s_.graph.nodes[at].name), best_grads, copies_bwd_, best_acts,
           saved_.node_grad_bytes[at]);
}

void MemoryWalk::backward_by_layer() {
  grads_ = grad_share(saved_.head_param_bytes);
  int64_t acts = through_;
  for (size_t k = layers_; k-- > 0;) {
    int64_t layer_act =
        full_ ? checked_add(acts - kept(k), saved_.layer_bytes[k]) : acts;  // recomputed
    int64_t copies = copies_bwd_ + (full_ ? saved_.layer_copy_bytes[k] : 0);
    int64_t g = checked_add(grads_, grad_share(saved_.layer_param_bytes[k]));
    moment(fmt::format("backward, layer {}{}", k, full_ ? " (recomp.)" : ""), g, copies, layer_act,
           saved_.layer_transient[k]);
    grads_ = g;
    acts -= kept(k);
    if (!full_) copies_bwd_ -= saved_.layer_copy_bytes[k];
  }
}

void MemoryWalk::optimizer_step() {
  grads_ = checked_add(grads_, grad_share(saved_.embed_param_bytes));
  moment("optimizer step", grads_, 0, 0,
         t_.zero >= 1 && t_.dp > 1 ? ceil_div(temporary_, t_.dp) : temporary_);
}

void MemoryWalk::summarize() {
  const std::vector<MemoryMoment>& tl = out_.timeline;
  const MemoryMoment* peak = &tl.front();
  for (const MemoryMoment& m : tl)
    if (m.total() > peak->total()) peak = &m;
  out_.peak_memory_bytes = peak->total();
  out_.peak_moment = peak->moment;
  out_.activation_peak_bytes = 0;
  for (const MemoryMoment& m : tl)
    out_.activation_peak_bytes = std::max(out_.activation_peak_bytes, m.saved + m.transient);
  out_.saved_activation_bytes = checked_add(at_loss_, logits_fp32_);
  out_.logits_bytes = logits_fp32_;
}

}  // namespace

void memory_timeline(const StepContext& s, const SavedActivations& saved, TrainingSummary& out) {
  MemoryWalk walk(s, saved, out);
  walk.model_state();
  walk.forward();
  walk.loss();
  walk.backward_by_node();
  walk.backward_by_layer();
  walk.optimizer_step();
  walk.summarize();
}

}  // namespace rooflens::training
