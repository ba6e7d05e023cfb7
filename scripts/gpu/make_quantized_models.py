"""Quantized ONNX test models (tests/test_quantized_onnx.cpp), each made by ONNX Runtime's own
quantization tools from one small float model built with onnx.helper:

  float:   x [1,3,8,8] -> Conv (4 filters 3x3, bias) -> Relu -> Flatten [1,144] -> MatMul [144,32]
  qoperator.onnx  quantize_static, QuantFormat.QOperator (QLinearConv, QLinearMatMul)
  qdq.onnx        quantize_static, QuantFormat.QDQ (QuantizeLinear/DequantizeLinear pairs)
  dynamic.onnx    quantize_dynamic (DynamicQuantizeLinear, ConvInteger, MatMulInteger)
  nbits.onnx      MatMulNBitsQuantizer, 4 bits, block 32 (com.microsoft MatMulNBits)
  nbits_gather.onnx  ids [2,5] -> Gather of an embedding [256,128] -> MatMul [128,64], both through
                  MatMulNBitsQuantizer (4 bits, block 32, op_types_to_quantize Gather and MatMul):
                  GatherBlockQuantized (int4 table) and MatMulNBits
  qdq_fp8.onnx    quantize_static, QuantFormat.QDQ, float8 e4m3fn activations and weights
  residual:  x [1,8,8,8] -> Conv (8 filters 3x3, pad 1, bias) -> Relu -> Add x -> MaxPool 2x2
             -> Flatten [1,128] -> MatMul [128,32]
  qdq_residual.onnx  quantize_static, QuantFormat.QDQ: the Add and the MaxPool between Q/DQ pairs

Run: python scripts/gpu/make_quantized_models.py   (onnx, onnxruntime and numpy from PyPI)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "onnx", "quantized")


def float_model():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((144, 32)).astype(np.float32), "fc")]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"), h.make_node("Relu", ["c"], ["r"], name="relu"),
             h.make_node("Flatten", ["r"], ["f"], name="flatten"), h.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    g = h.make_graph(nodes, "small", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 32])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def residual_model():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((128, 32)).astype(np.float32), "fc")]
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"], name="relu"), h.make_node("Add", ["r", "x"], ["s"], name="add"),
             h.make_node("MaxPool", ["s"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             h.make_node("Flatten", ["p"], ["f"], name="flatten"), h.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    g = h.make_graph(nodes, "residual", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 8, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 32])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 19)])


def embedding_model():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((256, 128)).astype(np.float32), "embed"),
             numpy_helper.from_array(rng.standard_normal((128, 64)).astype(np.float32), "proj")]
    nodes = [h.make_node("Gather", ["embed", "ids"], ["e"], name="embed_tokens"),
             h.make_node("MatMul", ["e", "proj"], ["y"], name="proj")]
    g = h.make_graph(nodes, "embedding", [h.make_tensor_value_info("ids", T.INT64, [2, 5])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 5, 64])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)])


class Images(CalibrationDataReader):
    def __init__(self, shape=(1, 3, 8, 8)):
        rng = np.random.default_rng(1)
        self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def main():
    os.makedirs(OUT, exist_ok=True)
    src = os.path.join(OUT, "float.onnx")
    onnx.save(float_model(), src)
    quantize_static(src, os.path.join(OUT, "qoperator.onnx"), Images(), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    quantize_static(src, os.path.join(OUT, "qdq.onnx"), Images(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    quantize_dynamic(src, os.path.join(OUT, "dynamic.onnx"), weight_type=QuantType.QUInt8)
    q = MatMulNBitsQuantizer(onnx.load(src), block_size=32, is_symmetric=True)
    q.process()
    onnx.save(q.model.model, os.path.join(OUT, "nbits.onnx"))
    q = MatMulNBitsQuantizer(embedding_model(), block_size=32, is_symmetric=True,
                             op_types_to_quantize=("MatMul", "Gather"), quant_axes=(("MatMul", 0), ("Gather", 1)))
    q.process()
    onnx.save(q.model.model, os.path.join(OUT, "nbits_gather.onnx"))
    fp8_src = os.path.join(OUT, "float19.onnx")
    m = float_model()
    m.opset_import[0].version = 19  # float8 QuantizeLinear needs opset 19
    onnx.save(m, fp8_src)
    quantize_static(fp8_src, os.path.join(OUT, "qdq_fp8.onnx"), Images(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QFLOAT8E4M3FN, weight_type=QuantType.QFLOAT8E4M3FN,
                    calibrate_method=CalibrationMethod.Distribution)
    residual = os.path.join(OUT, "residual.onnx")
    onnx.save(residual_model(), residual)
    quantize_static(residual, os.path.join(OUT, "qdq_residual.onnx"), Images((1, 8, 8, 8)), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    for f in (src, fp8_src, residual):
        os.remove(f)
    for name in sorted(os.listdir(OUT)):
        m = onnx.load(os.path.join(OUT, name))
        print(name, os.path.getsize(os.path.join(OUT, name)), [n.op_type for n in m.graph.node])


if __name__ == "__main__":
    main()
