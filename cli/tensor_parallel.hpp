#pragma once
// `rooflens profile --tp N` on a machine with N GPUs: one rank process per GPU, as torchrun
// starts a tensor-parallel job. This process (the launcher) makes NCCL's unique id, starts the
// command line again N times with the rank in the environment, waits for them (a rank that
// fails takes the others down rather than leaving them blocked in a collective), and the
// results come back as one result JSON per rank.
#include <optional>
#include <string>
#include <vector>

namespace rooflens::cli {

// Kept by cli::run: the command line the ranks are started with.
void remember_command_line(int argc, char** argv);

// Set in a rank process by the launcher.
struct RankEnvironment {
  int rank = 0, ranks = 1;
  std::string nccl_id;  // hex (nccl_runtime.hpp)
  std::string dir;      // where the rank writes rank<r>.json, rank<r>.record and its log
};
// nullopt in a process the user started; InputError on a malformed environment.
std::optional<RankEnvironment> rank_environment();

// Starts `ranks` rank processes writing into `dir` and waits for every one. 0 when all
// succeeded; else the first failure's exit code, with that rank's log on stderr.
int run_ranks(int ranks, const std::string& nccl_id, const std::string& dir);

// A fresh directory for the ranks' files ($TMPDIR or /tmp), removed by the caller.
std::string make_rank_directory();

}  // namespace rooflens::cli
