#pragma once
// Runs the rooflens binary as a child process, so that its wall time and peak RSS are those of a
// whole process as a user starts it (start-up and shared-library loading included).
#include <string>
#include <vector>

namespace rooflens::bench {

struct ChildRun {
  double seconds = 0;
  long max_rss_kib = 0;
  int status = -1;  // exit code, -1 when killed
};

// `binary args...`, stdout discarded.
ChildRun run_child(const std::string& binary, const std::vector<std::string>& args);

}  // namespace rooflens::bench
