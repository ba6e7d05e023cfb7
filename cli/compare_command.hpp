#pragma once
// `rooflens compare MODEL TIMELINE`: the model's prediction next to a real run's timeline (a
// `rooflens record` file or a PyTorch profiler trace), module by module. `rooflens compare MODEL
// BEFORE AFTER`: two runs of the model side by side, what changed per module. Plain C++: no GPU
// needed.
#include <CLI/CLI.hpp>

#include "cli/model_args.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::cli {

struct CompareArgs {
  ModelArgs model;
  std::string timeline, after, trace_path;  // after: the second run of a diff
  int steps = 0;
  bool force = false;  // compare a timeline the trust checks refuse (another model, phase, device)
};

void add_compare_options(CLI::App& cmd, CompareArgs& args);
// The analysis with its `comparison` set, and the timeline it was compared with (writes nothing).
struct ComparedRun {
  Analysis analysis;
  profiler::Trace trace;
};
ComparedRun compare_run(const CompareArgs& args, const CLI::App& cmd);
int run_compare_command(const CompareArgs& args, const CLI::App& cmd);

}  // namespace rooflens::cli
