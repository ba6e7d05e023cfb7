#include "cli/tensor_parallel.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "analyzer/core/errors.hpp"

extern char** environ;

namespace rooflens::cli {

namespace {

namespace fs = std::filesystem;

std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}

// The program to start again: this executable, or under the Python package (the CLI runs inside
// python) the interpreter with -m rooflens.
std::vector<std::string> rank_argv() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError("profile --tp: cannot find this executable (/proc/self/exe)");
  std::vector<std::string> argv{exe.string()};
  if (exe.filename().string().rfind("python", 0) == 0) argv.insert(argv.end(), {"-m", "rooflens"});
  const auto& args = command_line();
  argv.insert(argv.end(), args.begin() + (args.empty() ? 0 : 1), args.end());
  return argv;
}

std::string log_tail(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); ++i)
    out += "  " + lines[i] + "\n";
  return out;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

void remember_command_line(int argc, char** argv) {
  command_line().assign(argv, argv + argc);
}

std::optional<RankEnvironment> rank_environment() {
  const char* rank = std::getenv("ROOFLENS_TP_RANK");
  if (!rank) return std::nullopt;
  RankEnvironment e;
  const char* ranks = std::getenv("ROOFLENS_TP_RANKS");
  const char* id = std::getenv("ROOFLENS_TP_NCCL_ID");
  const char* dir = std::getenv("ROOFLENS_TP_DIR");
  if (!ranks || !id || !dir)
    throw InputError("ROOFLENS_TP_RANK is set without ROOFLENS_TP_RANKS, _NCCL_ID and _DIR");
  try {
    e.rank = std::stoi(rank);
    e.ranks = std::stoi(ranks);
  } catch (const std::exception&) {
    throw InputError("ROOFLENS_TP_RANK / ROOFLENS_TP_RANKS are not numbers");
  }
  if (e.ranks < 2 || e.rank < 0 || e.rank >= e.ranks)
    throw InputError("ROOFLENS_TP_RANK is outside ROOFLENS_TP_RANKS");
  e.nccl_id = id;
  e.dir = dir;
  return e;
}

std::string make_rank_directory() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/rooflens-tp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw InputError(fmt::format("profile --tp: cannot create {}", pattern));
  return buf.data();
}

int run_ranks(int ranks, const std::string& nccl_id, const std::string& dir) {
  std::vector<std::string> argv_text = rank_argv();
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<pid_t> pids;
  auto stop_all = [&] {
    for (pid_t p : pids)
      if (p > 0) kill(p, SIGTERM);
  };
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> env_text;
    for (char** e = environ; *e; ++e)
      if (std::string_view(*e).rfind("ROOFLENS_TP_", 0) != 0) env_text.emplace_back(*e);
    env_text.push_back(fmt::format("ROOFLENS_TP_RANK={}", r));
    env_text.push_back(fmt::format("ROOFLENS_TP_RANKS={}", ranks));
    env_text.push_back("ROOFLENS_TP_NCCL_ID=" + nccl_id);
    env_text.push_back("ROOFLENS_TP_DIR=" + dir);
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string log = fmt::format("{}/rank{}.log", dir, r);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      stop_all();
      throw InputError(fmt::format("profile --tp: cannot start rank {}: {}", r, std::strerror(rc)));
    }
    pids.push_back(pid);
  }
  std::cerr << fmt::format("rooflens: {} rank processes, one per GPU (logs in {})\n", ranks, dir);
  int failed_rank = -1, failed_code = 0, running = ranks;
  while (running > 0) {
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int r = 0; r < ranks; ++r) {
      if (pids[r] != done) continue;
      pids[r] = -1;
      --running;
      int code = exit_code(status);
      // Exit 3 is a finished but invalid measurement: the other ranks are not stuck.
      if (code != 0 && code != 3 && failed_rank < 0) {
        failed_rank = r, failed_code = code;
        stop_all();  // the others would wait in a collective for the rank that is gone
      } else if (code == 3 && failed_code == 0) {
        failed_code = 3;
      }
    }
  }
  if (failed_rank >= 0) {
    std::cerr << fmt::format("rooflens: rank {} (GPU {}) failed with exit {}; its log:\n{}",
                             failed_rank, failed_rank, failed_code,
                             log_tail(fmt::format("{}/rank{}.log", dir, failed_rank)));
    return failed_code;
  }
  return failed_code;
}

}  // namespace rooflens::cli
