#include "kernels/cudnn_runtime.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "kernels/vendor_libraries.hpp"

namespace rooflens::kernels::cudnn {

namespace {

namespace fs = std::filesystem;

std::string version_text(int64_t v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

// cuDNN's shim opens its sub-libraries by name; loading them from `dir` first makes that name
// resolve to this directory's copies whatever LD_LIBRARY_PATH says.
void preload_sublibraries(const std::string& dir) {
  for (const char* sub : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic",
                          "ops", "cnn", "adv"}) {
    std::string path = fmt::format("{}/libcudnn_{}.so.9", dir, sub);
    if (fs::exists(path)) dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

}  // namespace

std::vector<std::string> cudnn_search_directories(const std::string& directory) {
  return vendor_search_directories(directory, "ROOFLENS_CUDNN", "cudnn");
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
        if (fs::exists(dir + "/libcudnn.so.8"))
          tried.push_back(fmt::format("{}: cuDNN 8 only (rooflens needs 9)", dir));
        else if (dir == directory || tried.empty())
          tried.push_back(fmt::format("{}: no libcudnn.so.9", dir));
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
      runtime.status_ =
          fmt::format("{} is cuDNN {}: rooflens needs cuDNN 9", where, version_text(version));
      return;
    }
    std::string plugin_path = module_directory() + "/librooflens_cudnn.so";
    void* plugin = dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
      runtime.status_ = fmt::format("cuDNN {} found but the cuDNN plugin did not load: {}",
                                    version_text(version), dlerror());
      return;
    }
    using Create = Plugin* (*)(std::string*);
    auto create = reinterpret_cast<Create>(dlsym(plugin, "rooflens_cudnn_plugin_create"));
    std::string error;
    Plugin* p = create ? create(&error) : nullptr;
    if (!p) {
      runtime.status_ = fmt::format("cuDNN {}: {}", version_text(version),
                                    create ? error : "plugin without its entry point");
      return;
    }
    if (p->abi() != kPluginAbi) {
      runtime.status_ = fmt::format("{} is of another rooflens build (plugin ABI {}, module {})",
                                    plugin_path, p->abi(), kPluginAbi);
      delete p;
      return;
    }
    runtime.plugin_ = p;  // lives as long as the process
    runtime.status_ = fmt::format("cuDNN {} ({})", version_text(version), where);
  });
  return runtime;
}

}  // namespace rooflens::kernels::cudnn
