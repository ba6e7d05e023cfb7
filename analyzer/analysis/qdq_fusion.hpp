#pragma once
// Quantized ONNX in QDQ form (QuantizeLinear / DequantizeLinear around float ops, as ONNX
// Runtime's quantize_static and the exporters write it) as an int8 runtime runs it (TensorRT,
// ONNX Runtime's CUDA and TensorRT providers): a Conv, MatMul or Gemm whose activation and
// weight arrive dequantized from int8 runs as one int8 kernel; the DequantizeLinear of its
// activation and the QuantizeLinear of its output run inside it, and a view between a
// DequantizeLinear and a QuantizeLinear runs on the int8 tensor, both gone.
#include <functional>
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
// output written in int8 where a fused QuantizeLinear takes it. `bytes_of` gives a tensor's bytes
// as the node's cost reads them.
struct QdqBytes {
  int64_t read_act = 0, read_weight = 0, written = 0;
};
QdqBytes int8_bytes(const Graph& g, const Node& n, const QdqFusion& f,
                    const std::function<int64_t(const Tensor&)>& bytes_of);

bool is_quantize(const Graph& g, const Node& n);
bool is_dequantize(const Graph& g, const Node& n);

}  // namespace rooflens
