// Multi-GPU tests (label gpu): with fewer than two GPUs the binary reports "skipped: fewer than
// 2 GPUs" and exits with ctest's skip code, so nothing is counted as passed.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "profiler/gpu/cupti_session.hpp"

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("skipped: no CUDA device\n");
    return 4;
  }
  if (count < 2) {
    std::printf("skipped: fewer than 2 GPUs\n");
    return 4;
  }
  rooflens::profiler::prepare_nvtx_injection();
  return Catch::Session().run(argc, argv);
}
