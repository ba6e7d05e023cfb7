#include "analyzer/transformers/quantization.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/limits.hpp"

namespace rooflens {
namespace {

constexpr int64_t kWidth = limits::kMaxConfigWidth;
// bitsandbytes 4-bit: one absmax per 64 weights; with double quantization the absmax is 8-bit
// and every 256 of them share one fp32.
constexpr int64_t kBnbBlock = 64, kBnbDoubleBlock = 256;

std::vector<std::string> not_converted(ConfigReader& r, const char* key) {
  std::vector<std::string> v = r.strings(key);
  return v;
}

// A compressed-tensors scheme's weights: int4/int8 or fp8, their scales' strategy.
void read_compressed_weights(ConfigReader& w, QuantizationSpec& q) {
  q.bits = w.integer("num_bits", 64);
  std::string type = w.string_or("type", "int");
  std::string strategy = w.string_or("strategy", "tensor");
  q.zero_points = !w.boolean_or("symmetric", true);
  if (type == "float") {
    if (q.bits != 8)
      w.fail("num_bits",
             fmt::format("is {}; rooflens stores 8-bit float weights (fp8 e4m3)", q.bits));
    q.float_weights = true;
  } else if (type != "int") {
    w.fail("type", fmt::format("'{}': expected int or float", type));
  } else if (q.bits != 4 && q.bits != 8) {
    w.fail("num_bits", fmt::format("is {}; rooflens stores 4- and 8-bit integer weights", q.bits));
  }
  q.group_size = -1;
  q.scale_per_tensor = false;
  if (strategy == "group") {
    q.group_size = w.integer("group_size", kWidth);
    if (q.group_size <= 0) w.fail("group_size", "must be positive");
  } else if (strategy == "block") {
    std::vector<int64_t> block = w.integers("block_structure", kWidth);
    if (block.size() != 2 || block[0] == 0 || block[1] == 0)
      w.fail("block_structure", "must be two positive integers");
    q.block_scales = true;
    q.block_rows = block[0];
    q.block_cols = block[1];
  } else if (strategy == "tensor") {
    q.scale_per_tensor = true;
  } else if (strategy != "channel") {
    w.fail("strategy",
           fmt::format("'{}': rooflens reads tensor, channel, group and block", strategy));
  }
  w.ignore({"dynamic", "actorder", "observer", "observer_kwargs", "group_size", "block_structure",
            "zp_dtype", "scale_dtype"});
  std::vector<std::string> unread = w.unread();
  if (!unread.empty()) w.fail(unread.front(), "is not a weight setting rooflens reads");
}

// compressed-tensors (llm-compressor): config_groups name the weights' and activations' schemes.
// One weight scheme for every quantized Linear is what rooflens lowers.
void read_compressed_tensors(ConfigReader& r, QuantizationSpec& q) {
  std::string format = r.string_or("format", "");
  if (format != "pack-quantized" && format != "int-quantized" && format != "float-quantized" &&
      format != "naive-quantized")
    r.fail("format", fmt::format("'{}' is not lowered; rooflens reads pack-quantized, "
                                 "int-quantized, float-quantized and "
                                 "naive-quantized",
                                 format));
  const nlohmann::json* groups = r.object("config_groups");
  if (!groups || groups->empty()) r.fail("config_groups", "is missing or empty");
  if (groups->size() != 1)
    r.fail("config_groups", fmt::format("has {} groups; rooflens lowers one scheme for every layer",
                                        groups->size()));
  const nlohmann::json& group = groups->begin().value();
  std::string where = r.where() + ": config_groups." + groups->begin().key();
  if (!group.is_object()) r.fail("config_groups", "must hold objects");
  ConfigReader g(group, where);
  g.strings("targets");
  const nlohmann::json* weights = g.object("weights");
  if (!weights)
    g.fail("weights", "is missing (a scheme without weights quantizes nothing rooflens stores)");
  ConfigReader w(*weights, where + ".weights");
  read_compressed_weights(w, q);
  const nlohmann::json* inputs = g.object("input_activations");
  std::string activations = "16-bit activations";
  if (inputs) {
    ConfigReader a(*inputs, where + ".input_activations");
    int64_t bits = a.integer("num_bits", 64);
    std::string atype = a.string_or("type", "int");
    if (bits != 8)
      a.fail("num_bits", fmt::format("is {}; rooflens runs 8-bit activations only", bits));
    q.dynamic_activations = atype == "float";  // fp8 activations: the fp8 tensor roof
    q.int8_activations = atype == "int";
    activations = fmt::format("{} activations", atype == "float" ? "fp8" : "int8");
  }
  g.object("output_activations");
  g.string_or("format", "");
  q.not_converted = r.strings("ignore");
  std::string kv;
  if (r.object("kv_cache_scheme"))
    kv = "; its kv_cache_scheme is not applied (--kv-dtype sets the cache)";
  std::string scales = q.block_scales
                           ? fmt::format("{}x{} block scales", q.block_rows, q.block_cols)
                       : q.group_size > 0   ? fmt::format("group {}", q.group_size)
                       : q.scale_per_tensor ? "one scale per tensor"
                                            : "per-channel scales";
  q.label = fmt::format("compressed-tensors {} {}{} ({}{}), {}{}", format,
                        q.float_weights ? "fp8 e4m3" : "int",
                        q.float_weights ? "" : std::to_string(q.bits), scales,
                        q.zero_points ? ", zero points" : "", activations, kv);
}

// HQQ (half-quadratic quantization): packed n-bit weights, an fp16 scale and zero per group.
void read_hqq(ConfigReader& r, QuantizationSpec& q) {
  int64_t bits = 4, group = 64;
  if (const nlohmann::json* qc = r.object("quant_config")) {
    ConfigReader c(*qc, r.where() + ": quant_config");
    const nlohmann::json* wp = c.object("weight_quant_params");
    if (!wp) c.fail("weight_quant_params", "is missing");
    ConfigReader w(*wp, c.where() + ".weight_quant_params");
    bits = w.integer("nbits", 64);
    group = w.integer_or("group_size", group, kWidth);
    w.ignore({"channel_wise", "optimize", "round_zero", "axis", "view_as_float"});
    c.ignore({"scale_quant_params", "zero_quant_params", "offload_meta"});
  } else {
    bits = r.integer_or("nbits", bits, 64);
    group = r.integer_or("group_size", group, kWidth);
  }
  r.ignore({"axis", "view_as_float", "dynamic_config"});
  if (bits != 4 && bits != 8)
    r.fail("nbits", fmt::format("is {}; rooflens stores 4- and 8-bit HQQ weights", bits));
  if (group <= 0) r.fail("group_size", "must be positive");
  q.bits = bits;
  q.group_size = group;
  q.zero_points = true;
  q.not_converted = r.strings("skip_modules");
  q.label = fmt::format("hqq int{} (fp16 scale and zero per {} weights)", bits, group);
}

}  // namespace

const std::vector<std::string>& quantization_methods() {
  static const std::vector<std::string> m{
      "mxfp4", "fp8", "gptq", "awq", "bitsandbytes", "compressed-tensors", "hqq"};
  return m;
}

const std::vector<std::string>& quantization_keys() {
  static const std::vector<std::string> k{
      "quant_method", "modules_to_not_convert", "bits", "group_size", "desc_act", "sym",
      "zero_point", "version", "weight_block_size", "activation_scheme", "fmt", "load_in_4bit",
      "load_in_8bit", "bnb_4bit_quant_type", "bnb_4bit_compute_dtype", "bnb_4bit_use_double_quant",
      "bnb_4bit_quant_storage", "llm_int8_skip_modules", "llm_int8_threshold",
      "llm_int8_has_fp16_weight", "llm_int8_enable_fp32_cpu_offload", "true_sequential",
      "damp_percent", "static_groups", "checkpoint_format", "use_exllama", "exllama_config",
      "use_cuda_fp16", "model_seqlen", "block_name_to_quantize", "module_name_preprocess",
      "cache_block_outputs", "dataset", "tokenizer", "batch_size", "pad_token_id",
      "max_input_length", "backend", "meta", "dequantize", "do_fuse", "fuse_max_seq_len",
      "modules_to_fuse", "exllama_config", "_load_in_4bit", "_load_in_8bit", "quant_type", "format",
      "modules_in_block_to_quantize",
      // compressed-tensors
      "config_groups", "ignore", "kv_cache_scheme", "quantization_status",
      "global_compression_ratio", "sparsity_config", "transform_config", "quant_config",
      // hqq
      "nbits", "skip_modules", "axis", "view_as_float", "channel_wise", "optimize", "round_zero",
      "offload_meta", "dynamic_config"};
  return k;
}

namespace {

// transformers' FineGrainedFP8: fp8 e4m3 weights (per tensor or in blocks), fp8 activations.
void read_fp8(ConfigReader& r, QuantizationSpec& q) {
  q.bits = 8;
  std::vector<int64_t> block = r.integers("weight_block_size", kWidth);
  if (!block.empty()) {
    if (block.size() != 2 || block[0] == 0 || block[1] == 0)
      r.fail("weight_block_size", "must be two positive integers");
    q.block_scales = true;
    q.block_rows = block[0];
    q.block_cols = block[1];
  }
  std::string scheme = r.string_or("activation_scheme", "dynamic");
  if (scheme != "dynamic" && scheme != "static")
    r.fail("activation_scheme", fmt::format("'{}': expected dynamic or static", scheme));
  q.dynamic_activations = true;  // both schemes quantize activations to fp8: W8A8
  q.label = q.block_scales ? fmt::format("fp8 e4m3, {}x{} block scales, fp8 activations",
                                         q.block_rows, q.block_cols)
                           : "fp8 e4m3, fp8 activations";
}

// GPTQ and AWQ: packed 4- or 8-bit weights, a scale (and zero point) per group of columns.
void read_gptq_awq(ConfigReader& r, QuantizationSpec& q) {
  q.bits = r.integer_or("bits", 4, 64);
  if (q.bits != 4 && q.bits != 8)
    r.fail("bits", fmt::format("is {}; rooflens stores 4- and 8-bit weights", q.bits));
  if (r.is_string("group_size")) r.fail("group_size", "must be an integer");
  if (r.has("group_size")) {
    const auto v = r.number_or("group_size", 128);
    if (v != -1 && (v <= 0 || v != static_cast<double>(static_cast<int64_t>(v))))
      r.fail("group_size", "must be -1 or a positive integer");
    q.group_size = static_cast<int64_t>(v);
  }
  q.zero_points = q.method == "gptq" || r.boolean_or("zero_point", true);
  q.act_order = q.method == "gptq" && r.boolean_or("desc_act", false);
  if (q.method == "awq") q.not_converted = not_converted(r, "modules_to_not_convert");
  q.label = fmt::format("{} int{} {}", q.method, q.bits,
                        q.group_size > 0 ? fmt::format("g{}", q.group_size) : "per column");
}

// bitsandbytes: LLM.int8 or 4-bit NormalFloat/float with an absmax per 64 weights.
void read_bitsandbytes(ConfigReader& r, QuantizationSpec& q) {
  bool four = r.boolean_or("load_in_4bit", false) || r.boolean_or("_load_in_4bit", false);
  bool eight = r.boolean_or("load_in_8bit", false) || r.boolean_or("_load_in_8bit", false);
  if (four == eight) r.fail("load_in_4bit", "and load_in_8bit: exactly one must be true");
  q.bits = four ? 4 : 8;
  std::string type = r.string_or("bnb_4bit_quant_type", "fp4");
  if (four && type != "nf4" && type != "fp4")
    r.fail("bnb_4bit_quant_type", fmt::format("'{}': expected nf4 or fp4", type));
  q.zero_points =
      four && r.boolean_or("bnb_4bit_use_double_quant", false);  // the double-quantized absmax
  q.compute_dtype = r.string_or("bnb_4bit_compute_dtype", "");
  auto skip = not_converted(r, "llm_int8_skip_modules");
  q.not_converted.insert(q.not_converted.end(), skip.begin(), skip.end());
  // nf4: 4-bit NormalFloat; fp4: 4-bit float (e2m1); both one absmax per 64 weights.
  q.label = four ? fmt::format("bitsandbytes {} ({}, absmax per {} weights{})", type,
                               type == "nf4" ? "4-bit NormalFloat" : "4-bit float", kBnbBlock,
                               q.zero_points ? ", double-quantized absmax" : "")
                 : "bitsandbytes int8 (LLM.int8, fp32 scale per row)";
}

}  // namespace

QuantizationSpec read_quantization_config(ConfigReader& r) {
  QuantizationSpec q;
  if (!r.has("quant_method"))
    r.fail("quant_method", "is missing (quantization_config must name its method)");
  q.method = r.string_or("quant_method", "");
  auto known = quantization_methods();
  if (std::find(known.begin(), known.end(), q.method) == known.end())
    r.fail("quant_method", fmt::format("'{}' is not a method rooflens knows; it reads {}", q.method,
                                       fmt::join(known, ", ")));
  q.not_converted = not_converted(r, "modules_to_not_convert");
  // Settings that change no byte or FLOP of the stored model.
  r.ignore({"true_sequential",
            "damp_percent",
            "static_groups",
            "checkpoint_format",
            "use_exllama",
            "exllama_config",
            "use_cuda_fp16",
            "model_seqlen",
            "block_name_to_quantize",
            "module_name_preprocess",
            "cache_block_outputs",
            "dataset",
            "tokenizer",
            "batch_size",
            "pad_token_id",
            "max_input_length",
            "backend",
            "meta",
            "dequantize",
            "do_fuse",
            "fuse_max_seq_len",
            "modules_to_fuse",
            "llm_int8_threshold",
            "llm_int8_has_fp16_weight",
            "llm_int8_enable_fp32_cpu_offload",
            "bnb_4bit_quant_storage",
            "fmt",
            "version",
            "sym",
            "modules_in_block_to_quantize"});
  if (q.method == "mxfp4") {
    q.bits = 4;
    q.group_size = kMxfp4Block;
    q.experts_only = true;  // transformers' Mxfp4 quantizer replaces the MoE experts only
    q.label = "mxfp4 experts (e8m0 scale per 32)";
  } else if (q.method == "fp8") {
    read_fp8(r, q);
  } else if (q.method == "gptq" || q.method == "awq") {
    read_gptq_awq(r, q);
  } else if (q.method == "bitsandbytes") {
    read_bitsandbytes(r, q);
  } else if (q.method == "compressed-tensors") {
    read_compressed_tensors(r, q);
  } else if (q.method == "hqq") {
    read_hqq(r, q);
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
    s.aux.push_back({".scales", DType::u8, {groups(kMxfp4Block), out}});
  } else if (q.method == "fp8" ||
             (q.method == "flag" && q.bits == 8 && q.label.rfind("fp8", 0) == 0)) {
    s.weight = DType::f8e4m3fn;
    if (q.block_scales)
      s.aux.push_back({".weight_scale_inv",
                       DType::f32,
                       {ceil_div(in, q.block_rows), ceil_div(out, q.block_cols)}});
    else if (q.method == "fp8")
      s.aux.push_back({".weight_scale", DType::f32, {1}});
  } else if (q.method == "compressed-tensors") {
    // pack-quantized: int32 words of 8 nibbles (the same bytes as int4); scales in the model's
    // 16-bit dtype, [out, groups]; weight_shape, two int64.
    s.weight = q.float_weights ? DType::f8e4m3fn : q.bits == 4 ? DType::i4 : DType::i8;
    Shape scale = q.block_scales ? Shape{ceil_div(out, q.block_cols), ceil_div(in, q.block_rows)}
                  : q.scale_per_tensor ? Shape{1}
                                       : Shape{out, groups(q.group_size)};
    s.aux.push_back({".weight_scale", DType::bf16, scale});
    if (q.zero_points) s.aux.push_back({".weight_zero_point", s.weight, scale});
    if (q.bits == 4) s.aux.push_back({".weight_shape", DType::i64, {2}});
  } else if (q.method == "hqq") {
    int64_t groups_all = ceil_div(checked_mul(in, out, "weight size"), q.group_size);
    s.weight = q.bits == 4 ? DType::i4 : DType::i8;
    s.aux.push_back({".scale", DType::f16, {groups_all, 1}});
    s.aux.push_back({".zero", DType::f16, {groups_all, 1}});
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
