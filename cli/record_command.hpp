#pragma once
// `rooflens record [--out FILE] -- CMD [ARGS...]`: runs any program under the CUPTI injection
// library shipped beside rooflens (librooflens_record.so) and writes everything it ran on the GPU
// as a rooflens trace. rooflens itself stays free of CUDA: it sets the environment, runs the
// program, and merges what the library wrote. Returns the program's exit code.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace rooflens::cli {

struct RecordArgs {
  std::string out = "rooflens.record.json";
  std::vector<std::string> command;
};

void add_record_options(CLI::App& cmd, RecordArgs& args);
int run_record_command(const RecordArgs& args);

}  // namespace rooflens::cli
