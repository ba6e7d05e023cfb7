// A GPU module of another build: the loader must refuse it with one line (test_gpu_module.cpp).
#include "profiler/gpu/gpu_module.hpp"

namespace {
const rooflens::gpu::ModuleApi kApi{rooflens::gpu::kModuleAbi, "0.0.0-another-build"};
}

extern "C" __attribute__((visibility("default"))) const rooflens::gpu::ModuleApi*
rooflens_gpu_module() {
  return &kApi;
}
