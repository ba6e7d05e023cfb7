#pragma once
// Finds a cuDNN 9 at run time and loads the cuDNN plugin beside the GPU module. Search order:
// the --cudnn directory, $ROOFLENS_CUDNN, the dynamic loader's own search (LD_LIBRARY_PATH,
// /usr/local/cuda/lib64, ...), then Python environments' nvidia/cudnn/lib (PyTorch's wheels).
// Without one, `available()` is false, `status()` says why, and the replay falls back to its own
// kernels with that reason on each layer.
#include <string>
#include <vector>

#include "kernels/cudnn_plugin_api.hpp"

namespace rooflens::kernels::cudnn {

class Runtime {
 public:
  // `directory`: --cudnn (may be empty). Loads at most once per process.
  static Runtime& load(const std::string& directory);
  bool available() const { return plugin_ != nullptr; }
  Plugin* plugin() const { return plugin_; }
  // "cuDNN 9.19.0 (/path/libcudnn.so.9)" or why there is none.
  const std::string& status() const { return status_; }

 private:
  Plugin* plugin_ = nullptr;
  std::string status_;
};

// Directories that may hold libcudnn.so.9, in search order, for a given --cudnn value (tests).
std::vector<std::string> cudnn_search_directories(const std::string& directory);

}  // namespace rooflens::kernels::cudnn
