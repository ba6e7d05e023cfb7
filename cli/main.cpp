// The `rooflens` command (cli/entry.hpp: the executable and the Python package both run it). The
// only place that picks exit codes: 0 success, 2 bad input (one line on stderr), 1 an internal or
// GPU error, 3 a profile run marked invalid (CUPTI dropped records), 4 an analysis with nodes not
// costed (outputs written, marked partial; 0 under --allow-partial), 130 a profile interrupted by
// Ctrl-C (outputs marked incomplete).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <sstream>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/core/errors.hpp"
#include "cli/compare_command.hpp"
#include "cli/completion.hpp"
#include "cli/entry.hpp"
#include "cli/model_args.hpp"
#include "cli/profile_command.hpp"
#include "cli/record_command.hpp"
#include "cli/serve_command.hpp"
#include "cli/tensor_parallel.hpp"
#include "reports/atomic_file.hpp"
#include "reports/compare_report.hpp"
#include "reports/format.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"

namespace {

using namespace rooflens;

// A partial analysis (a node runs without a cost) writes every output, marked partial, and exits
// 4 so that no script takes its lower bound for the model's cost; --allow-partial accepts it.
constexpr int kPartialExit = 4;

int run_analyze(const cli::ModelArgs& args, const CLI::App& cmd, bool allow_partial) {
  Analysis a = cli::build_analysis(args, cmd);
  cli::write_outputs(args, a);
  if (!a.coverage.partial() || allow_partial) return 0;
  std::cerr << fmt::format(
      "rooflens: {}: {} (outputs written, marked partial; --allow-partial exits 0)\n", a.model_name,
      a.coverage.line());
  return kPartialExit;
}

struct ReportArgs {
  std::string path, html, csv, trace, by = "node";
  int top = 15, width = 0;
};

// Re-renders a saved result (--json of analyze, profile or compare): the same terminal report,
// HTML, CSV and trace as the run that wrote it.
int run_report(const ReportArgs& a) {
  const reports::TableOptions layout = cli::table_options(a.by, a.top, a.width);
  reports::SavedResult r = reports::read_result(a.path);
  const bool compared = r.json.contains("compare");  // a `compare` result: its own table and CSV
  const bool by_block = a.by == "block";
  std::ostringstream text;  // rendered whole before any file is written: a bad field writes nothing
  if (compared)
    reports::write_compare_table(text, r.json, a.top, by_block, layout.width);
  else
    reports::write_table(text, r.json, layout);
  reports::OutputSet outputs;
  outputs.add("--html", a.html, [&](std::ostream& o) { reports::write_html(o, r.json); });
  outputs.add("--csv", a.csv, [&](std::ostream& o) {
    if (compared)
      reports::write_compare_csv(o, r.json, by_block);
    else
      reports::write_csv_from_json(o, r.json);
  });
  outputs.add("--trace", a.trace, [&](std::ostream& o) { reports::write_chrome_trace(o, r.json); });
  outputs.write_all();
  if (outputs.takes_stdout()) return 0;  // the report on stdout stays parseable
  std::cout << text.str();
  return 0;
}

int run_devices() {
  std::cout << fmt::format("{:<16} {:>4} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>8}\n", "id",
                           "SMs", "memory", "HBM", "bf16 TC", "fp8 TC", "fp32 CUDA", "L2",
                           "NVLink");
  auto rate = [](const std::map<std::string, double>& m, const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("-") : reports::human_rate(it->second, "");
  };
  for (const Device& d : builtin_devices()) {
    std::cout << fmt::format(
        "{:<16} {:>4} {:>9} {:>9} {:>10} {:>10} {:>10} {:>9} {:>8}\n", d.id, d.sm_count,
        reports::human_bytes(static_cast<double>(d.memory_bytes)),
        reports::human_rate(d.hbm_bandwidth, "B"), rate(d.tensor_flops, "bf16"),
        rate(d.tensor_flops, "fp8"), rate(d.cuda_core_flops, "fp32"),
        d.l2_bytes ? reports::human_bytes(static_cast<double>(*d.l2_bytes)) : "n/a",
        d.nvlink_bandwidth ? reports::human_rate(*d.nvlink_bandwidth, "B") : "-");
  }
  std::cout << "FLOP rates dense, per second; sources per number: data/devices.json\n";
  return 0;
}

void add_report_options(CLI::App& report, ReportArgs& rargs) {
  report.add_option("result", rargs.path, "result.json from analyze or profile")->required();
  report.add_option("--html", rargs.html, "write the HTML report");
  report.add_option("--csv", rargs.csv, "write the per-node CSV");
  report.add_option("--trace", rargs.trace,
                    "write the predicted timeline as a Chrome/Perfetto trace");
  report.add_option("--top", rargs.top, "nodes listed in the table")->capture_default_str();
  cli::add_layout_options(report, rargs.by, rargs.width);
}

}  // namespace

int rooflens::cli::run(int argc, char** argv) {
  cli::remember_command_line(argc, argv);
  CLI::App app{
      "rooflens: FLOPs, bytes, memory and roofline time per layer of a neural network, checked on "
      "the GPU"};
  app.set_version_flag("--version", "rooflens 0.1.0");
  app.require_subcommand(1);
  cli::ModelArgs args;
  auto* analyze = app.add_subcommand(
      "analyze", "static cost model of an ONNX model or a transformer config.json");
  cli::add_model_options(*analyze, args);
  analyze->add_option("--trace", args.trace_path,
                      "write the predicted timeline as a Chrome/Perfetto trace (no GPU needed)");
  bool allow_partial = false;
  analyze->add_flag("--allow-partial", allow_partial,
                    "exit 0 when some nodes are not costed (else exit 4, outputs marked partial)");
  cli::ProfileArgs pargs;
  auto* profile = app.add_subcommand(
      "profile", "replay every layer on this GPU under CUPTI/NVTX; prediction vs measurement");
  cli::add_profile_options(*profile, pargs);
  cli::CalibrateArgs cargs;
  auto* calibrate = app.add_subcommand(
      "calibrate", "measure this GPU's roofs; writes a device profile for --device-profile");
  cli::add_calibrate_options(*calibrate, cargs);
  ReportArgs rargs;
  auto* report = app.add_subcommand(
      "report", "re-render a saved --json result (terminal report, HTML, CSV, predicted trace)");
  add_report_options(*report, rargs);
  auto* devices = app.add_subcommand("devices", "list the device database");
  cli::CompareArgs compare_args;
  auto* compare = app.add_subcommand("compare",
                                     "the prediction next to a real run's timeline (rooflens "
                                     "record, PyTorch profiler), module by module");
  cli::add_compare_options(*compare, compare_args);
  cli::RecordArgs record_args;
  std::string shell;
  auto* completion = app.add_subcommand(
      "completion", "print a shell completion script: rooflens completion bash|zsh|fish");
  completion->add_option("shell", shell, "bash, zsh or fish")->required();
  auto* record = app.add_subcommand("record",
                                    "run a program under CUPTI and write its GPU timeline: "
                                    "rooflens record [--out FILE] -- CMD [ARGS...]");
  cli::add_record_options(*record, record_args);
  cli::ServeArgs serve_args;
  auto* serve = app.add_subcommand("serve",
                                   "a serving deployment simulated step by step: TTFT, TPOT, "
                                   "throughput, KV capacity (config.json)");
  cli::add_serve_options(*serve, serve_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "rooflens: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    if (analyze->parsed()) return run_analyze(args, *analyze, allow_partial);
    if (profile->parsed()) return cli::run_profile_command(pargs, *profile);
    if (calibrate->parsed()) return cli::run_calibrate_command(cargs);
    if (report->parsed()) return run_report(rargs);
    if (devices->parsed()) return run_devices();
    if (compare->parsed()) return cli::run_compare_command(compare_args, *compare);
    if (record->parsed()) return cli::run_record_command(record_args);
    if (completion->parsed()) {
      std::cout << cli::completion_script(app, shell);
      return 0;
    }
    if (serve->parsed()) return cli::run_serve_command(serve_args, *serve);
    return 2;
  } catch (const InputError& e) {
    std::cerr << "rooflens: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "rooflens: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rooflens: error: " << e.what() << '\n';
    return 1;
  }
}
