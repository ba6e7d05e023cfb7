// The binary's side of the GPU module boundary (gpu_module.hpp): finding and loading it.
#include "profiler/gpu/gpu_module.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "analyzer/core/errors.hpp"
#include "profiler/gpu/build_id.hpp"

namespace rooflens::gpu {

namespace {

namespace fs = std::filesystem;
constexpr const char* kModuleName = "librooflens_gpu.so";

fs::path executable_directory() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

// One line from dlerror()'s text: which library was missing, said the way a user can act on.
std::string load_failure(const std::string& path, const std::string& error) {
  auto missing = error.find(": cannot open shared object file");
  if (missing != std::string::npos) {
    std::string lib = error.substr(0, missing);
    if (auto colon = lib.rfind(": "); colon != std::string::npos) lib = lib.substr(colon + 2);
    if (lib.find("cudart") != std::string::npos || lib.find("cublas") != std::string::npos ||
        lib.find("cupti") != std::string::npos)
      return fmt::format(
          "the GPU module needs {} (CUDA toolkit): not found; add its lib64 (e.g. "
          "/usr/local/cuda/lib64) to LD_LIBRARY_PATH",
          lib);
    if (lib.find("libcuda.so") != std::string::npos)
      return fmt::format("the GPU module needs {}: no NVIDIA driver on this machine", lib);
    return fmt::format("the GPU module {} needs {}: not found", path, lib);
  }
  return fmt::format("cannot load the GPU module {}: {}", path, error);
}

}  // namespace

const char* build_id() {
  return ROOFLENS_BUILD_ID;
}

const ModuleApi& load_gpu_module() {
  static const ModuleApi* api = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<fs::path> candidates;
    std::error_code ec;
    if (const char* env = std::getenv("ROOFLENS_GPU_MODULE"); env && *env) {
      if (!fs::exists(env, ec)) {
        failure = fmt::format("ROOFLENS_GPU_MODULE={}: no such file", env);
        return;
      }
      candidates.emplace_back(env);
    }
    fs::path dir = executable_directory();
    candidates.push_back(dir / kModuleName);
    candidates.push_back(dir.parent_path() / "lib" / kModuleName);
    fs::path found;
    for (const fs::path& c : candidates)
      if (fs::exists(c, ec)) {
        found = c;
        break;
      }
    if (found.empty()) {
      failure = fmt::format(
          "no GPU module: {} not found beside the binary or in ../lib (this rooflens was built "
          "without CUDA, or "
          "ROOFLENS_GPU_MODULE names it)",
          kModuleName);
      return;
    }
    // Loaded for the life of the process: results it allocates outlive the call.
    void* handle = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      failure = load_failure(found.string(), e ? e : "unknown error");
      return;
    }
    using Entry = const ModuleApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "rooflens_gpu_module"));
    const ModuleApi* m = entry ? entry() : nullptr;
    if (!m) {
      failure = fmt::format("{} is not a rooflens GPU module", found.string());
      return;
    }
    if (m->abi != kModuleAbi || std::string(m->build_id) != ROOFLENS_BUILD_ID) {
      failure = fmt::format(
          "{} is from another rooflens build ({}, this binary {}): rebuild or reinstall both",
          found.string(), m->build_id, ROOFLENS_BUILD_ID);
      return;
    }
    api = m;
  });
  if (!api) throw InputError(failure);
  return *api;
}

}  // namespace rooflens::gpu
