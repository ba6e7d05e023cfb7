#pragma once
// The kernel the replay picked for one problem among its candidates (cuBLASLt's algorithms,
// cuDNN's engines, ours), kept by problem key so that identical layers are tuned once, and so
// that `profile --tuning-cache` can carry the picks of a CUPTI-timed run into another one: a
// replay under Nsight Compute times its candidates with CUDA events that measure the profiler's
// overhead, not the kernels, and would otherwise pick at random among near-equal GEMM tiles.
// CUDA-free: the CLI reads and writes the cache.
#include <map>
#include <string>

namespace rooflens::replay {

struct KernelChoice {
  int index = 0;           // among the problem's candidates, in the order they are made
  int candidates = 0;      // how many there were
  std::string kernel;      // the library and its algorithm, engine or kernel, checked on reuse
  bool from_file = false;  // read from a tuning cache rather than timed in this run
};
using KernelChoices = std::map<std::string, KernelChoice>;  // by problem key

}  // namespace rooflens::replay
