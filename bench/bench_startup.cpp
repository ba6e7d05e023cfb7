// What a user pays per command, as a whole process: `rooflens devices` (nothing but start-up)
// and `rooflens analyze` of ViT-B/16 (2,068 nodes): median wall time and peak RSS over runs.
// The binary links no CUDA library (the GPU module is loaded only by profile and calibrate);
// targets: devices under 64 MiB peak RSS, the ViT-B/16 analysis under 30 ms wall.
//   rooflens_bench_startup [runs]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/child_process.hpp"

using rooflens::bench::ChildRun;
using rooflens::bench::run_child;

namespace {

void report(const char* label, const std::vector<std::string>& args, int runs) {
  std::vector<double> t;
  long rss = 0;
  int status = 0;
  for (int i = 0; i < runs; ++i) {
    ChildRun r = run_child(ROOFLENS_BIN, args);
    t.push_back(r.seconds);
    rss = std::max(rss, r.max_rss_kib);
    status = std::max(status, r.status);
  }
  std::sort(t.begin(), t.end());
  std::printf("%-34s exit %d: median %.1f ms, min %.1f ms, peak RSS %.1f MiB (%d runs)\n", label,
              status, 1e3 * t[t.size() / 2], 1e3 * t.front(), static_cast<double>(rss) / 1024,
              runs);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  report("rooflens devices", {"devices"}, runs);
  report("rooflens analyze ViT-B/16",
         {"analyze", ROOFLENS_SOURCE_DIR "/tests/data/onnx/vit_b_16-opset17.onnx"}, runs);
  report("rooflens analyze Llama-2-7B decode",
         {"analyze", ROOFLENS_SOURCE_DIR "/samples/configs/llama-2-7b/config.json", "--phase",
          "decode"},
         runs);
  return 0;
}
