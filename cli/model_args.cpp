// Shared model options and the analysis they describe.
#include "cli/model_args.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/derived_profile.hpp"
#include "analyzer/onnx/unbound_dims.hpp"
#include "analyzer/runtime/runtime.hpp"
#include "analyzer/training/training.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "analyzer/transformers/quantization.hpp"
#include "reports/atomic_file.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"

namespace rooflens::cli {

namespace {

// config.json (any *.json), or a directory: a Hugging Face model directory holds a config.json.
bool is_config_path(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// fp32|bf16|fp16|fp8|int8|int4 as a storage dtype.
DType dtype_flag(const std::string& flag, const std::string& value, bool allow_int4) {
  if (value == "int4" && allow_int4) return DType::i4;
  auto p = precision_from_name(value);
  if (!p || *p == Precision::tf32)
    throw InputError(fmt::format("{} {}: expected fp32, bf16, fp16, fp8, int8{}", flag, value,
                                 allow_int4 ? " or int4" : ""));
  return storage_dtype(*p);
}

DType dtype_named(const std::string& name) {
  if (name == "float16") return DType::f16;
  if (name == "float32") return DType::f32;
  return DType::bf16;
}

DType config_dtype(const TransformerConfig& c) {
  return dtype_named(c.dtype);
}

TrainingOptions training_options(const ModelArgs& args) {
  TrainingOptions t;
  t.precision = parse_train_precision(args.precision);
  t.optimizer = parse_optimizer(args.optimizer);
  t.recompute = parse_recompute(args.recompute);
  t.grad_accum = args.grad_accum;
  if (args.zero < 0 || args.zero > 3)
    throw InputError(fmt::format("--zero {}: expected 0, 1, 2 or 3", args.zero));
  t.zero = static_cast<int>(args.zero);
  t.dp = args.dp;
  t.sp = args.sp;
  return t;
}

Analysis analyze_config(const ModelArgs& args, const CLI::App& cmd, Graph* inferred,
                        std::shared_ptr<const Device> calibrated) {
  if (!args.dims.empty())
    throw InputError("--dim applies to ONNX models; a config takes --batch/--seq/--context");
  if (!args.dtype.empty())
    throw InputError(
        "--dtype applies to ONNX models; a config takes --weights/--activations/--kv-dtype");
  if (cmd.count("--math"))
    throw InputError(
        "--math applies to ONNX models (fp32 convolutions and matmuls); a config runs in its "
        "dtypes");
  if (args.part != "text" && args.part != "vision" && args.part != "all")
    throw InputError(fmt::format("--part {}: expected text, vision or all", args.part));
  TransformerConfig c =
      load_transformer_config(args.model, args.part == "vision" ? ConfigPart::vision
                                          : args.part == "all"  ? ConfigPart::all
                                                                : ConfigPart::text);
  if (c.image && args.phase != "prefill" && args.phase != "generate")
    throw InputError(fmt::format(
        "--part all: the image runs with the prompt; --phase prefill or generate, not {}",
        args.phase));
  if (c.vision && args.phase != "prefill")
    throw InputError(
        fmt::format("--part vision: the vision tower is an encoder run once an image; --phase "
                    "prefill only, not {}",
                    args.phase));
  TransformerOptions o;
  o.device = args.device;
  o.calibrated = calibrated;
  o.strict = args.strict;
  bool train = args.phase == "train";
  if (args.phase == "prefill" || train)
    o.workload = Workload::prefill;
  else if (args.phase == "decode")
    o.workload = Workload::decode;
  else if (args.phase == "generate")
    o.workload = Workload::generate;
  else
    throw InputError(
        fmt::format("--phase {}: expected prefill, decode, generate or train", args.phase));
  if (args.attention != "flash" && args.attention != "naive")
    throw InputError(fmt::format("--attention {}: expected flash or naive", args.attention));
  LoweringOptions& l = o.lowering;
  l.batch = args.batch;
  l.seq = args.seq;
  if (c.vision && !cmd.count("--seq"))
    l.seq = c.vision->tokens();  // an image's patches; --batch counts images
  l.context = args.context;
  l.tp = args.tp;
  l.ep = args.ep;
  l.group_size = args.group_size;
  l.attention = args.attention == "naive" ? AttentionImpl::naive : AttentionImpl::flash;
  o.prompt = args.prompt;
  o.gen = args.gen;
  if (train) {
    if (inferred) throw InputError("profile replays inference: --phase train is for analyze");
    if (!args.weights.empty() || !args.activations.empty() || !args.kv_dtype.empty())
      throw InputError("--phase train takes --precision, not --weights/--activations/--kv-dtype");
    if (args.ep > 1)
      throw InputError(
          "--ep is for inference steps: a training step's expert parallelism is not "
          "modelled (--dp, --zero and --tp are)");
    if (!args.runtime.empty())
      throw InputError("--runtime is for inference: --phase train already models eager PyTorch");
    return analyze_training(c, o, training_options(args));
  }
  choose_dtypes(args, c, l);
  if (o.workload == Workload::generate && inferred)
    throw InputError("profile replays one step: --phase prefill or decode");
  if (!args.runtime.empty()) {
    if (inferred)
      throw InputError("--runtime applies to analyze: profile and compare measure runs");
    if (c.encdec || c.vision || args.tp > 1 || args.ep > 1)
      throw InputError(
          "--runtime models a decoder-only model on one GPU (Hugging Face's eager code): not "
          "an encoder-decoder, a vision tower, --tp or --ep");
    return analyze_runtime(c, o, parse_runtime_mode(args.runtime));
  }
  return analyze_transformer(c, o, inferred);
}

// The training flags a model of either kind takes only with --phase train (--sp: configs only).
void reject_training_flags(const CLI::App& cmd) {
  for (const char* flag :
       {"--precision", "--optimizer", "--recompute", "--grad-accum", "--zero", "--dp", "--sp"})
    if (cmd.count(flag)) throw InputError(fmt::format("{} applies to --phase train", flag));
}

// An ONNX model takes --phase train and its training flags; the rest are a config's.
void reject_config_flags(const CLI::App& cmd, bool train) {
  for (const char* flag :
       {"--seq", "--context", "--prompt", "--gen", "--attention", "--weights", "--group-size",
        "--activations", "--kv-dtype", "--tp", "--ep", "--sp", "--part", "--runtime"})
    if (cmd.count(flag))
      throw InputError(
          fmt::format("{} applies to transformer configs (config.json), not ONNX models", flag));
  if (train) return;
  if (cmd.count("--phase"))
    throw InputError(
        "--phase applies to transformer configs (config.json); an ONNX model takes --phase train "
        "only");
  reject_training_flags(cmd);
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--dim {}: expected NAME=VALUE", s));
    std::string name = s.substr(0, eq), value = s.substr(eq + 1);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value.empty())
      throw InputError(fmt::format("--dim {}: '{}' is not an integer", s, value));
    if (v <= 0) throw InputError(fmt::format("--dim {}: dims must be positive", s));
    dims[name] = v;
  }
  return dims;
}

Analysis analyze_model(const ModelArgs& args, const CLI::App& cmd, Graph* inferred,
                       std::shared_ptr<const Device> calibrated) {
  LoadOptions load;
  load.dims = parse_dims(args.dims);
  if (!args.if_branch.empty()) {
    if (args.if_branch != "then" && args.if_branch != "else")
      throw InputError(fmt::format("--if-branch {}: expected then or else", args.if_branch));
    load.if_branch = args.if_branch == "then" ? IfBranch::then_branch : IfBranch::else_branch;
  }
  if (cmd.count("--loop-trips")) {
    if (args.loop_trips <= 0)
      throw InputError(fmt::format("--loop-trips {}: must be positive", args.loop_trips));
    load.loop_trips = args.loop_trips;
  }
  if (cmd.count("--batch")) {
    if (args.batch <= 0) throw InputError(fmt::format("--batch {}: must be positive", args.batch));
    load.batch = args.batch;
  }
  AnalysisOptions opt;
  opt.device = args.device;
  opt.calibrated = calibrated;
  opt.strict = args.strict;
  if (auto m = math_mode_from_name(args.math))
    opt.math = *m;
  else
    throw InputError(fmt::format("--math {}: expected strict, tf32-conv or tf32", args.math));
  opt.precision = forced_precision(args);
  bool train = args.phase == "train";
  if (train && inferred)
    throw InputError("profile replays inference: --phase train is for analyze");
  if (train && opt.precision) throw InputError("--phase train takes --precision, not --dtype");
  try {
    if (train) return analyze_training_onnx(args.model, load, opt, training_options(args));
    return analyze_onnx(args.model, load, opt, inferred);
  } catch (const UnboundDimsError&) {
    throw;  // the inputs' own dims, whatever --batch did
  } catch (const InputError& e) {
    std::string what = e.what();
    // A flag's own error ("--precision bf16: ...") is not the graph's: nothing to add.
    if (!load.batch || what.rfind("--", 0) == 0 || what.find("--batch") != std::string::npos) throw;
    // A graph that fixes its batch inside (a Reshape to [1, ...]) cannot be rewritten from its
    // inputs.
    throw InputError(fmt::format(
        "{} (after --batch {} rewrote the inputs: the model may fix its batch inside, e.g. in a "
        "Reshape's shape)",
        what, *load.batch));
  }
}

}  // namespace

// The weights' dtype and its source: --weights, else the config's quantization_config, else its
// dtype. Activations follow (fp8 W8A8 checkpoints quantize them too; bitsandbytes computes in its
// compute dtype); the KV cache follows 16/32-bit activations.
void choose_dtypes(const ModelArgs& args, const TransformerConfig& c, LoweringOptions& l) {
  DType plain = config_dtype(c);
  if (!args.weights.empty()) {
    l.weights = dtype_flag("--weights", args.weights, true);
    l.weights_source = "--weights " + args.weights;
    if (c.quantization)
      l.weights_source += " (overrides quantization_config: " + c.quantization->label + ")";
    l.activations = is_float(l.weights) && l.weights != DType::f8e4m3fn ? l.weights : plain;
  } else if (c.quantization) {
    l.quantization = c.quantization;
    l.weights = quantized_storage(*c.quantization, 1, 1).weight;
    if (c.quantization->group_size > 0) l.group_size = c.quantization->group_size;
    l.weights_source = "quantization_config: " + c.quantization->label;
    l.activations = c.quantization->dynamic_activations ? DType::f8e4m3fn
                    : c.quantization->int8_activations  ? DType::i8
                    : !c.quantization->compute_dtype.empty()
                        ? dtype_named(c.quantization->compute_dtype)
                        : plain;
  } else {
    l.weights = plain;
    l.weights_source =
        "config dtype " + (c.dtype.empty() ? std::string("(none; bfloat16 assumed)") : c.dtype);
    l.activations = plain;
  }
  if (!args.activations.empty())
    l.activations = dtype_flag("--activations", args.activations, false);
  bool wide =
      l.activations == DType::f32 || l.activations == DType::bf16 || l.activations == DType::f16;
  l.kv = !args.kv_dtype.empty() ? dtype_flag("--kv-dtype", args.kv_dtype, false)
         : wide                 ? l.activations
                                : plain;
}

std::optional<Precision> forced_precision(const ModelArgs& args) {
  if (args.dtype.empty()) return std::nullopt;
  auto p = precision_from_name(args.dtype);
  if (!p)
    throw InputError(
        fmt::format("--dtype {}: expected fp32, tf32, bf16, fp16, fp8 or int8", args.dtype));
  return p;
}

void add_model_options(CLI::App& cmd, ModelArgs& args) {
  cmd.add_option("model", args.model, "model.onnx, config.json or a Hugging Face model directory")
      ->required();
  cmd.add_option("--dim", args.dims, "bind a symbolic input dim, NAME=VALUE (repeatable)");
  cmd.add_option("--dtype", args.dtype,
                 "precision the model runs in: fp32|tf32|bf16|fp16|fp8|int8 (default: the file's)");
  cmd.add_option("--device", args.device, "device id from `rooflens devices`")
      ->capture_default_str();
  cmd.add_option("--device-profile", args.device_profile,
                 "measured roofs and tables from `rooflens calibrate` (replaces --device); `spec` "
                 "for the spec sheet's roofs "
                 "(default: the profile rooflens ships for --device, where it has one)");
  cmd.add_option("--top", args.top, "nodes listed in the table")->capture_default_str();
  cmd.add_option("--json", args.json_path, "write the full result as JSON");
  cmd.add_option("--csv", args.csv_path, "write the per-node table as CSV");
  cmd.add_option("--html", args.html_path, "write a self-contained HTML report with the roofline");
  cmd.add_flag("--strict", args.strict, "fail when any node is not costed");
  cmd.add_option("--math", args.math,
                 "how fp32 convolutions and matmuls run: strict | tf32-conv (PyTorch's default) | "
                 "tf32 (TensorRT's, "
                 "ONNX Runtime CUDA's)")
      ->capture_default_str();
  add_layout_options(cmd, args.by, args.width);
  cmd.add_option("--phase", args.phase, "config: prefill | decode | generate | train")
      ->capture_default_str();
  cmd.add_option("--batch", args.batch,
                 "config: sequences; ONNX: rewrite dim 0 of every input to this batch")
      ->capture_default_str();
  cmd.add_option("--seq", args.seq, "config, prefill: tokens per sequence")->capture_default_str();
  cmd.add_option("--context", args.context, "config, decode: tokens already cached")
      ->capture_default_str();
  cmd.add_option("--prompt", args.prompt, "config, generate: prompt tokens")->capture_default_str();
  cmd.add_option("--gen", args.gen, "config, generate: generated tokens")->capture_default_str();
  cmd.add_option("--attention", args.attention,
                 "config: flash (fused) or naive (scores materialized)")
      ->capture_default_str();
  cmd.add_option("--weights", args.weights,
                 "config: fp32|bf16|fp16|fp8|int8|int4 (default: the config's dtype)");
  cmd.add_option("--group-size", args.group_size, "config: int4 rows per fp16 scale")
      ->capture_default_str();
  cmd.add_option("--activations", args.activations, "config: fp32|bf16|fp16|fp8|int8");
  cmd.add_option(
      "--kv-dtype", args.kv_dtype,
      "config: KV cache dtype (default: the activations when 16/32-bit, else the config dtype)");
  cmd.add_option("--runtime", args.runtime,
                 "config, analyze: eager (Hugging Face's eager code: the host issuing each kernel) "
                 "or graphs (a replayed CUDA graph); default: the kernels back to back");
  cmd.add_option("--tp", args.tp, "config: tensor-parallel GPUs")->capture_default_str();
  cmd.add_option("--ep", args.ep,
                 "config, MoE: expert-parallel GPUs (experts spread, attention data-parallel)")
      ->capture_default_str();
  cmd.add_option("--if-branch", args.if_branch,
                 "ONNX: the branch of an If whose condition is not a constant (then|else; default: "
                 "the costlier)");
  cmd.add_option("--loop-trips", args.loop_trips,
                 "ONNX: iterations of a Loop whose trip count is not a constant, or of a Scan "
                 "whose length the file does not state");
  cmd.add_option("--part", args.part,
                 "multimodal config: text (the language model), vision (the vision tower) or all "
                 "(an image through the tower and projector, then the language model)")
      ->capture_default_str();
  cmd.add_option("--precision", args.precision, "train: fp32 | bf16 | bf16-mixed | fp8-mixed")
      ->capture_default_str();
  cmd.add_option("--optimizer", args.optimizer, "train: adamw | sgd | adafactor")
      ->capture_default_str();
  cmd.add_option("--recompute", args.recompute,
                 "train: none | selective | full (activation checkpointing)")
      ->capture_default_str();
  cmd.add_option("--grad-accum", args.grad_accum, "train: micro-batches per optimizer step")
      ->capture_default_str();
  cmd.add_option("--zero", args.zero, "train: ZeRO stage 0-3 among --dp GPUs")
      ->capture_default_str();
  cmd.add_option("--dp", args.dp, "train: data-parallel GPUs")->capture_default_str();
  cmd.add_flag("--sp", args.sp, "train: sequence parallelism beside --tp");
}

void add_layout_options(CLI::App& cmd, std::string& by, int& width) {
  cmd.add_option("--by", by,
                 "table rows: node (identical repeated layers folded, with a count), layer (every "
                 "node of every layer), "
                 "or block (layers summed by name)")
      ->capture_default_str();
  cmd.add_option(
      "--width", width,
      "terminal report columns (default: the terminal's, else 100; below 100 the compact layout)");
}

reports::TableOptions table_options(const std::string& by, int top, int width) {
  reports::TableOptions o;
  if (by == "node")
    o.rows = reports::TableRows::folded;
  else if (by == "layer")
    o.rows = reports::TableRows::layer;
  else if (by == "block")
    o.rows = reports::TableRows::block;
  else
    throw InputError(fmt::format("--by {}: expected node, layer or block", by));
  if (top < 0) throw InputError("--top must be >= 0");
  o.top = top;
  if (width != 0 && (width < 60 || width > 1000))
    throw InputError(fmt::format("--width {}: expected 60 to 1000 columns", width));
  if (width == 0) {
    struct winsize ws {};
    bool terminal =
        ::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0;
    width = terminal ? std::clamp<int>(ws.ws_col, 60, 100) : 100;  // wider than 100 adds nothing
  }
  o.width = static_cast<size_t>(width);
  return o;
}

std::shared_ptr<const Device> device_from_flags(const std::string& device,
                                                const std::string& device_profile,
                                                const CLI::App& cmd) {
  if (device_profile == "spec") return nullptr;
  if (!device_profile.empty()) {
    if (cmd.count("--device"))
      throw InputError(
          "--device and --device-profile exclude each other: the profile names its device");
    return std::make_shared<const Device>(calibrated_device(read_device_profile(device_profile)));
  }
  if (auto profile = default_profile(device))
    return std::make_shared<const Device>(calibrated_device(*profile));
  return nullptr;
}

Analysis build_analysis(const ModelArgs& args, const CLI::App& cmd, Graph* inferred,
                        std::shared_ptr<const Device> calibrated) {
  table_options(args.by, args.top, args.width);  // a bad --by, --top or --width before any work
  if (!calibrated) calibrated = device_from_flags(args.device, args.device_profile, cmd);
  if (is_config_path(args.model)) {
    if (args.phase != "train") reject_training_flags(cmd);
    for (const char* flag : {"--if-branch", "--loop-trips"})
      if (cmd.count(flag))
        throw InputError(
            fmt::format("{} applies to ONNX models (control flow), not configs", flag));
    return analyze_config(args, cmd, inferred, calibrated);
  }
  reject_config_flags(cmd, cmd.count("--phase") && args.phase == "train");
  return analyze_model(args, cmd, inferred, calibrated);
}

void write_outputs(const ModelArgs& args, const Analysis& a, reports::OutputSet outputs) {
  write_outputs(args, reports::result_json(a), std::move(outputs));
}

void write_outputs(const ModelArgs& args, const nlohmann::json& result,
                   reports::OutputSet outputs) {
  std::ostringstream text;
  reports::write_table(text, result, table_options(args.by, args.top, args.width));
  outputs.add("--json", args.json_path, [&](std::ostream& o) { reports::write_json(o, result); });
  outputs.add("--csv", args.csv_path,
              [&](std::ostream& o) { reports::write_csv_from_json(o, result); });
  outputs.add("--html", args.html_path, [&](std::ostream& o) { reports::write_html(o, result); });
  outputs.add("--trace", args.trace_path,
              [&](std::ostream& o) { reports::write_chrome_trace(o, result); });
  outputs.write_all();
  if (!outputs.takes_stdout()) std::cout << text.str();  // a report on stdout stays parseable
}

}  // namespace rooflens::cli
