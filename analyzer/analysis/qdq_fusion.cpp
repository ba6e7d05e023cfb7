#include "analyzer/analysis/qdq_fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace rooflens {

namespace {

// The precision a runtime computes in on tensors stored as `d`: 8-bit integers or 8-bit floats.
std::optional<Precision> quantized_precision(DType d) {
  Precision p = precision_of(d);
  if (p == Precision::int8 || p == Precision::fp8) return p;
  return std::nullopt;
}

bool onnx_or_ms(const Node& n) {
  return n.domain.empty() || n.domain == "com.microsoft";
}

bool tensor_op(const Node& n) {
  return n.domain.empty() && (n.op_type == "Conv" || n.op_type == "MatMul" || n.op_type == "Gemm");
}

// Ops a quantized runtime runs on the quantized tensors when Q/DQ surround them: ONNX Runtime's
// QLinear element-wise and pooling kernels (QLinearAdd, QLinearMul, QLinearSigmoid,
// QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat,
// QLinearSoftmax), and the ops whose quantized form only moves or compares the stored values
// (ONNX Runtime's QDQ transformer drops their Q/DQ; TensorRT propagates Q/DQ across them).
bool quantized_elementwise_op(const Node& n) {
  static const std::set<std::string> ops{"Add",           "Mul",         "Sigmoid",
                                         "LeakyRelu",     "AveragePool", "Concat",
                                         "Softmax",       "MaxPool",     "GlobalAveragePool",
                                         "GlobalMaxPool", "Relu",        "Clip",
                                         "Transpose",     "Resize",      "Gather",
                                         "Split",         "Pad",         "Slice",
                                         "DepthToSpace",  "SpaceToDepth"};
  return n.domain.empty() && ops.count(n.op_type) > 0;
}

// Ops that move no data on the GPU: they run on the int8 tensor as well as on the float one.
bool view_op(const Node& n) {
  return n.domain.empty() && (n.op_type == "Flatten" || n.op_type == "Reshape" ||
                              n.op_type == "Squeeze" || n.op_type == "Unsqueeze");
}

// The node that produces tensor t, when t has one.
const Node* producer(const Graph& g, int t) {
  return t >= 0 && g.tensors[t].producer >= 0 ? &g.nodes[g.tensors[t].producer] : nullptr;
}

// The single consumer of a node's only output, when it has exactly one and is not a graph output.
int sole_consumer(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] < 0) return -1;
  const Tensor& out = g.tensors[n.outputs[0]];
  if (out.is_graph_output || out.consumers.size() != 1) return -1;
  return out.consumers[0];
}

// The precision a DequantizeLinear's source is stored in.
std::optional<Precision> dequantized_from(const Graph& g, const Node& dq) {
  return quantized_precision(g.tensors[dq.input(0)].dtype);
}

// A Conv/MatMul/Gemm with a dequantized activation and a dequantized constant weight of the same
// kind: the precision its kernel runs in.
std::optional<Precision> tensor_kernel_precision(const Graph& g, const Node& n) {
  if (!tensor_op(n) || n.inputs.size() < 2) return std::nullopt;
  const Node *act = producer(g, n.input(0)), *weight = producer(g, n.input(1));
  if (!act || !weight || !is_dequantize(g, *act) || !is_dequantize(g, *weight) ||
      g.tensors[n.input(0)].is_static || !g.tensors[n.input(1)].is_static)
    return std::nullopt;
  auto p = dequantized_from(g, *act);
  return p == dequantized_from(g, *weight) ? p : std::nullopt;
}

// An element-wise/pooling/data-movement op whose activations all arrive dequantized (from one
// kind) and whose output only a QuantizeLinear of that kind reads.
std::optional<Precision> elementwise_precision(const Graph& g, const Node& n) {
  if (!quantized_elementwise_op(n) || n.outputs.size() != 1) return std::nullopt;
  std::optional<Precision> p;
  bool any = false;
  for (int t : n.inputs) {
    if (t < 0 || g.tensors[t].is_static || !is_float(g.tensors[t].dtype)) continue;
    const Node* dq = producer(g, t);
    if (!dq || !is_dequantize(g, *dq)) return std::nullopt;
    auto from = dequantized_from(g, *dq);
    if (any && from != p) return std::nullopt;
    p = from;
    any = true;
  }
  int q = any ? sole_consumer(g, n) : -1;
  if (q < 0 || !is_quantize(g, g.nodes[q]) ||
      quantized_precision(g.tensors[g.nodes[q].outputs[0]].dtype) != p)
    return std::nullopt;
  return p;
}

}  // namespace

bool is_dequantize(const Graph& g, const Node& n) {
  return onnx_or_ms(n) && n.op_type == "DequantizeLinear" && n.input(0) >= 0 &&
         quantized_precision(g.tensors[n.input(0)].dtype).has_value();
}

bool is_quantize(const Graph& g, const Node& n) {
  return onnx_or_ms(n) && n.op_type == "QuantizeLinear" && !n.outputs.empty() &&
         n.outputs[0] >= 0 && quantized_precision(g.tensors[n.outputs[0]].dtype).has_value();
}

QdqFusion find_qdq_fusion(const Graph& g) {
  QdqFusion f;
  f.fused.assign(g.nodes.size(), "");
  f.quantized.assign(g.nodes.size(), std::nullopt);
  f.tensor_kernel.assign(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    f.quantized[i] = tensor_kernel_precision(g, n);
    f.tensor_kernel[i] = f.quantized[i].has_value();
    if (!f.quantized[i]) f.quantized[i] = elementwise_precision(g, n);
  }
  auto kind = [&](size_t i) { return precision_name(*f.quantized[i]); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (is_dequantize(g, n) && !g.tensors[n.input(0)].is_static && !n.outputs.empty() &&
        n.outputs[0] >= 0) {
      // An activation's DequantizeLinear that only quantized kernels read.
      const Tensor& out = g.tensors[n.outputs[0]];
      bool all_quantized = !out.consumers.empty() && !out.is_graph_output &&
                           std::all_of(out.consumers.begin(), out.consumers.end(),
                                       [&](int c) { return f.quantized[c].has_value(); });
      if (all_quantized) {
        int c = out.consumers[0];
        f.fused[i] =
            fmt::format("fused: the {} {} reads the quantized tensor", kind(c), g.nodes[c].op_type);
      }
      // DequantizeLinear -> view -> QuantizeLinear: the view runs on the quantized tensor.
      int v = sole_consumer(g, n);
      int q = v >= 0 && view_op(g.nodes[v]) ? sole_consumer(g, g.nodes[v]) : -1;
      if (q >= 0 && is_quantize(g, g.nodes[q])) {
        f.fused[i] = fmt::format("fused: the {} between it and a QuantizeLinear runs on {}",
                                 g.nodes[v].op_type, precision_name(*dequantized_from(g, n)));
        f.fused[q] = f.fused[i];
      }
    }
    if (f.quantized[i]) {
      int q = sole_consumer(g, n);
      if (q >= 0 && is_quantize(g, g.nodes[q]))
        f.fused[q] =
            fmt::format("fused: the {} {} writes its output quantized", kind(i), n.op_type);
    }
  }
  return f;
}

QdqBytes quantized_bytes(const Graph& g, const Node& n, const QdqFusion& f,
                         const std::function<int64_t(const Tensor&)>& bytes_of) {
  QdqBytes b;
  for (int t : n.inputs) {
    if (t < 0) continue;
    const Tensor& in = g.tensors[t];
    int64_t bytes = bytes_of(in);
    if (in.producer >= 0 && is_dequantize(g, g.nodes[in.producer])) {
      // The quantized source, its scale and zero point.
      bytes = 0;
      for (int s : g.nodes[in.producer].inputs)
        if (s >= 0) bytes += bytes_of(g.tensors[s]);
    }
    (in.is_static ? b.read_weight : b.read_act) += bytes;
  }
  for (int t : n.outputs) {
    if (t < 0) continue;
    const Tensor& out = g.tensors[t];
    bool quantized = out.consumers.size() == 1 && !f.fused[out.consumers[0]].empty();
    b.written +=
        quantized ? bytes_of(g.tensors[g.nodes[out.consumers[0]].outputs[0]]) : bytes_of(out);
  }
  return b;
}

}  // namespace rooflens
