// Activations, products and sums in training: what their backward keeps, GPT-2's gelu_new and
// the residual stream's adds as the eager kernels Hugging Face's Python launches.
#include "analyzer/training/op_rules.hpp"

namespace rooflens::training {
namespace {

bool gelu_new(const StepContext& s) {
  return s.config.activation == "gelu_new";
}

// GPT-2's gelu_new, written out in Python: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).
// pow keeps x, tanh its output, the last product both factors. Under autocast pow runs in fp32.
void gelu_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int x = c.node().input(0);
  if (!gelu_new(c.step)) {
    items.push_back(c.tensor(x, "input"));
    return;
  }
  int64_t xb = c.bytes(x), tb = c.step.autocast ? 4 : xb;
  if (c.step.autocast && xb != 4)
    items.push_back(c.extra(x, 4, "fp32 copy of the input"));
  else
    items.push_back(c.tensor(x, "input"));
  items.push_back(c.extra(x, tb, "tanh"));
  items.push_back(c.extra(x, tb, "1 + tanh"));
  items.push_back(c.extra(x, xb, "0.5 x"));
}

// One kernel each way: the backward reads the input (or output) and the gradient.
void activation_eager(EagerContext& c, EagerKernels& k) {
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), yb = c.bytes(c.y());
  k.replaces = true;
  k.forward = {{e, xb, yb}};
  k.backward = {{e, xb + yb, xb}};
}

// gelu_new's eight kernels (nine with autocast's cast for pow), twelve in the backward.
void gelu_eager(EagerContext& c, EagerKernels& k) {
  if (!gelu_new(c.step)) return activation_eager(c, k);
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), tb = c.step.autocast ? 4 : xb;
  k.replaces = true;
  k.forward = {{e, xb, xb}, {e, tb, tb}, {e, tb, tb}, {e, xb + tb, tb},
               {e, tb, tb}, {e, tb, tb}, {e, tb, tb}, {e, xb + tb, tb}};
  if (c.step.autocast) k.forward.push_back({e, xb, 4});
  k.backward = {{e, 2 * tb, tb}, {e, tb + xb, tb}, {e, tb, xb},     {e, 2 * tb, tb},
                {e, tb, tb},     {e, tb, tb},      {e, tb, tb},     {e, tb, tb},
                {e, 2 * tb, tb}, {e, 2 * tb, tb},  {e, 2 * tb, tb}, {e, tb, xb}};
}

// A product keeps both factors when both are activations, the activation when the other is a
// learned weight (a scale), nothing against a constant.
void product_saves(SaveContext& c, std::vector<SavedItem>& items) {
  const Node& n = c.node();
  bool a = is_activation(c.graph, n.input(0)), b = is_activation(c.graph, n.input(1));
  if (a && b) {
    items.push_back(c.tensor(n.input(0), "input"));
    items.push_back(c.tensor(n.input(1), "input"));
  } else if (a && is_weight(c.graph, n.input(1)) && c.graph.tensors[n.input(1)].is_param) {
    items.push_back(c.tensor(n.input(0), "input"));
  }
}

// Two activations multiplied (a gate): one kernel forward, each factor's gradient backward.
void mul_eager(EagerContext& c, EagerKernels& k) {
  int b = c.node().input(1);
  if (!is_activation(c.graph, b)) return;
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), yb = c.bytes(c.y()), b2 = c.bytes(b);
  k.replaces = true;
  k.forward = {{e, xb + b2, yb}};
  k.backward = {{e, yb + b2, xb}, {e, yb + xb, b2}};
}

// The residual stream's dropout (nn.Dropout on the sublayer's output) keeps a 1-byte mask.
void add_saves(SaveContext& c, std::vector<SavedItem>& items) {
  int y = c.node().output(0);
  if (c.node().role == NodeRole::residual_add && c.step.config.resid_dropout > 0 && y >= 0)
    items.push_back(SavedItem{-1, c.elements(y), true, false, "dropout mask"});
}

void add_eager(EagerContext& c, EagerKernels& k) {
  const Node& n = c.node();
  int64_t e = c.elements(c.y()), xb = c.bytes(c.x()), yb = c.bytes(c.y());
  if (n.role == NodeRole::bias_add) {
    k.replaces = true;          // addmm adds the bias in the GEMM
    k.backward = {{e, yb, 0}};  // the bias's gradient: a sum over rows
  } else if (n.role == NodeRole::residual_add) {
    int64_t b2 = n.input(1) >= 0 ? c.bytes(n.input(1)) : xb;
    k.replaces = true;
    k.forward = {{e, xb + b2, yb}};
    // the stream branches into the norm and the add: its gradients summed
    k.backward = {{e, 2 * yb, yb}};
    if (c.step.config.resid_dropout > 0) {  // the sublayer's output dropped before the add
      k.forward.push_back({e, b2, b2 + 1});
      k.backward.push_back({e, b2 + 1, b2});
    }
  }
}

}  // namespace

void register_elementwise_training_rules(TrainingRules& r) {
  TrainingRule gelu;
  gelu.ops = {"Gelu"};
  // gelu_new's pow runs in fp32 under autocast
  gelu.output_bytes = [](const DtypeQuery& q) {
    return q.step.autocast && gelu_new(q.step) ? 4 : q.promoted();
  };
  gelu.saves = gelu_saves;
  gelu.eager = gelu_eager;
  r.push_back(gelu);

  auto keeps = [](int which, const char* what) {
    return [which, what](SaveContext& c, std::vector<SavedItem>& items) {
      const Node& n = c.node();
      items.push_back(c.tensor(which == 0 ? n.input(0) : n.output(0), what));
    };
  };
  TrainingRule on_input;  // their backward uses the input
  on_input.saves = keeps(0, "input");
  TrainingRule swish = on_input;
  swish.ops = {"Swish"};
  swish.eager = activation_eager;
  r.push_back(swish);
  on_input.ops = {"QuickGelu", "Erf"};
  r.push_back(on_input);

  TrainingRule on_output;  // their backward uses the result
  on_output.saves = keeps(1, "output");
  TrainingRule pointwise = on_output;
  pointwise.ops = {"Relu", "Tanh", "Sigmoid"};
  pointwise.eager = activation_eager;
  r.push_back(pointwise);
  on_output.ops = {"Softmax"};
  r.push_back(on_output);

  TrainingRule mul;
  mul.ops = {"Mul"};
  mul.saves = product_saves;
  mul.eager = mul_eager;
  r.push_back(mul);
  TrainingRule div;
  div.ops = {"Div"};
  div.saves = product_saves;
  r.push_back(div);

  TrainingRule add;
  add.ops = {"Add"};
  add.output_bytes = [](const DtypeQuery& q) {  // the bias is part of addmm
    return q.node.role == NodeRole::bias_add ? q.in(0) : q.promoted();
  };
  add.saves = add_saves;
  add.eager = add_eager;
  r.push_back(add);

  // Ops whose backward needs none of their tensors: differences, negation, casts, joins.
  TrainingRule none;
  none.ops = {"Sub", "Neg", "Cast", "Concat", "Slice", "Expand", "AllReduce", "AllToAll"};
  none.saves = saves_nothing;
  r.push_back(none);
}

}  // namespace rooflens::training
