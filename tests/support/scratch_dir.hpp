#pragma once
// A per-process scratch folder under the system temp dir, for tests that run the CLI on files,
// and reading back what they wrote.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rooflens::test {

inline std::filesystem::path scratch_dir(const std::string& tag) {
  std::filesystem::path d = std::filesystem::temp_directory_path() /
                            ("rooflens_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// A file's whole contents ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace rooflens::test
