// The `rooflens` command. The only place that picks exit codes: 0 success, 2 bad input (one
// line on stderr), 1 an internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <sstream>

#include "analyzer/analysis.hpp"
#include "analyzer/errors.hpp"
#include "analyzer/transformer_analysis.hpp"
#include "reports/atomic_file.hpp"
#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace {

using namespace rooflens;

struct AnalyzeArgs {
  std::string model;
  std::vector<std::string> dims;
  std::string dtype;
  std::string device = "H100-SXM";
  int top = 15;
  std::string json_path, csv_path;
  bool strict = false;
  std::string by = "node";
  // Transformer configs only.
  std::string phase = "prefill", attention = "flash", weights, activations, kv_dtype;
  int64_t batch = 1, seq = 2048, context = 2048, prompt = 2048, gen = 256, group_size = 128, tp = 1;
};

bool is_config_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

// fp32|bf16|fp16|fp8|int8|int4 as a storage dtype.
DType dtype_flag(const std::string& flag, const std::string& value, bool allow_int4) {
  if (value == "int4" && allow_int4) return DType::i4;
  auto p = precision_from_name(value);
  if (!p || *p == Precision::tf32)
    throw InputError(fmt::format("{} {}: expected fp32, bf16, fp16, fp8, int8{}", flag, value, allow_int4 ? " or int4" : ""));
  return storage_dtype(*p);
}

DType config_dtype(const TransformerConfig& c) {
  if (c.dtype == "float16") return DType::f16;
  if (c.dtype == "float32") return DType::f32;
  return DType::bf16;
}

Analysis analyze_config(const AnalyzeArgs& args) {
  if (!args.dims.empty()) throw InputError("--dim applies to ONNX models; a config takes --batch/--seq/--context");
  if (!args.dtype.empty()) throw InputError("--dtype applies to ONNX models; a config takes --weights/--activations/--kv-dtype");
  TransformerConfig c = load_transformer_config(args.model);
  TransformerOptions o;
  o.device = args.device;
  o.strict = args.strict;
  if (args.phase == "prefill") o.workload = Workload::prefill;
  else if (args.phase == "decode") o.workload = Workload::decode;
  else if (args.phase == "generate") o.workload = Workload::generate;
  else throw InputError(fmt::format("--phase {}: expected prefill, decode or generate", args.phase));
  if (args.attention != "flash" && args.attention != "naive")
    throw InputError(fmt::format("--attention {}: expected flash or naive", args.attention));
  LoweringOptions& l = o.lowering;
  l.batch = args.batch;
  l.seq = args.seq;
  l.context = args.context;
  l.tp = args.tp;
  l.group_size = args.group_size;
  l.attention = args.attention == "naive" ? AttentionImpl::naive : AttentionImpl::flash;
  l.weights = args.weights.empty() ? config_dtype(c) : dtype_flag("--weights", args.weights, true);
  l.activations = !args.activations.empty() ? dtype_flag("--activations", args.activations, false)
                  : is_float(l.weights) && l.weights != DType::f8e4m3fn ? l.weights : config_dtype(c);
  l.kv = args.kv_dtype.empty() ? l.activations : dtype_flag("--kv-dtype", args.kv_dtype, false);
  o.prompt = args.prompt;
  o.gen = args.gen;
  return analyze_transformer(c, o);
}

void reject_config_flags(const CLI::App& cmd) {
  for (const char* flag : {"--phase", "--batch", "--seq", "--context", "--prompt", "--gen", "--attention", "--weights",
                           "--group-size", "--activations", "--kv-dtype", "--tp"})
    if (cmd.count(flag)) throw InputError(fmt::format("{} applies to transformer configs (config.json), not ONNX models", flag));
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--dim {}: expected NAME=VALUE", s));
    std::string name = s.substr(0, eq), value = s.substr(eq + 1);
    int64_t v = 0;
    size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value.empty()) throw InputError(fmt::format("--dim {}: '{}' is not an integer", s, value));
    if (v <= 0) throw InputError(fmt::format("--dim {}: dims must be positive", s));
    dims[name] = v;
  }
  return dims;
}

Analysis analyze_model(const AnalyzeArgs& args) {
  LoadOptions load;
  load.dims = parse_dims(args.dims);
  AnalysisOptions opt;
  opt.device = args.device;
  opt.strict = args.strict;
  if (!args.dtype.empty()) {
    opt.precision = precision_from_name(args.dtype);
    if (!opt.precision) throw InputError(fmt::format("--dtype {}: expected fp32, tf32, bf16, fp16, fp8 or int8", args.dtype));
  }
  return analyze_onnx(args.model, load, opt);
}

int run_analyze(const AnalyzeArgs& args, const CLI::App& cmd) {
  if (args.by != "node" && args.by != "block") throw InputError(fmt::format("--by {}: expected node or block", args.by));
  if (args.top < 0) throw InputError("--top must be >= 0");
  Analysis a;
  if (is_config_path(args.model)) {
    a = analyze_config(args);
  } else {
    reject_config_flags(cmd);
    a = analyze_model(args);
  }
  if (!args.json_path.empty())
    reports::write_atomically(args.json_path, [&](std::ostream& o) { reports::JsonSink().write(o, a); });
  if (!args.csv_path.empty())
    reports::write_atomically(args.csv_path, [&](std::ostream& o) { reports::CsvSink().write(o, a); });
  std::ostringstream text;
  reports::TableSink(args.top, args.by == "block").write(text, a);
  std::cout << text.str();
  return 0;
}

int run_devices() {
  std::cout << fmt::format("{:<16} {:>4} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>8}\n", "id", "SMs", "memory",
                           "HBM", "bf16 TC", "fp8 TC", "fp32 CUDA", "L2", "NVLink");
  auto rate = [](const std::map<std::string, double>& m, const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("-") : reports::human_rate(it->second, "");
  };
  for (const Device& d : builtin_devices()) {
    std::cout << fmt::format("{:<16} {:>4} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>8}\n", d.id, d.sm_count,
                             reports::human_bytes(static_cast<double>(d.memory_bytes)),
                             reports::human_rate(d.hbm_bandwidth, "B"), rate(d.tensor_flops, "bf16"),
                             rate(d.tensor_flops, "fp8"), rate(d.cuda_core_flops, "fp32"),
                             d.l2_bytes ? reports::human_bytes(static_cast<double>(*d.l2_bytes)) : "n/a",
                             d.nvlink_bandwidth ? reports::human_rate(*d.nvlink_bandwidth, "B") : "-");
  }
  std::cout << "FLOP rates dense, per second; sources per number: data/devices.json\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rooflens: FLOPs, bytes, memory and roofline time per layer of a neural network"};
  app.set_version_flag("--version", "rooflens 0.1.0");
  app.require_subcommand(1);
  AnalyzeArgs args;
  auto* analyze = app.add_subcommand("analyze", "static cost model of an ONNX model or a transformer config.json");
  analyze->add_option("model", args.model, "model.onnx or config.json")->required();
  analyze->add_option("--dim", args.dims, "bind a symbolic input dim, NAME=VALUE (repeatable)");
  analyze->add_option("--dtype", args.dtype, "precision the model runs in: fp32|tf32|bf16|fp16|fp8|int8 (default: the file's)");
  analyze->add_option("--device", args.device, "device id from `rooflens devices`")->capture_default_str();
  analyze->add_option("--top", args.top, "nodes listed in the table")->capture_default_str();
  analyze->add_option("--json", args.json_path, "write the full result as JSON");
  analyze->add_option("--csv", args.csv_path, "write the per-node table as CSV");
  analyze->add_flag("--strict", args.strict, "fail when any node is not costed");
  analyze->add_option("--by", args.by, "table rows: node, or block (repeated layers folded)")->capture_default_str();
  analyze->add_option("--phase", args.phase, "config: prefill | decode | generate")->capture_default_str();
  analyze->add_option("--batch", args.batch, "config: sequences")->capture_default_str();
  analyze->add_option("--seq", args.seq, "config, prefill: tokens per sequence")->capture_default_str();
  analyze->add_option("--context", args.context, "config, decode: tokens already cached")->capture_default_str();
  analyze->add_option("--prompt", args.prompt, "config, generate: prompt tokens")->capture_default_str();
  analyze->add_option("--gen", args.gen, "config, generate: generated tokens")->capture_default_str();
  analyze->add_option("--attention", args.attention, "config: flash (fused) or naive (scores materialized)")->capture_default_str();
  analyze->add_option("--weights", args.weights, "config: fp32|bf16|fp16|fp8|int8|int4 (default: the config's dtype)");
  analyze->add_option("--group-size", args.group_size, "config: int4 rows per fp16 scale")->capture_default_str();
  analyze->add_option("--activations", args.activations, "config: fp32|bf16|fp16|fp8|int8");
  analyze->add_option("--kv-dtype", args.kv_dtype, "config: KV cache dtype (default: activations)");
  analyze->add_option("--tp", args.tp, "config: tensor-parallel GPUs")->capture_default_str();
  auto* devices = app.add_subcommand("devices", "list the device database");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "rooflens: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    if (analyze->parsed()) return run_analyze(args, *analyze);
    if (devices->parsed()) return run_devices();
    return 2;
  } catch (const InputError& e) {
    std::cerr << "rooflens: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "rooflens: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rooflens: internal error: " << e.what() << '\n';
    return 1;
  }
}
