#pragma once
// `rooflens profile` and `rooflens calibrate`: the GPU commands, run by the GPU module loaded on
// demand. Without the module, a driver or a GPU they say which is missing (exit 2).
#include <CLI/CLI.hpp>

#include "cli/model_args.hpp"

namespace rooflens::cli {

struct ProfileArgs {
  ModelArgs model;
  std::string l2 = "cold", timing = "cupti", trace_path, record_path, cudnn_dir, nccl_dir;
  std::string tuning_cache;  // --tuning-cache FILE
  int min_samples = 10, max_samples = 200;
  double layer_time_limit = 0.5;
};

void add_profile_options(CLI::App& cmd, ProfileArgs& args);
int run_profile_command(const ProfileArgs& args, const CLI::App& cmd);

struct CalibrateArgs {
  std::string out = "device-profile.json";
  bool quick = false, roofs_only = false;
  std::string cudnn_dir;
  int gpus = 1;        // > 1: NCCL's collectives among the first N GPUs too
  std::string add_to;  // a profile to add the collectives or --tables to (measures nothing else)
  std::string nccl_dir;
  std::vector<std::string> tables;  // only the performance tables whose names start so
};
void add_calibrate_options(CLI::App& cmd, CalibrateArgs& args);
int run_calibrate_command(const CalibrateArgs& args);

}  // namespace rooflens::cli
