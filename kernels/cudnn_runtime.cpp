#include "kernels/cudnn_runtime.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <glob.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

namespace rooflens::kernels::cudnn {

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

std::string version_text(int64_t v) { return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100); }

// cuDNN's shim opens its sub-libraries by name; loading them from `dir` first makes that name
// resolve to this directory's copies whatever LD_LIBRARY_PATH says.
void preload_sublibraries(const std::string& dir) {
  for (const char* sub : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"}) {
    std::string path = fmt::format("{}/libcudnn_{}.so.9", dir, sub);
    if (fs::exists(path)) dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

// The directory this module was loaded from: the plugin lies beside it.
std::string module_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&module_directory), &info) && info.dli_fname)
    return fs::path(info.dli_fname).parent_path().string();
  return ".";
}

}  // namespace

std::vector<std::string> cudnn_search_directories(const std::string& directory) {
  std::vector<std::string> dirs;
  if (!directory.empty()) dirs.push_back(directory);
  if (const char* env = std::getenv("ROOFLENS_CUDNN"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("");  // the dynamic loader's own search
  for (const std::string& prefix : python_prefixes())
    for (const char* lib : {"lib", "lib64"})
      for (const char* site : {"site-packages", "dist-packages"})
        for (const std::string& d : glob_dirs(fmt::format("{}/{}/python3*/{}/nvidia/cudnn/lib", prefix, lib, site))) dirs.push_back(d);
  for (const std::string& d : glob_dirs("/usr/lib/python3/dist-packages/nvidia/cudnn/lib")) dirs.push_back(d);
  return dirs;
}

Runtime& Runtime::load(const std::string& directory) {
  static Runtime runtime;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::vector<std::string> tried;
    void* cudnn = nullptr;
    std::string where;
    for (const std::string& dir : cudnn_search_directories(directory)) {
      std::string path = dir.empty() ? "libcudnn.so.9" : dir + "/libcudnn.so.9";
      if (!dir.empty() && !fs::exists(path)) {
        if (fs::exists(dir + "/libcudnn.so.8")) tried.push_back(fmt::format("{}: cuDNN 8 only (rooflens needs 9)", dir));
        else if (dir == directory || tried.empty()) tried.push_back(fmt::format("{}: no libcudnn.so.9", dir));
        continue;
      }
      if (!dir.empty()) preload_sublibraries(dir);
      cudnn = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (cudnn) {
        where = path;
        break;
      }
      if (!dir.empty()) tried.push_back(fmt::format("{}: {}", path, dlerror()));
    }
    if (!cudnn) {
      runtime.status_ = "cuDNN 9 not found (--cudnn DIR or ROOFLENS_CUDNN name its lib/)";
      if (!tried.empty()) runtime.status_ += fmt::format("; {}", tried.front());
      return;
    }
    using GetVersion = size_t (*)();
    auto get_version = reinterpret_cast<GetVersion>(dlsym(cudnn, "cudnnGetVersion"));
    int64_t version = get_version ? static_cast<int64_t>(get_version()) : 0;
    if (version < 90000) {
      runtime.status_ = fmt::format("{} is cuDNN {}: rooflens needs cuDNN 9", where, version_text(version));
      return;
    }
    std::string plugin_path = module_directory() + "/librooflens_cudnn.so";
    void* plugin = dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
      runtime.status_ = fmt::format("cuDNN {} found but the cuDNN plugin did not load: {}", version_text(version), dlerror());
      return;
    }
    using Create = Plugin* (*)(std::string*);
    auto create = reinterpret_cast<Create>(dlsym(plugin, "rooflens_cudnn_plugin_create"));
    std::string error;
    Plugin* p = create ? create(&error) : nullptr;
    if (!p) {
      runtime.status_ = fmt::format("cuDNN {}: {}", version_text(version), create ? error : "plugin without its entry point");
      return;
    }
    if (p->abi() != kPluginAbi) {
      runtime.status_ = fmt::format("{} is of another rooflens build (plugin ABI {}, module {})", plugin_path, p->abi(), kPluginAbi);
      delete p;
      return;
    }
    runtime.plugin_ = p;  // lives as long as the process
    runtime.status_ = fmt::format("cuDNN {} ({})", version_text(version), where);
  });
  return runtime;
}

}  // namespace rooflens::kernels::cudnn
