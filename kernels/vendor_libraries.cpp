#include "kernels/vendor_libraries.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <glob.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace rooflens::kernels {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> glob_dirs(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

// Prefixes of Python installations: each python3 on PATH, virtual and conda environments, the
// user's site, the system's.
std::vector<std::string> python_prefixes() {
  std::vector<std::string> prefixes;
  if (const char* v = std::getenv("VIRTUAL_ENV")) prefixes.emplace_back(v);
  if (const char* c = std::getenv("CONDA_PREFIX")) prefixes.emplace_back(c);
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      std::error_code ec;
      fs::path py = fs::path(dir) / "python3";
      if (dir.empty() || !fs::exists(py, ec)) continue;
      // A virtual environment's python3 links to the base interpreter: the environment's own
      // prefix is the PATH entry's parent, the base's the link target's.
      prefixes.push_back(fs::path(dir).parent_path().string());
      prefixes.push_back(fs::canonical(py, ec).parent_path().parent_path().string());
    }
  }
  if (const char* home = std::getenv("HOME")) prefixes.push_back(std::string(home) + "/.local");
  prefixes.insert(prefixes.end(), {"/usr/local", "/usr"});
  return prefixes;
}

}  // namespace

std::vector<std::string> vendor_search_directories(const std::string& flag_directory,
                                                   const char* env_var,
                                                   const char* nvidia_package) {
  std::vector<std::string> dirs;
  if (!flag_directory.empty()) dirs.push_back(flag_directory);
  if (const char* env = std::getenv(env_var); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("");  // the dynamic loader's own search
  for (const std::string& prefix : python_prefixes())
    for (const char* lib : {"lib", "lib64"})
      for (const char* site : {"site-packages", "dist-packages"})
        for (const std::string& d : glob_dirs(
                 fmt::format("{}/{}/python3*/{}/nvidia/{}/lib", prefix, lib, site, nvidia_package)))
          dirs.push_back(d);
  for (const std::string& d :
       glob_dirs(fmt::format("/usr/lib/python3/dist-packages/nvidia/{}/lib", nvidia_package)))
    dirs.push_back(d);
  return dirs;
}

std::string module_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_directory), &info) && info.dli_fname)
    return fs::path(info.dli_fname).parent_path().string();
  return ".";
}

}  // namespace rooflens::kernels
