// Quantized ONNX graphs as ONNX Runtime's own tools write them
// (scripts/gpu/make_quantized_models.py: quantize_static in QOperator and QDQ form,
// quantize_dynamic, MatMulNBitsQuantizer, all from one float model: x [1,3,8,8] -> Conv 4x3x3x3 +
// bias -> Relu -> Flatten [1,144] -> MatMul [144,32]). Expected figures by hand: the convolution
// has 1 x 4 x 6 x 6 outputs of 3 x 3 x 3 MACs each (3,888 MACs), the GEMM 144 x 32 (4,608 MACs).
// qdq_fp8 and qdq_residual are described at their tests.
#include <catch2/catch.hpp>

#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis analyze(const std::string& name) {
  return analyze_onnx(data_path("tests/data/onnx/quantized/" + name + ".onnx"), {},
                      AnalysisOptions{});
}

const NodeResult& first_op(const Analysis& a, const std::string& op) {
  for (const NodeResult& n : a.nodes)
    if (n.op == op) return n;
  FAIL("no " << op);
  return a.nodes.front();
}

}  // namespace

TEST_CASE("QOperator: QLinearConv and QLinearMatMul on the int8 roof, bytes in 8 bits",
          "[rules][quantized]") {
  Analysis a = analyze("qoperator");
  CHECK(a.coverage.not_costed == 0);
  const NodeResult& conv = first_op(a, "QLinearConv");
  CHECK(conv.cost.macs == 3888);
  // 2 x MACs, the int32 bias add per output, and requantizing (a multiply and an add) per output.
  CHECK(conv.cost.flops == 2 * 3888 + 144 + 2 * 144);
  CHECK(conv.cost.read_act == 3 * 8 * 8);  // the uint8 image
  CHECK(conv.cost.written == 4 * 6 * 6);   // uint8 out
  CHECK(conv.precision == Precision::int8);
  const NodeResult& fc = first_op(a, "QLinearMatMul");
  CHECK(fc.cost.macs == 144 * 32);
  CHECK(fc.cost.flops == 2 * 144 * 32 + 2 * 32);
  CHECK(fc.cost.read_weight >=
        144 * 32);  // the int8 weight, one byte each, beside its scale and zero point
  CHECK(fc.cost.read_weight < 144 * 32 + 64);
  CHECK(fc.precision == Precision::int8);
  // The output dequantized back to fp32: 32 uint8 values in, 32 floats out.
  const NodeResult& dq = first_op(a, "DequantizeLinear");
  CHECK(dq.cost.flops == 2 * 32);
  CHECK(dq.cost.written == 32 * 4);
}

TEST_CASE("quantize_dynamic: DynamicQuantizeLinear, ConvInteger and MatMulInteger are costed",
          "[rules][quantized]") {
  Analysis a = analyze("dynamic");
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.params == 108 + 4 + 4608);  // uint8 kernels, the float bias
  const NodeResult& q = first_op(a, "DynamicQuantizeLinear");
  CHECK(q.cost.flops == 4 * 192);         // min, max, scale, zero point per element of x
  CHECK(q.cost.read_act == 2 * 192 * 4);  // fp32 x read by the range pass and the quantizing pass
  const NodeResult& conv = first_op(a, "ConvInteger");
  CHECK(conv.cost.macs == 3888);
  CHECK(conv.cost.flops == 2 * 3888);   // no bias: the third input is a zero point
  CHECK(conv.cost.written == 144 * 4);  // int32 accumulators
  CHECK(first_op(a, "MatMulInteger").cost.macs == 144 * 32);
}

TEST_CASE("MatMulNBits: int4 weights in blocks of 32, dequantized once each",
          "[rules][quantized]") {
  Analysis a = analyze("nbits");
  CHECK(a.coverage.not_costed == 0);
  const NodeResult& fc = first_op(a, "com.microsoft.MatMulNBits");
  CHECK(fc.cost.macs == 144 * 32);
  CHECK(fc.cost.flops == 2 * 144 * 32 + 144 * 32);
  // B: 32 rows of ceil(144 / 32) = 5 blocks of 16 bytes (32 weights at 4 bits) = 2,560 bytes; one
  // fp32 scale per block (640 bytes); no zero points (symmetric).
  CHECK(fc.cost.read_weight == 32 * 5 * 16 + 32 * 5 * 4);
}

TEST_CASE("QDQ: the Conv and MatMul between Q/DQ run as int8 kernels, their Q/DQ fused",
          "[rules][quantized]") {
  Analysis a = analyze("qdq");
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.params ==
        108 + 4 + 4608);  // the int8 kernels and int32 bias DequantizeLinear reads
  // Conv: the uint8 image (192 B) with its scale and zero point (5 B); the int8 kernel (108 B),
  // its scale and zero point, the bias (4 x 4 B); its output quantized by the next
  // QuantizeLinear: 4 x 6 x 6 uint8.
  const NodeResult& conv = first_op(a, "Conv");
  CHECK(conv.cost.macs == 3888);
  CHECK(conv.precision == Precision::int8);
  CHECK(conv.cost.read_act == 192 + 5);
  CHECK(conv.cost.read_weight == 108 + 5 + 16);
  CHECK(conv.cost.written == 144);
  // MatMul: the flattened uint8 activation (144 B + 5), the int8 [144, 32] weight (+ 5), 32 uint8
  // outputs.
  const NodeResult& fc = first_op(a, "MatMul");
  CHECK(fc.precision == Precision::int8);
  CHECK(fc.cost.read_act == 144 + 5);
  CHECK(fc.cost.read_weight == 4608 + 5);
  CHECK(fc.cost.written == 32);
  // What stays a kernel: the input's QuantizeLinear and the output's DequantizeLinear.
  const NodeResult& q = first_op(a, "QuantizeLinear");
  CHECK(q.status == NodeStatus::costed);
  CHECK(q.cost.flops == 2 * 192);
  CHECK(q.cost.written == 192);  // uint8
  // Fused: the DQ each int8 kernel reads, the Q each writes, and the DQ/Q pair around the Flatten.
  CHECK(a.coverage.fused == 6);
  int kernels = 0;
  for (const NodeResult& n : a.nodes) {
    kernels += n.status == NodeStatus::costed && n.roof.predicted > 0;
    if (n.status == NodeStatus::fused) CHECK(n.reason.find("fused") == 0);
  }
  CHECK(kernels == 4);
}

TEST_CASE("QDQ in float8: the Conv and MatMul run as fp8 kernels with fp8 bytes",
          "[rules][quantized]") {
  // quantize_static with QFLOAT8E4M3FN activations and weights: QuantizeLinear writes e4m3fn.
  Analysis a = analyze("qdq_fp8");
  CHECK(a.coverage.not_costed == 0);
  const NodeResult& conv = first_op(a, "Conv");
  CHECK(conv.precision == Precision::fp8);
  CHECK(conv.cost.macs == 3888);
  // The e4m3 image (192 B) with its fp32 scale and e4m3 zero point (5 B); the e4m3 kernel (108 B)
  // with its scale and zero point; the bias stays fp32 (4 x 4 B, a Cast of a float initializer).
  CHECK(conv.cost.read_act == 192 + 5);
  CHECK(conv.cost.read_weight == 108 + 5 + 16);
  CHECK(conv.cost.written == 144);  // 4 x 6 x 6 e4m3
  const NodeResult& fc = first_op(a, "MatMul");
  CHECK(fc.precision == Precision::fp8);
  CHECK(fc.cost.read_weight == 4608 + 5);
  CHECK(fc.cost.written == 32);
  CHECK(a.coverage.fused == 6);
  CHECK(a.dtype_label.find("2 Conv/MatMul/Gemm in QDQ run as fp8 kernels") != std::string::npos);
}

TEST_CASE("QDQ around an Add and a MaxPool: both run on the int8 tensors, their Q/DQ fused",
          "[rules][quantized]") {
  // x [1,8,8,8] -> Conv 8x8x3x3 (pad 1) -> Relu (folded by the quantizer) -> Add x -> MaxPool 2x2
  // -> Flatten [1,128] -> MatMul [128,32]; quantize_static QDQ, uint8 activations.
  Analysis a = analyze("qdq_residual");
  CHECK(a.coverage.not_costed == 0);
  // The Add reads two uint8 [1,8,8,8] tensors (512 B each, with a 4 B scale and a 1 B zero point)
  // and writes 512 B of uint8: QLinearAdd.
  const NodeResult& add = first_op(a, "Add");
  CHECK(add.precision == Precision::int8);
  CHECK(add.cost.read_act == 2 * (512 + 5));
  CHECK(add.cost.written == 512);
  // The MaxPool reads the uint8 sum and writes 8 x 4 x 4 uint8.
  const NodeResult& pool = first_op(a, "MaxPool");
  CHECK(pool.precision == Precision::int8);
  CHECK(pool.cost.read_act == 512 + 5);
  CHECK(pool.cost.written == 128);
  // The input's DQ is read by the Conv and the Add, both quantized: fused. Fused in all: x's DQ,
  // the Q/DQ after the Conv, after the Add and after the MaxPool, the pair around the Flatten, and
  // the MatMul's input DQ and output Q. Kernels left: x's Q, Conv, Add, MaxPool, MatMul, y's DQ.
  CHECK(a.coverage.fused == 10);
  int kernels = 0;
  for (const NodeResult& n : a.nodes)
    kernels += n.status == NodeStatus::costed && n.roof.predicted > 0;
  CHECK(kernels == 6);
  CHECK(a.dtype_label.find("2 Conv/MatMul/Gemm and 2 other ops in QDQ run as int8 kernels") !=
        std::string::npos);
}

TEST_CASE("MatMulNBits and GatherBlockQuantized: 4-bit weights counted as the values they hold",
          "[rules][quantized]") {
  // MatMulNBitsQuantizer over ids [2,5] -> Gather of an embedding [256,128] -> MatMul [128,64]
  // (4 bits, block 32): GatherBlockQuantized reads an int4 [256,128] table, MatMulNBits a uint8
  // [64, 4, 16] blob.
  Analysis a = analyze("nbits_gather");
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.params == 256 * 128 + 128 * 64);  // the float model's; scales are not params
  // The 10 gathered rows of 128 values: 1,280 int4 values (640 B) and their 40 fp32 block scales
  // (160 B) read, the 80 B of int64 ids, 1,280 fp32 written; a multiply and a subtract each.
  const NodeResult& g = first_op(a, "com.microsoft.GatherBlockQuantized");
  CHECK(g.output_shapes.at(0) == "[2,5,128]");
  CHECK(g.cost.flops == 2 * 1280);
  CHECK(g.cost.read_weight == 640 + 160);
  CHECK(g.cost.read_act == 80);
  CHECK(g.cost.written == 1280 * 4);
  // MatMulNBits: 2 x 10 x 128 x 64 FLOPs plus one dequantizing multiply a weight.
  CHECK(first_op(a, "com.microsoft.MatMulNBits").cost.flops == 2 * 10 * 128 * 64 + 128 * 64);
  // nbits.onnx's [144, 32] weight counts 4,608 parameters, not its 2,560 packed bytes.
  CHECK(analyze("nbits").totals.params == 108 + 4 + 4608);
}
