// Speed and memory of `analyze` (issue targets): a ~2,000-node graph in well under 0.2 s; a
// 32-layer 7B decoder with external weights under 100 MB peak RSS; with inline weights, peak
// RSS under 1.3x the file size. Prints figures; asserts nothing.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "analyzer/analysis.hpp"
#include "bench/decoder_model.hpp"

namespace fs = std::filesystem;
using namespace rooflens;

namespace {

struct ChildRun {
  double seconds;
  long max_rss_kib;
  int status;
};

// Runs `rooflens analyze` in a child so its peak RSS is its own.
ChildRun run_cli(const std::vector<std::string>& args) {
  std::fflush(stdout);  // or the child repeats what is still buffered
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(ROOFLENS_BIN)};
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    execv(ROOFLENS_BIN, argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {s, ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
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
  std::printf("large graph   ViT-L/16 (TorchScript, opset 17), %zu nodes: median %.1f ms, min %.1f ms over %d runs "
              "(load + shapes + rules + liveness)\n", nodes, 1e3 * times[times.size() / 2], 1e3 * times[0], runs);
}

void bench_decoder(const fs::path& dir, const bench::DecoderShape& shape, const char* label) {
  fs::path file = dir / (shape.inline_weights ? "decoder_inline.onnx" : "decoder_external.onnx");
  int64_t params = bench::write_decoder(file.string(), shape);
  double mb = static_cast<double>(fs::file_size(file)) / 1e6;
  ChildRun r = run_cli({"analyze", file.string(), "--dim", "batch=1", "--dim", "seq=2048"});
  double rss_mb = static_cast<double>(r.max_rss_kib) * 1024 / 1e6;
  std::printf("%-13s %ld layers, %.2f B params, file %.1f MB: exit %d, %.2f s, peak RSS %.1f MB (%.2fx file)\n", label,
              static_cast<long>(shape.layers), static_cast<double>(params) / 1e9, mb, r.status, r.seconds, rss_mb, rss_mb / mb);
  fs::remove(file);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  fs::path dir = fs::temp_directory_path() / ("rooflens_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  bench_large_graph(runs);
  bench::DecoderShape seven_b;  // Llama-2-7B dims
  bench_decoder(dir, seven_b, "7B external");
  bench::DecoderShape inline_shape;
  inline_shape.layers = 2;  // fp16 zeros inline: keeps the file under protobuf's 2 GiB
  inline_shape.inline_weights = true;
  bench_decoder(dir, inline_shape, "inline");
  fs::remove_all(dir);
  return 0;
}
