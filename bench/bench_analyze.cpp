// Speed and memory of `analyze` (issue targets): a ~2,000-node graph in well under 0.2 s; any
// ONNX file, weights inline or external, under 64 MiB peak RSS plus the graph's own size; the
// 347 MB ViT-B/16 file with inline weights in under 60 ms, the 1.33 GB inline decoder in under
// 150 ms. Each file is timed through the CLI (a child process: its start-up included) and in
// process (a forked child that only analyzes), and beside onnx-tool 1.0.1 where Python has it.
// Prints figures; asserts nothing.
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "tests/support/decoder_model.hpp"

namespace fs = std::filesystem;
using namespace rooflens;

namespace {

struct ChildRun {
  double seconds;
  long max_rss_kib;
  int status;
};

// Runs `argv` in a child so its peak RSS is its own.
ChildRun run_child(const std::vector<std::string>& args) {
  std::fflush(stdout);  // or the child repeats what is still buffered
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {s, ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

ChildRun run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), ROOFLENS_BIN);
  return run_child(args);
}

// `analyze_onnx` in a forked child of this small process (no CUDA libraries, no CLI): the time the
// analysis takes, and the child's peak RSS, of which `baseline` was there before it started.
struct InProcess {
  double seconds;
  double peak_mib, baseline_mib;
  size_t nodes;
};

InProcess run_in_process(const std::string& path, const LoadOptions& load) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    struct rusage before {};
    getrusage(RUSAGE_SELF, &before);
    auto t0 = std::chrono::steady_clock::now();
    Analysis a = analyze_onnx(path, load, AnalysisOptions{});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double result[3] = {s, static_cast<double>(before.ru_maxrss),
                        static_cast<double>(a.nodes.size())};
    if (write(fds[1], result, sizeof result) != sizeof result) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  double result[3] = {0, 0, 0};
  ssize_t got = read(fds[0], result, sizeof result);
  close(fds[0]);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  if (got != sizeof result) return {};
  return {result[0], static_cast<double>(ru.ru_maxrss) / 1024, result[1] / 1024,
          static_cast<size_t>(result[2])};
}

// onnx-tool 1.0.1's profile of the same file, where Python has it (pip install onnx-tool==1.0.1).
// `shapes`: the Python expression for its dynamic_shapes argument.
void compare_onnx_tool(const std::string& path, double rooflens_s, const std::string& shapes) {
  static const bool have = run_child({"python3", "-c", "import onnx_tool"}).status == 0;
  if (!have) {
    std::printf(
        "              onnx-tool: not installed (pip install onnx-tool==1.0.1 to compare)\n");
    return;
  }
  ChildRun r = run_child(
      {"python3", "-c",
       "import sys, numpy, onnx_tool; onnx_tool.model_profile(sys.argv[1], " + shapes + ")", path});
  if (r.status != 0) {
    std::printf("              onnx-tool 1.0.1 model_profile: failed (exit %d) after %.2f s\n",
                r.status, r.seconds);
    return;
  }
  std::printf(
      "              onnx-tool 1.0.1 model_profile: %.2f s, peak RSS %.0f MiB -> rooflens (CLI) "
      "%.0fx faster\n",
      r.seconds, static_cast<double>(r.max_rss_kib) / 1024, r.seconds / rooflens_s);
}

// `onnx_tool_shapes` empty: onnx-tool is not run (it loads external weights, which are not
// written).
void report_file(const char* label, const std::string& file, const std::vector<std::string>& dims,
                 double graph_mb, const std::string& onnx_tool_shapes) {
  double mb = static_cast<double>(fs::file_size(file)) / 1e6;
  std::vector<std::string> args{"analyze", file};
  LoadOptions load;
  for (const std::string& d : dims) {
    args.push_back("--dim");
    args.push_back(d);
    auto eq = d.find('=');
    load.dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
  }
  ChildRun cli = run_cli(args);
  InProcess in = run_in_process(file, load);
  std::printf("%-13s file %.1f MB (graph without weights %.2f MB), %zu nodes\n", label, mb,
              graph_mb, in.nodes);
  std::printf(
      "              CLI: exit %d, %.1f ms, peak RSS %.1f MiB (target: 64 MiB + the graph)\n",
      cli.status, 1e3 * cli.seconds, static_cast<double>(cli.max_rss_kib) / 1024);
  std::printf(
      "              in process: %.1f ms, peak RSS %.1f MiB (%.1f MiB before the analysis)\n",
      1e3 * in.seconds, in.peak_mib, in.baseline_mib);
  if (!onnx_tool_shapes.empty()) compare_onnx_tool(file, cli.seconds, onnx_tool_shapes);
}

// ViT-B/16 as exported (tests/data/onnx, weights external and not shipped) with each weight
// written inline as zeros: the 347 MB file of the issue.
void write_inline_vit(const std::string& from, const std::string& to) {
  onnx::ModelProto m;
  {
    std::ifstream in(from, std::ios::binary);
    if (!m.ParseFromIstream(&in)) throw std::runtime_error("cannot read " + from);
  }
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.mutable_raw_data()->assign(static_cast<size_t>(n) * 4,
                                 '\0');  // the exported weights are float32
  }
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  if (!m.SerializeToOstream(&out)) throw std::runtime_error("cannot write " + to);
}

void bench_large_graph(int runs) {
  std::string path = std::string(ROOFLENS_SOURCE_DIR) + "/tests/data/onnx/vit_l_16-opset17.onnx";
  std::vector<double> times;
  size_t nodes = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Analysis a = analyze_onnx(path, LoadOptions{}, AnalysisOptions{});
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    nodes = a.nodes.size();
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "large graph   ViT-L/16 (TorchScript, opset 17), %zu nodes: median %.1f ms, min %.1f ms over "
      "%d runs "
      "(load + shapes + rules + liveness)\n",
      nodes, 1e3 * times[times.size() / 2], 1e3 * times[0], runs);
}

void bench_decoder(const fs::path& dir, const bench::DecoderShape& shape, const char* label) {
  fs::path file = dir / (shape.inline_weights ? "decoder_inline.onnx" : "decoder_external.onnx");
  int64_t params = bench::write_decoder(file.string(), shape);
  bench::DecoderShape outline = shape;
  outline.inline_weights = false;
  fs::path graph_only = dir / "decoder_graph.onnx";
  bench::write_decoder(graph_only.string(), outline);
  std::printf("%s: %ld layers, %.2f B params\n", label, static_cast<long>(shape.layers),
              static_cast<double>(params) / 1e9);
  report_file("", file.string(), {"batch=1", "seq=2048"},
              static_cast<double>(fs::file_size(graph_only)) / 1e6,
              shape.inline_weights ? "{'input_ids': numpy.zeros((1, 2048), numpy.int64)}" : "");
  fs::remove(file);
  fs::remove(graph_only);
}

void bench_inline_vit(const fs::path& dir) {
  std::string from = std::string(ROOFLENS_SOURCE_DIR) + "/tests/data/onnx/vit_b_16-opset17.onnx";
  fs::path file = dir / "vit_b_16-inline.onnx";
  write_inline_vit(from, file.string());
  std::printf("ViT-B/16 inline (TorchScript export, float32 weights written inline):\n");
  report_file("", file.string(), {}, static_cast<double>(fs::file_size(from)) / 1e6, "None");
  fs::remove(file);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  fs::path dir = fs::temp_directory_path() / ("rooflens_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  bench_large_graph(runs);
  bench_inline_vit(dir);
  bench::DecoderShape seven_b;  // Llama-2-7B dims
  bench_decoder(dir, seven_b, "Llama-2-7B-shaped decoder, weights external");
  bench::DecoderShape inline_shape;
  inline_shape.layers = 2;  // fp16 zeros inline: keeps the file under protobuf's 2 GiB
  inline_shape.inline_weights = true;
  bench_decoder(dir, inline_shape, "2-layer decoder, fp16 weights inline");
  fs::remove_all(dir);
  return 0;
}
