#pragma once
// Outputs are written whole or not at all: write a temp file beside the target, then rename.
// The path "-" is standard output, written in one piece once rendered.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace rooflens::reports {

// "-": the Unix name for standard output.
inline bool is_stdout(const std::string& path) {
  return path == "-";
}

// Calls `write` with a stream to a temp file in the target's directory and renames it over
// `path` once complete; on any failure the temp file is removed and InputError thrown. For "-"
// the output is rendered whole into memory first, then written to standard output.
void write_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

// The outputs a command writes (--json, --csv, --html, --trace, ...). At most one may be "-";
// files are written first and standard output last, so a failing file leaves stdout empty.
class OutputSet {
 public:
  using Writer = std::function<void(std::ostream&)>;
  // An empty path adds nothing; a second "-" is an InputError naming both flags.
  void add(const std::string& flag, const std::string& path, Writer write);
  // True when a report goes to standard output: the terminal report must stay out of it.
  bool takes_stdout() const { return !stdout_flag_.empty(); }
  void write_all() const;

 private:
  struct Output {
    std::string path;
    Writer write;
  };
  std::vector<Output> outputs_;
  std::string stdout_flag_;
};

}  // namespace rooflens::reports
