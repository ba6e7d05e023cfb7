#pragma once
// Quantized ONNX in QDQ form (QuantizeLinear / DequantizeLinear around float ops, as ONNX
// Runtime's quantize_static and the exporters write it) as an int8 runtime runs it (TensorRT,
// ONNX Runtime's CUDA and TensorRT providers): a Conv, MatMul or Gemm whose activation and
// weight arrive dequantized from int8 runs as one int8 kernel; the DequantizeLinear of its
// activation and the QuantizeLinear of its output run inside it, and a view between a
// DequantizeLinear and a QuantizeLinear runs on the int8 tensor, both gone.
#include <string>
#include <vector>

#include "analyzer/ir/graph.hpp"

namespace rooflens {

struct QdqFusion {
  std::vector<std::string> fused;  // per node: why it runs inside another kernel ("": it does not)
  std::vector<bool> int8_compute;  // per node: a Conv/MatMul/Gemm run as an int8 kernel
};

QdqFusion find_qdq_fusion(const Graph& g);

// The int8 node's bytes: its dequantized inputs read at their quantized sources' bytes, and its
// output written in int8 where a fused QuantizeLinear takes it.
struct QdqBytes {
  int64_t read_act = 0, read_weight = 0, written = 0;
};
// `float_bytes` gives a tensor's bytes as the node's cost read them.
template <class BytesOf>
QdqBytes int8_bytes(const Graph& g, const Node& n, const QdqFusion& f, BytesOf float_bytes);

bool is_quantize(const Graph& g, const Node& n);
bool is_dequantize(const Graph& g, const Node& n);

template <class BytesOf>
QdqBytes int8_bytes(const Graph& g, const Node& n, const QdqFusion& f, BytesOf float_bytes) {
  QdqBytes b;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    int t = n.inputs[i];
    if (t < 0) continue;
    const Tensor& in = g.tensors[t];
    int64_t bytes = float_bytes(in);
    if (in.producer >= 0 && is_dequantize(g, g.nodes[in.producer])) {
      // The quantized source, its scale and zero point.
      bytes = 0;
      for (int s : g.nodes[in.producer].inputs)
        if (s >= 0) bytes += float_bytes(g.tensors[s]);
    }
    (in.is_static ? b.read_weight : b.read_act) += bytes;
  }
  for (int t : n.outputs) {
    const Tensor& out = g.tensors[t];
    bool quantized = out.consumers.size() == 1 && !f.fused[out.consumers[0]].empty();
    b.written +=
        quantized ? float_bytes(g.tensors[g.nodes[out.consumers[0]].outputs[0]]) : float_bytes(out);
  }
  return b;
}

}  // namespace rooflens
