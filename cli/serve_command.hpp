#pragma once
// `rooflens serve CONFIG`: a serving deployment simulated step by step
// (analyzer/serving/serving.hpp).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rooflens::cli {

struct ServeArgs {
  std::string model, device = "H100-SXM", device_profile, engine = "vllm";
  std::string weights, activations, kv_dtype;
  int64_t tp = 1, pp = 1, dp = 1, ep = 1;
  bool sp = false;
  std::string isl = "1024", osl = "1024";
  int64_t concurrency = 0, num_requests = 0;
  double rate = 0;
  uint64_t seed = 0;
  int64_t max_batched_tokens = 0, max_seqs = 0, block_size = 0;
  double memory_fraction = 0;
  std::string chunked_prefill, cuda_graphs = "on", moe_kernel;
  double step_overhead_us = 0;
  std::vector<int64_t> sweep;
  std::string json_path, html_path;
};

void add_serve_options(CLI::App& cmd, ServeArgs& args);
// The simulated deployment: its result document (what --json writes) and its terminal report.
struct ServeReport {
  nlohmann::json result;
  std::string text;
};
ServeReport serve_run(const ServeArgs& args, const CLI::App& cmd);
int run_serve_command(const ServeArgs& args, const CLI::App& cmd);

}  // namespace rooflens::cli
