#include "analyzer/analysis/qdq_fusion.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rooflens {

namespace {

bool quantized_dtype(DType d) {
  return d == DType::i8 || d == DType::u8;
}

bool onnx_or_ms(const Node& n) {
  return n.domain.empty() || n.domain == "com.microsoft";
}

bool int8_kernel_op(const Node& n) {
  return n.domain.empty() && (n.op_type == "Conv" || n.op_type == "MatMul" || n.op_type == "Gemm");
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

}  // namespace

bool is_dequantize(const Graph& g, const Node& n) {
  return onnx_or_ms(n) && n.op_type == "DequantizeLinear" && n.input(0) >= 0 &&
         quantized_dtype(g.tensors[n.input(0)].dtype);
}

bool is_quantize(const Graph& g, const Node& n) {
  return onnx_or_ms(n) && n.op_type == "QuantizeLinear" && !n.outputs.empty() &&
         n.outputs[0] >= 0 && quantized_dtype(g.tensors[n.outputs[0]].dtype);
}

QdqFusion find_qdq_fusion(const Graph& g) {
  QdqFusion f;
  f.fused.assign(g.nodes.size(), "");
  f.int8_compute.assign(g.nodes.size(), false);
  // A Conv/MatMul/Gemm with a dequantized activation and a dequantized constant weight.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!int8_kernel_op(n) || n.inputs.size() < 2) continue;
    const Node *act = producer(g, n.input(0)), *weight = producer(g, n.input(1));
    f.int8_compute[i] = act && weight && is_dequantize(g, *act) && is_dequantize(g, *weight) &&
                        !g.tensors[n.input(0)].is_static && g.tensors[n.input(1)].is_static;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (is_dequantize(g, n) && !g.tensors[n.input(0)].is_static && !n.outputs.empty() &&
        n.outputs[0] >= 0) {
      // An activation's DequantizeLinear that only int8 kernels read.
      const Tensor& out = g.tensors[n.outputs[0]];
      bool all_int8 = !out.consumers.empty() && !out.is_graph_output &&
                      std::all_of(out.consumers.begin(), out.consumers.end(),
                                  [&](int c) { return f.int8_compute[c]; });
      if (all_int8)
        f.fused[i] = fmt::format("fused: the int8 {} reads the quantized tensor",
                                 g.nodes[out.consumers[0]].op_type);
      // DequantizeLinear -> view -> QuantizeLinear: the view runs on the int8 tensor.
      int v = sole_consumer(g, n);
      int q = v >= 0 && view_op(g.nodes[v]) ? sole_consumer(g, g.nodes[v]) : -1;
      if (q >= 0 && is_quantize(g, g.nodes[q])) {
        f.fused[i] = fmt::format("fused: the {} between it and a QuantizeLinear runs on int8",
                                 g.nodes[v].op_type);
        f.fused[q] = f.fused[i];
      }
    }
    if (f.int8_compute[i]) {
      int q = sole_consumer(g, n);
      if (q >= 0 && is_quantize(g, g.nodes[q]))
        f.fused[q] = fmt::format("fused: the int8 {} writes its output quantized", n.op_type);
    }
  }
  return f;
}

QdqBytes int8_bytes(const Graph& g, const Node& n, const QdqFusion& f,
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
    const Tensor& out = g.tensors[t];
    bool quantized = out.consumers.size() == 1 && !f.fused[out.consumers[0]].empty();
    b.written +=
        quantized ? bytes_of(g.tensors[g.nodes[out.consumers[0]].outputs[0]]) : bytes_of(out);
  }
  return b;
}

}  // namespace rooflens
