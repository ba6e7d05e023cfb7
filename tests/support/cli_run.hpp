#pragma once
// Runs a shell command line for the CLI tests: exit code, stdout and stderr, through files in a
// scratch folder.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rooflens::test {

struct CliRun {
  int code = -1;
  std::string out, err;
};

inline CliRun run_cli(const std::string& command, const std::filesystem::path& scratch) {
  std::filesystem::path out = scratch / "cli_stdout.txt", err = scratch / "cli_stderr.txt";
  int status = std::system((command + " > " + out.string() + " 2> " + err.string()).c_str());
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read(out), read(err)};
}

}  // namespace rooflens::test
