#pragma once
// A checkpoint's quantization_config as the lowering needs it (read by transformers/quantization).
#include <cstdint>
#include <string>
#include <vector>

namespace rooflens {

struct QuantizationSpec {
  std::string method;  // quant_method: mxfp4, fp8, gptq, awq, bitsandbytes
  int64_t bits = 4;
  int64_t group_size = 128;   // input rows per scale; -1: one per output column
  bool zero_points = false;   // GPTQ/AWQ asymmetric: packed zeros beside the scales
  bool act_order = false;     // GPTQ desc_act: a g_idx row of int32
  bool block_scales = false;  // fp8 weight_block_size [128, 128]: one fp32 scale per block
  int64_t block_rows = 128, block_cols = 128;
  bool dynamic_activations = false;        // fp8 activation_scheme dynamic: W8A8
  bool int8_activations = false;           // compressed-tensors W8A8 int: int8 GEMM inputs
  bool float_weights = false;              // compressed-tensors float-quantized: fp8 e4m3 weights
  bool scale_per_tensor = false;           // compressed-tensors strategy tensor: one scale a matrix
  bool experts_only = false;               // mxfp4 in transformers converts the MoE experts only
  std::vector<std::string> not_converted;  // modules_to_not_convert / llm_int8_skip_modules
  std::string compute_dtype;               // bitsandbytes bnb_4bit_compute_dtype
  std::string label;                       // "mxfp4", "gptq int4 g128", ...
};

}  // namespace rooflens
