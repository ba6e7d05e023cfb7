// What `rooflens record` adds to a program's kernel time (target: at most 3%): the GPU test program
// (tests/gpu/record_target.cu --bench N: N rounds of 100 back-to-back kernels of about 20 us, timed
// with CUDA events) run plain and under `rooflens record`, alternately, the median of each.
// Needs a GPU; prints "skipped: no CUDA device" where the program cannot run.
//   rooflens_bench_record [rounds] [runs]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/beside_binary.hpp"

namespace fs = std::filesystem;

namespace {

struct Figures {
  double kernel_ms = -1, wall_ms = -1;
};

Figures run(const std::string& cmd) {
  Figures f;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return f;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::sscanf(line, "kernel_ms %lf", &f.kernel_ms);
    std::sscanf(line, "wall_ms %lf", &f.wall_ms);
  }
  pclose(p);
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 200, runs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::string target = rooflens::bench::beside_binary_or("rooflens_record_target",
                                                         ROOFLENS_RECORD_TARGET),
              rooflens = rooflens::bench::beside_binary_or("rooflens", ROOFLENS_BIN);
  std::string out =
      (fs::temp_directory_path() / ("rooflens_bench_record_" + std::to_string(getpid()) + ".json"))
          .string();
  std::string plain = target + " --bench " + std::to_string(rounds);
  std::string recorded = rooflens + " record --out " + out + " -- " + plain + " 2>/dev/null";
  std::vector<double> k_plain, k_rec, w_plain, w_rec;
  for (int i = 0; i < runs; ++i) {
    Figures a = run(plain + " 2>/dev/null"), b = run(recorded);
    if (a.kernel_ms < 0 || b.kernel_ms < 0) {
      std::printf("skipped: no CUDA device (or %s / %s missing)\n", target.c_str(),
                  rooflens.c_str());
      return 0;
    }
    k_plain.push_back(a.kernel_ms), k_rec.push_back(b.kernel_ms), w_plain.push_back(a.wall_ms),
        w_rec.push_back(b.wall_ms);
  }
  std::remove(out.c_str());
  double kp = median(k_plain), kr = median(k_rec), wp = median(w_plain), wr = median(w_rec);
  std::printf("%d rounds x 100 kernels, median of %d runs each\n", rounds, runs);
  std::printf(
      "kernel time: plain %.2f ms, under rooflens record %.2f ms: %+.2f%% (target <= 3%%)\n", kp,
      kr, 100 * (kr - kp) / kp);
  std::printf("host wall:   plain %.2f ms, under rooflens record %.2f ms: %+.2f%%\n", wp, wr,
              100 * (wr - wp) / wp);
  return 0;
}
