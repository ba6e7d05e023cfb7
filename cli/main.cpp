// The `rooflens` command. The only place that picks exit codes: 0 success, 2 bad input (one
// line on stderr), 1 an internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <sstream>

#include "analyzer/analysis.hpp"
#include "analyzer/errors.hpp"
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
};

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

int run_analyze(const AnalyzeArgs& args) {
  LoadOptions load;
  load.dims = parse_dims(args.dims);
  AnalysisOptions opt;
  opt.device = args.device;
  opt.strict = args.strict;
  if (!args.dtype.empty()) {
    opt.precision = precision_from_name(args.dtype);
    if (!opt.precision) throw InputError(fmt::format("--dtype {}: expected fp32, tf32, bf16, fp16, fp8 or int8", args.dtype));
  }
  if (args.top < 0) throw InputError("--top must be >= 0");
  Analysis a = analyze_onnx(args.model, load, opt);
  if (!args.json_path.empty())
    reports::write_atomically(args.json_path, [&](std::ostream& o) { reports::JsonSink().write(o, a); });
  if (!args.csv_path.empty())
    reports::write_atomically(args.csv_path, [&](std::ostream& o) { reports::CsvSink().write(o, a); });
  std::ostringstream text;
  reports::TableSink(args.top).write(text, a);
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
  auto* analyze = app.add_subcommand("analyze", "static cost model of an ONNX model");
  analyze->add_option("model", args.model, "model.onnx")->required();
  analyze->add_option("--dim", args.dims, "bind a symbolic input dim, NAME=VALUE (repeatable)");
  analyze->add_option("--dtype", args.dtype, "precision the model runs in: fp32|tf32|bf16|fp16|fp8|int8 (default: the file's)");
  analyze->add_option("--device", args.device, "device id from `rooflens devices`")->capture_default_str();
  analyze->add_option("--top", args.top, "nodes listed in the table")->capture_default_str();
  analyze->add_option("--json", args.json_path, "write the full result as JSON");
  analyze->add_option("--csv", args.csv_path, "write the per-node table as CSV");
  analyze->add_flag("--strict", args.strict, "fail when any node is not costed");
  auto* devices = app.add_subcommand("devices", "list the device database");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "rooflens: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    if (analyze->parsed()) return run_analyze(args);
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
