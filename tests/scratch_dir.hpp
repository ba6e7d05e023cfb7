#pragma once
// A per-process scratch folder under the system temp dir, for tests that run the CLI on files.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace rooflens::test {

inline std::filesystem::path scratch_dir(const std::string& tag) {
  std::filesystem::path d = std::filesystem::temp_directory_path() / ("rooflens_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace rooflens::test
