#pragma once
// `rooflens compare MODEL TIMELINE`: the model's prediction next to a real run's timeline (a
// `rooflens record` file or a PyTorch profiler trace), module by module. Plain C++: no GPU needed.
#include <CLI/CLI.hpp>

#include "cli/model_args.hpp"

namespace rooflens::cli {

struct CompareArgs {
  ModelArgs model;
  std::string timeline, trace_path;
  int steps = 0;
};

void add_compare_options(CLI::App& cmd, CompareArgs& args);
int run_compare_command(const CompareArgs& args, const CLI::App& cmd);

}  // namespace rooflens::cli
