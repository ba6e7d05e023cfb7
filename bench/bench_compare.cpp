// `rooflens compare` of a 50 MB timeline as a whole process: wall time and peak RSS (targets: under
// 3 s and 500 MB on the CPU machine). The timelines are generated: GPT-2 (12 layers) forwards
// as eager PyTorch calls them, repeated until the file passes 50 MB; once as a vanilla PyTorch
// profiler trace (Chrome JSON, nn.Module events) and once as a `rooflens record` file (NVTX
// module-path ranges).
//   rooflens_bench_compare [megabytes] [runs]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/child_process.hpp"
#include "profiler/trace/trace_io.hpp"
#include "tests/support/synthetic_timeline.hpp"

namespace fs = std::filesystem;
using rooflens::bench::SyntheticTimeline;

namespace {

void measure(const char* label, const fs::path& trace, int runs) {
  std::vector<double> t;
  long rss = 0;
  int status = 0;
  for (int i = 0; i < runs; ++i) {
    // --force: the generated kernels' durations are made up (about 6x the prediction's matrix
    // time), which the trust checks refuse; the bench measures the reading and the attribution.
    auto r = rooflens::bench::run_child(
        ROOFLENS_BIN, {"compare", ROOFLENS_SOURCE_DIR "/samples/configs/gpt2/config.json",
                       trace.string(), "--phase", "prefill", "--seq", "128", "--force"});
    t.push_back(r.seconds);
    rss = std::max(rss, r.max_rss_kib);
    status = std::max(status, r.status);
  }
  std::sort(t.begin(), t.end());
  std::printf("%-44s %6.1f MB: exit %d, median %.2f s, min %.2f s, peak RSS %.0f MiB (%d runs)\n",
              label, static_cast<double>(fs::file_size(trace)) / 1e6, status, t[t.size() / 2],
              t.front(), static_cast<double>(rss) / 1024, runs);
}

}  // namespace

int main(int argc, char** argv) {
  double megabytes = argc > 1 ? std::atof(argv[1]) : 50;
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  fs::path dir = fs::temp_directory_path() / ("rooflens_bench_compare_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // One step of each kind, to size the runs.
  SyntheticTimeline probe;
  probe.enter("ProfilerStep#0", "record_function");
  rooflens::bench::gpt2_forward(probe, 12, true);
  probe.exit();
  size_t per_step = probe.chrome_trace_json().size();
  int steps = static_cast<int>(megabytes * 1e6 / static_cast<double>(per_step)) + 1;

  SyntheticTimeline vanilla, annotated;
  for (int s = 0; s < steps; ++s) {
    vanilla.enter("ProfilerStep#" + std::to_string(s), "record_function");
    rooflens::bench::gpt2_forward(vanilla, 12, true);
    vanilla.exit();
    vanilla.host(30);
  }
  // A record file holds about two thirds the bytes per activity: half again as many forwards.
  for (int s = 0; s < steps * 3 / 2; ++s) {
    rooflens::bench::gpt2_forward(annotated, 12, false);
    annotated.host(30);
  }
  fs::path chrome = dir / "vanilla.pt.trace.json", record = dir / "annotated.record.json";
  std::ofstream(chrome) << vanilla.chrome_trace_json();
  {
    std::ofstream out(record);
    rooflens::profiler::write_trace(out, annotated.trace());
  }
  std::printf(
      "GPT-2 forwards (12 layers): %d in the PyTorch trace (%zu GPU activities), %d in the record "
      "file (%zu)\n",
      steps, vanilla.trace().activities.size(), steps * 3 / 2, annotated.trace().activities.size());
  measure("compare, vanilla PyTorch profiler trace", chrome, runs);
  measure("compare, rooflens record file", record, runs);
  fs::remove_all(dir);
  return 0;
}
