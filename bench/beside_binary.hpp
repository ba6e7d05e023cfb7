#pragma once
// A tool the GPU bundle keeps in one folder with the test or benchmark that runs it: beside this
// binary, else where the build tree put it.
#include <filesystem>
#include <string>

namespace rooflens::bench {

inline std::string beside_binary_or(const char* name, const char* built) {
  std::error_code ec;
  std::filesystem::path here =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / name;
  return std::filesystem::exists(here, ec) ? here.string() : std::string(built);
}

}  // namespace rooflens::bench
