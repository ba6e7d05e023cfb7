#pragma once
// The GPU this process runs on, as the harness and calibrate need it.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>

namespace rooflens::profiler {

struct GpuInfo {
  std::string name;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

// InputError("no CUDA device ...") when there is none or the driver is missing.
GpuInfo query_gpu();
// SM clock right now, in MHz: SM cycles counted against the global timer in a spinning kernel.
double measure_sm_clock_mhz();
// Median seconds of `reps` runs of `fn` on `s`, each between two CUDA events, after one
// untimed run.
double event_time_median(const std::function<void(cudaStream_t)>& fn, int reps, cudaStream_t s);
// Free device memory in bytes.
int64_t free_device_memory();

}  // namespace rooflens::profiler
