#pragma once
// Where a vendor library that rooflens loads at run time (cuDNN, NCCL) may lie, in search order:
// the flag's directory, the environment variable's, the dynamic loader's own search (""), then
// the lib/ of the PyPI wheel `nvidia-<package>` in every Python environment found (PyTorch's).
#include <string>
#include <vector>

namespace rooflens::kernels {

std::vector<std::string> vendor_search_directories(const std::string& flag_directory,
                                                   const char* env_var, const char* nvidia_package);

// The directory this module (the GPU module) was loaded from.
std::string module_directory();

}  // namespace rooflens::kernels
