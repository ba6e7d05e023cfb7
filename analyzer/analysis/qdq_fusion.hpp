#pragma once
// Quantized ONNX in QDQ form (QuantizeLinear / DequantizeLinear around float ops, as ONNX
// Runtime's quantize_static and the exporters write it) as a quantized runtime runs it (TensorRT,
// ONNX Runtime's CUDA and TensorRT providers):
// - a Conv, MatMul or Gemm whose activation and weight arrive dequantized from int8 (or from
//   fp8) runs as one int8 (fp8) kernel on the tensor roof of that precision;
// - an element-wise, pooling or data-movement op whose activations arrive dequantized and whose
//   output is quantized again runs on the quantized tensors (QLinearAdd, a max pool of int8);
// - the DequantizeLinear of their activations and the QuantizeLinear of their outputs run inside
//   them, and a view between a DequantizeLinear and a QuantizeLinear runs on the quantized
//   tensor, both gone.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/ir/graph.hpp"

namespace rooflens {

struct QdqFusion {
  std::vector<std::string> fused;  // per node: why it runs inside another kernel ("": it does not)
  // Per node: the precision it runs in on the quantized tensors (int8 or fp8), else nullopt.
  std::vector<std::optional<Precision>> quantized;
  std::vector<bool> tensor_kernel;  // per node: a quantized Conv/MatMul/Gemm (the tensor roof)
};

QdqFusion find_qdq_fusion(const Graph& g);

// A quantized node's bytes: its dequantized inputs read at their quantized sources' bytes, and
// its output written quantized where a fused QuantizeLinear takes it. `bytes_of` gives a
// tensor's bytes as the node's cost reads them.
struct QdqBytes {
  int64_t read_act = 0, read_weight = 0, written = 0;
};
QdqBytes quantized_bytes(const Graph& g, const Node& n, const QdqFusion& f,
                         const std::function<int64_t(const Tensor&)>& bytes_of);

bool is_quantize(const Graph& g, const Node& n);
bool is_dequantize(const Graph& g, const Node& n);

}  // namespace rooflens
