#include "analyzer/transformers/quantization.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/limits.hpp"

namespace rooflens {
namespace {

constexpr int64_t kWidth = limits::kMaxConfigWidth;
// MXFP4 (OCP microscaling): one e8m0 scale per 32 elements along the input.
constexpr int64_t kMxBlock = 32;
// bitsandbytes 4-bit: one absmax per 64 weights; with double quantization the absmax is 8-bit
// and every 256 of them share one fp32.
constexpr int64_t kBnbBlock = 64, kBnbDoubleBlock = 256;

std::vector<std::string> not_converted(ConfigReader& r, const char* key) {
  std::vector<std::string> v = r.strings(key);
  return v;
}

}  // namespace

const std::vector<std::string>& quantization_methods() {
  static const std::vector<std::string> m{"mxfp4", "fp8", "gptq", "awq", "bitsandbytes"};
  return m;
}

const std::vector<std::string>& quantization_keys() {
  static const std::vector<std::string> k{
      "quant_method", "modules_to_not_convert", "bits", "group_size", "desc_act", "sym", "zero_point", "version",
      "weight_block_size", "activation_scheme", "fmt", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type",
      "bnb_4bit_compute_dtype", "bnb_4bit_use_double_quant", "bnb_4bit_quant_storage", "llm_int8_skip_modules",
      "llm_int8_threshold", "llm_int8_has_fp16_weight", "llm_int8_enable_fp32_cpu_offload", "true_sequential",
      "damp_percent", "static_groups", "checkpoint_format", "use_exllama", "exllama_config", "use_cuda_fp16",
      "model_seqlen", "block_name_to_quantize", "module_name_preprocess", "cache_block_outputs", "dataset",
      "tokenizer", "batch_size", "pad_token_id", "max_input_length", "backend", "meta", "dequantize",
      "do_fuse", "fuse_max_seq_len", "modules_to_fuse", "exllama_config", "_load_in_4bit", "_load_in_8bit",
      "quant_type", "format", "modules_in_block_to_quantize"};
  return k;
}

QuantizationSpec read_quantization_config(ConfigReader& r) {
  QuantizationSpec q;
  if (!r.has("quant_method")) r.fail("quant_method", "is missing (quantization_config must name its method)");
  q.method = r.string_or("quant_method", "");
  auto known = quantization_methods();
  if (std::find(known.begin(), known.end(), q.method) == known.end())
    r.fail("quant_method", fmt::format("'{}' is not a method rooflens knows; it reads {}", q.method, fmt::join(known, ", ")));
  q.not_converted = not_converted(r, "modules_to_not_convert");
  // Settings that change no byte or FLOP of the stored model.
  r.ignore({"true_sequential", "damp_percent", "static_groups", "checkpoint_format", "use_exllama", "exllama_config",
            "use_cuda_fp16", "model_seqlen", "block_name_to_quantize", "module_name_preprocess", "cache_block_outputs",
            "dataset", "tokenizer", "batch_size", "pad_token_id", "max_input_length", "backend", "meta", "dequantize",
            "do_fuse", "fuse_max_seq_len", "modules_to_fuse", "llm_int8_threshold", "llm_int8_has_fp16_weight",
            "llm_int8_enable_fp32_cpu_offload", "bnb_4bit_quant_storage", "fmt", "version", "sym",
            "modules_in_block_to_quantize"});
  if (q.method == "mxfp4") {
    q.bits = 4;
    q.group_size = kMxBlock;
    q.experts_only = true;  // transformers' Mxfp4 quantizer replaces the MoE experts only
    q.label = "mxfp4 experts (e8m0 scale per 32)";
  } else if (q.method == "fp8") {
    q.bits = 8;
    std::vector<int64_t> block = r.integers("weight_block_size", kWidth);
    if (!block.empty()) {
      if (block.size() != 2 || block[0] == 0 || block[1] == 0) r.fail("weight_block_size", "must be two positive integers");
      q.block_scales = true;
      q.block_rows = block[0];
      q.block_cols = block[1];
    }
    std::string scheme = r.string_or("activation_scheme", "dynamic");
    if (scheme != "dynamic" && scheme != "static") r.fail("activation_scheme", fmt::format("'{}': expected dynamic or static", scheme));
    q.dynamic_activations = true;  // both schemes quantize activations to fp8: W8A8
    q.label = q.block_scales ? fmt::format("fp8 e4m3, {}x{} block scales, fp8 activations", q.block_rows, q.block_cols)
                             : "fp8 e4m3, fp8 activations";
  } else if (q.method == "gptq" || q.method == "awq") {
    q.bits = r.integer_or("bits", 4, 64);
    if (q.bits != 4 && q.bits != 8) r.fail("bits", fmt::format("is {}; rooflens stores 4- and 8-bit weights", q.bits));
    if (r.is_string("group_size")) r.fail("group_size", "must be an integer");
    if (r.has("group_size")) {
      const auto v = r.number_or("group_size", 128);
      if (v != -1 && (v <= 0 || v != static_cast<double>(static_cast<int64_t>(v)))) r.fail("group_size", "must be -1 or a positive integer");
      q.group_size = static_cast<int64_t>(v);
    }
    q.zero_points = q.method == "gptq" || r.boolean_or("zero_point", true);
    q.act_order = q.method == "gptq" && r.boolean_or("desc_act", false);
    if (q.method == "awq") q.not_converted = not_converted(r, "modules_to_not_convert");
    q.label = fmt::format("{} int{} {}", q.method, q.bits, q.group_size > 0 ? fmt::format("g{}", q.group_size) : "per column");
  } else if (q.method == "bitsandbytes") {
    bool four = r.boolean_or("load_in_4bit", false) || r.boolean_or("_load_in_4bit", false);
    bool eight = r.boolean_or("load_in_8bit", false) || r.boolean_or("_load_in_8bit", false);
    if (four == eight) r.fail("load_in_4bit", "and load_in_8bit: exactly one must be true");
    q.bits = four ? 4 : 8;
    std::string type = r.string_or("bnb_4bit_quant_type", "fp4");
    if (four && type != "nf4" && type != "fp4") r.fail("bnb_4bit_quant_type", fmt::format("'{}': expected nf4 or fp4", type));
    q.zero_points = four && r.boolean_or("bnb_4bit_use_double_quant", false);  // the double-quantized absmax
    q.compute_dtype = r.string_or("bnb_4bit_compute_dtype", "");
    auto skip = not_converted(r, "llm_int8_skip_modules");
    q.not_converted.insert(q.not_converted.end(), skip.begin(), skip.end());
    q.label = four ? fmt::format("bitsandbytes {}{}", type, q.zero_points ? " (double quant)" : "") : "bitsandbytes int8";
  }
  return q;
}

QuantizationSpec flag_quantization(DType weights, int64_t group_size) {
  QuantizationSpec q;
  q.method = "flag";
  if (weights == DType::i4) {
    q.bits = 4;
    q.group_size = group_size;
    q.label = fmt::format("int4 g{} (--weights)", group_size);
  } else if (weights == DType::i8) {
    q.bits = 8;
    q.group_size = -1;
    q.label = "int8 per column (--weights)";
  } else {
    q.bits = 8;
    q.label = "fp8 (--weights)";
  }
  return q;
}

QuantizedStorage quantized_storage(const QuantizationSpec& q, int64_t in, int64_t out) {
  QuantizedStorage s;
  auto groups = [&](int64_t g) { return g > 0 ? ceil_div(in, g) : 1; };
  if (q.method == "mxfp4") {
    s.weight = DType::f4e2m1;
    s.aux.push_back({".scales", DType::u8, {groups(kMxBlock), out}});
  } else if (q.method == "fp8" || (q.method == "flag" && q.bits == 8 && q.label.rfind("fp8", 0) == 0)) {
    s.weight = DType::f8e4m3fn;
    if (q.block_scales) s.aux.push_back({".weight_scale_inv", DType::f32, {ceil_div(in, q.block_rows), ceil_div(out, q.block_cols)}});
    else if (q.method == "fp8") s.aux.push_back({".weight_scale", DType::f32, {1}});
  } else if (q.method == "bitsandbytes") {
    s.weight = q.bits == 4 ? DType::i4 : DType::i8;
    if (q.bits == 8) {
      s.aux.push_back({".SCB", DType::f32, {out}});
    } else {
      int64_t blocks = ceil_div(checked_mul(in, out, "weight size"), kBnbBlock);
      if (q.zero_points) {
        s.aux.push_back({".absmax", DType::u8, {blocks}});
        s.aux.push_back({".nested_absmax", DType::f32, {ceil_div(blocks, kBnbDoubleBlock)}});
      } else {
        s.aux.push_back({".absmax", DType::f32, {blocks}});
      }
    }
  } else {  // gptq, awq, flags int4/int8: fp16 scales per group of input rows
    s.weight = q.bits == 4 ? DType::i4 : DType::i8;
    s.aux.push_back({".scales", DType::f16, {groups(q.group_size), out}});
    if (q.zero_points) s.aux.push_back({".qzeros", s.weight, {groups(q.group_size), out}});
    if (q.act_order) s.aux.push_back({".g_idx", DType::i32, {in}});
  }
  return s;
}

bool glob_contains(const std::string& pattern, const std::string& name) {
  // Does pattern match name[i..j) for some i, j? Classic wildcard match with free ends.
  auto match_at = [&](size_t start) {
    size_t p = 0, n = start, star = std::string::npos, mark = 0;
    while (p < pattern.size() || star != std::string::npos) {
      if (p == pattern.size()) return true;  // matched a prefix of name[start..]: a substring
      if (pattern[p] == '*') {
        star = p++;
        mark = n;
      } else if (n < name.size() && pattern[p] == name[n]) {
        ++p, ++n;
      } else if (star != std::string::npos && mark < name.size()) {
        p = star + 1;
        n = ++mark;
      } else {
        return false;
      }
    }
    return true;
  };
  for (size_t i = 0; i <= name.size(); ++i)
    if (match_at(i)) return true;
  return false;
}

bool quantizes(const QuantizationSpec& q, const std::string& module, bool expert) {
  if (q.experts_only && !expert) return false;
  for (const std::string& p : q.not_converted)
    if (glob_contains(p, module)) return false;
  return true;
}

}  // namespace rooflens
