#pragma once
// The GPU this process runs on, as the harness and calibrate need it.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cuda_check.hpp"
#include "kernels/runner.hpp"

namespace rooflens::profiler {

// A stream and an event released on every path out, a throw included.
struct CudaStream {
  cudaStream_t handle = nullptr;
  CudaStream() { ROOFLENS_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking)); }
  ~CudaStream() { cudaStreamDestroy(handle); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
};
struct CudaEvent {
  cudaEvent_t handle = nullptr;
  CudaEvent() { ROOFLENS_CUDA_CHECK(cudaEventCreate(&handle)); }
  ~CudaEvent() { cudaEventDestroy(handle); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
};

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
// `before`, when given, runs outside each timed run (an L2 flush).
double event_time_median(const std::function<void(cudaStream_t)>& fn, int reps, cudaStream_t s,
                         const std::function<void()>& before = {});
class CuptiSession;
// Median seconds of `reps` runs of the summed GPU duration (CUPTI) of what `fn` launches on `s`,
// after one untimed run. `before` runs outside each measured range (an L2 flush); the host syncs
// every `batch` runs. Records already in the session are dropped first.
double cupti_time_median(CuptiSession& cupti, const std::function<void()>& fn, int reps,
                         cudaStream_t s, const std::function<void()>& before = {}, int batch = 10);
// Free device memory in bytes.
int64_t free_device_memory();

// Empties L2 of everything a sample will touch: a read pass over twice its size. Reading, not a
// memset: a memset leaves L2 full of dirty lines, and their write-back to HBM would land inside
// the next kernel's time (a 32 MiB GEMV measured 20 us after a memset, 15 us after a read pass).
class L2Flush {
 public:
  L2Flush(int64_t l2_bytes, int sm_count);
  void run(cudaStream_t s) const;

 private:
  kernels::DeviceBuffer buffer_, sink_;
  int sm_count_;
};

// How the replay times its candidate kernels (cuBLASLt algorithms, cuDNN engines, ours) for a
// layer: as a sample is measured, each run after an L2 flush when `flush` is given (`--l2 cold`),
// the median of `runs`. With a CUPTI session, the kernels' CUPTI time, the figure the harness
// reports (a candidate of several kernels is judged by what they take, not by the events around
// them); without, CUDA events.
kernels::CandidateTimer candidate_timer(const L2Flush* flush, cudaStream_t s, int runs = 3,
                                        CuptiSession* cupti = nullptr);

}  // namespace rooflens::profiler
