// The element-wise kernels Hugging Face's eager PyTorch code launches for the nodes the lowering
// fuses into one: GPT-2's written-out GELU, Llama's RMSNorm, autocast's casts, dropout, the
// gradient accumulation where the residual stream branches. Bytes in the dtypes the step runs in
// (runtime_dtypes). docs/training.md lists them.
#include "analyzer/training/step.hpp"

namespace rooflens::training {
namespace {

bool is_weight(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].role == TensorRole::weight;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

class Eager {
 public:
  Eager(const StepContext& s) : s_(s), g_(s.graph), r_(runtime_dtypes(s)) {}

  EagerKernels of(const Node& n) {
    EagerKernels k;
    const std::string& op = n.op_type;
    int x = n.input(0), y = n.output(0);
    if (x < 0 || y < 0 || !g_.tensors[y].shape || !g_.tensors[x].shape) return k;
    int64_t e = elements(y), xb = bytes(x), yb = bytes(y);
    if (op == "MatMul" || op == "FusedMatMul") {
      linear(n, k);
      return k;
    }
    if (op == "Gelu" && s_.config.activation == "gelu_new") {
      gelu_new(e, xb, k);
    } else if (op == "SimplifiedLayerNormalization") {
      rms_norm(e, rows(x), xb, yb, k);
    } else if (op == "LayerNormalization") {
      k.replaces = true;
      k.forward = {{e, xb, yb}};
      k.backward = {{e, xb + 2 * yb, xb}};  // x, the gradient (and the output's statistics); dx
    } else if (op == "Swish" || op == "Gelu" || op == "Relu" || op == "Sigmoid" || op == "Tanh") {
      k.replaces = true;
      k.forward = {{e, xb, yb}};
      k.backward = {{e, xb + yb, xb}};
    } else if (op == "Mul" && n.input(1) >= 0 && !is_weight(g_, n.input(1)) &&
               g_.tensors[n.input(1)].role != TensorRole::constant) {
      int64_t b2 = bytes(n.input(1));
      k.replaces = true;
      k.forward = {{e, xb + b2, yb}};
      k.backward = {{e, yb + b2, xb}, {e, yb + xb, b2}};
    } else if (op == "Add" && ends_with(n.name, ".bias_add")) {
      k.replaces = true;          // addmm adds the bias in the GEMM
      k.backward = {{e, yb, 0}};  // the bias's gradient: a sum over rows
    } else if (op == "Add" && ends_with(n.name, "_residual")) {
      int64_t b2 = n.input(1) >= 0 ? bytes(n.input(1)) : xb;
      k.replaces = true;
      k.forward = {{e, xb + b2, yb}};
      k.backward = {
          {e, 2 * yb, yb}};  // the stream branches into the norm and the add: gradients summed
      if (s_.config.resid_dropout > 0) {  // nn.Dropout on the sublayer's output, before the add
        k.forward.push_back({e, b2, b2 + 1});
        k.backward.push_back({e, b2 + 1, b2});
      }
    } else if (op == "RotaryEmbedding") {
      // q*cos + rotate_half(q)*sin: mul, neg, cat, mul, add; the backward as many.
      int64_t cb = s_.autocast ? 4 : xb;
      k.replaces = true;
      k.forward = {
          {e, xb + cb, yb}, {e / 2, xb, xb}, {e, xb, xb}, {e, xb + cb, yb}, {e, 2 * yb, yb}};
      // Backward: the two muls' input gradients, neg's, each slice's (a zero fill and a copy),
      // and the three paths summed.
      k.backward = {{e, yb + cb, yb}, {e, yb + cb, yb}, {e / 2, yb, yb}, {e, 0, yb},
                    {e / 2, yb, yb},  {e, 0, yb},       {e / 2, yb, yb}, {e, 2 * yb, yb},
                    {e, 2 * yb, xb}};
    } else if (op == "Split") {
      k.replaces = true;                                 // torch's split returns views: no kernel
      k.backward = {{elements(x), bytes(x), bytes(x)}};  // the parts' gradients concatenated
    } else if (op == "MoE") {
      moe(n, k);
    } else if (op == "Conv" && g_.tensors[x].shape->size() == 4) {
      nchw_conversions(n, k);
    } else if (op == "Attention" && s_.autocast) {
      // SDPA is on autocast's bf16 list: q, k, v in another dtype (RoPE's fp32 under autocast) are
      // cast first, and their gradients cast back.
      for (size_t i = 0; i < 3; ++i) {
        int t = n.input(i);
        if (t < 0 || bytes(t) == 2) continue;
        k.forward.push_back({elements(t), bytes(t), 2});
        k.backward.push_back({elements(t), 2, bytes(t)});
      }
    }
    if (op == "Attention") attention_layout(n, k);
    return k;
  }

 private:
  int64_t elements(int t) const {
    return t >= 0 && g_.tensors[t].shape ? g_.tensors[t].elements() : 0;
  }
  int64_t bytes(int t) const { return r_.bytes[r_.base[t]]; }
  int64_t rows(int t) const {
    const auto& sh = *g_.tensors[t].shape;
    return sh.empty() ? 1 : elements(t) / std::max<int64_t>(1, sh.back());
  }

  // Autocast casts a GEMM's input for each GEMM that reads it, and each weight once a step; the
  // backward casts the gradients back.
  void linear(const Node& n, EagerKernels& k) {
    int x = n.input(0), w = n.input(1);
    if (!s_.autocast || !is_weight(g_, w)) return;
    int64_t ex = elements(x), xb = bytes(x);
    if (xb != s_.gemm_bytes) {
      k.forward.push_back({ex, xb, s_.gemm_bytes});
      k.backward.push_back({ex, s_.gemm_bytes, xb});
    }
    if (!cast_[w]) {
      cast_[w] = true;
      k.forward.push_back({elements(w), s_.param_bytes, s_.gemm_bytes});
      k.backward.push_back({elements(w), s_.gemm_bytes, s_.param_bytes});
    }
  }

  // 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))): eight kernels (nine with autocast's cast for
  // pow), twelve in the backward.
  void gelu_new(int64_t e, int64_t xb, EagerKernels& k) {
    int64_t tb = s_.autocast ? 4 : xb;
    k.replaces = true;
    k.forward = {{e, xb, xb}, {e, tb, tb}, {e, tb, tb}, {e, xb + tb, tb},
                 {e, tb, tb}, {e, tb, tb}, {e, tb, tb}, {e, xb + tb, tb}};
    if (s_.autocast) k.forward.push_back({e, xb, 4});
    k.backward = {{e, 2 * tb, tb}, {e, tb + xb, tb}, {e, tb, xb},     {e, 2 * tb, tb},
                  {e, tb, tb},     {e, tb, tb},      {e, tb, tb},     {e, tb, tb},
                  {e, 2 * tb, tb}, {e, 2 * tb, tb},  {e, 2 * tb, tb}, {e, tb, xb}};
  }

  // Hugging Face's RMSNorm: to(fp32), pow, mean, add, rsqrt, mul, to(dtype), mul by the weight;
  // the backward about twice as many passes over x.
  void rms_norm(int64_t e, int64_t r, int64_t xb, int64_t yb, EagerKernels& k) {
    k.replaces = true;
    if (xb != 4) k.forward.push_back({e, xb, 4});
    k.forward.insert(k.forward.end(), {{e, 4, 4}, {e, 4, 0}, {r, 4, 4}, {r, 4, 4}, {e, 4, 4}});
    if (xb != 4) k.forward.push_back({e, 4, xb});
    k.forward.push_back({e, xb, yb});
    // w * h: dh (a mul), dw (a mul and a row sum); the cast's backward; h * r: dh, dr (a mul and a
    // row sum); rsqrt's backward (three kernels on the rows); mean's (an expand); pow's (four:
    // pow, two muls, and the sum with the other path); the cast back.
    k.backward = {{e, 2 * yb, yb}, {e, 2 * yb, 4}, {e, 4, 0}};
    if (xb != 4) k.backward.push_back({e, yb, 4});
    k.backward.insert(k.backward.end(), {{e, 8, 4},
                                         {e, 8, 4},
                                         {e, 4, 0},
                                         {r, 8, 4},
                                         {r, 8, 4},
                                         {r, 8, 4},
                                         {e, 4, 4},
                                         {e, 4, 4},
                                         {e, 8, 4},
                                         {e, 8, 4},
                                         {e, 8, 4}});
    if (xb != 4) k.backward.push_back({e, 4, xb});
  }

  // Hugging Face's grouped_mm experts around the expert GEMMs (the node's own cost): the top-k
  // weights renormalised, the assignments sorted and counted (histc, cumsum), the rows gathered
  // in expert order, SiLU and the gate product, the routing weights applied, the rows put back
  // and summed over the k choices. Small kernels on T*k routing entries; the rest move T*k rows.
  // The backward's index ops sort again (index_put with accumulation). torch._grouped_mm has no
  // fp32 kernel: its fallback reads the group offsets on the host, once per call (2 forward, 4
  // backward), counted in the H100 traces of scripts/training_kernel_breakdown.py.
  void moe(const Node& n, EagerKernels& k) {
    int x = n.input(0), gate = n.input(2);
    if (gate < 0 || !g_.tensors[gate].shape || g_.tensors[gate].shape->size() != 3) return;
    int64_t hidden = g_.tensors[x].shape->back(), inter = (*g_.tensors[gate].shape)[2];
    int64_t topk = std::max<int64_t>(1, s_.config.experts_per_token);
    int64_t rows = elements(x) / std::max<int64_t>(1, hidden) * topk;
    int64_t xb = bytes(x), ab = s_.autocast ? 4 : xb;  // grouped_mm runs in fp32 under autocast
    Pass route{rows, 8, 8}, row{rows * hidden, ab, ab}, act{rows * inter, ab, ab};
    auto repeat = [](std::vector<Pass>& v, const Pass& p, int count) {
      v.insert(v.end(), static_cast<size_t>(count), p);
    };
    repeat(k.forward, route, 16);  // div, histc, sort, cumsum, arange, floor_divide, ge, clamp, fill
    k.forward.push_back(row);      // gather the rows
    repeat(k.forward, route, 4);   // the gathers' index math, the grouped GEMMs' offsets
    k.forward.push_back({act.elements, ab, ab});      // SiLU
    k.forward.push_back({act.elements, 2 * ab, ab});  // times up
    k.forward.push_back({row.elements, ab + 4, ab});  // routing weights
    repeat(k.forward, row, 3);                        // masked fills, index_put
    repeat(k.forward, route, 2);
    k.forward.push_back({row.elements, ab, ab / topk});  // sum over k
    repeat(k.backward, route, 40);                       // the index backwards' sorts and scatters
    k.backward.push_back({row.elements, 2 * ab, ab});
    k.backward.push_back({row.elements, 2 * ab, ab});  // routing weights: d rows, d weights
    k.backward.push_back({row.elements, 2 * ab, 4});
    k.backward.push_back({act.elements, 3 * ab, ab});  // the gate product, SiLU
    k.backward.push_back({act.elements, 3 * ab, ab});
    k.backward.push_back({act.elements, 2 * ab, ab});
    repeat(k.backward, row, 3);  // masked fills, the sum's expand
    repeat(k.backward, route, 16);
    bool fp32 = ab == 4;
    k.forward_syncs = fp32 ? 2 : 0;
    k.backward_syncs = fp32 ? 4 : 0;
  }

  // cuDNN's convolution kernels work in NHWC: for NCHW tensors it converts the input and the
  // output in the forward, and the output's gradient, the input (for the weight gradient) and
  // the input's gradient in the backward (the nchwToNhwc / nhwcToNchw kernels of the ResNet-50
  // traces, about four per convolution).
  void nchw_conversions(const Node& n, EagerKernels& k) {
    int x = n.input(0), y = n.output(0);
    Pass in{elements(x), bytes(x), bytes(x)}, out{elements(y), bytes(y), bytes(y)};
    k.forward.push_back(in);
    k.forward.push_back(out);
    k.backward.push_back(out);
    k.backward.push_back(in);
    if (g_.tensors[x].role != TensorRole::input) k.backward.push_back(in);
  }

  // Separate q, k, v projections viewed as heads and transposed (Llama-style): the gradients
  // SDPA returns are copied back to the projections' layout (ViewBackward's copies).
  void attention_layout(const Node& n, EagerKernels& k) {
    for (size_t i = 0; i < 3; ++i) {
      int t = n.input(i);
      if (t < 0 || !g_.tensors[t].shape) return;
      int p = g_.tensors[t].producer;
      if (p >= 0 && g_.nodes[p].op_type == "Split") return;  // GPT-2: the split's cat does it
    }
    for (size_t i = 0; i < 3; ++i) {
      int t = n.input(i);
      k.backward.push_back({elements(t), bytes(t), bytes(t)});
    }
  }

  const StepContext& s_;
  const Graph& g_;
  RuntimeDtypes r_;
  std::vector<bool> cast_ = std::vector<bool>(g_.tensors.size(), false);
};

}  // namespace

std::vector<EagerKernels> eager_kernels(const StepContext& s) {
  Eager eager(s);
  std::vector<EagerKernels> out;
  out.reserve(s.graph.nodes.size());
  for (const Node& n : s.graph.nodes) out.push_back(eager.of(n));
  return out;
}

}  // namespace rooflens::training
