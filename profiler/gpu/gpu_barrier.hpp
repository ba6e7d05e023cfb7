#pragma once
// A barrier that GPUs wait at inside their streams, so that a collective's sample starts on every
// GPU together, as it does after a model's layer. Without it a GPU that was reached first (by the
// launching thread, or after its own L2 flush in a rank process) starts its part early and waits
// inside the collective for the others, and the sample measures the launches' stagger.
#include <cuda_runtime.h>

#include <string>

namespace rooflens::profiler {

// Words of pinned host memory every GPU reads and writes: the barrier's flags. In one process,
// or shared between the rank processes of one run by a POSIX shared-memory name.
class HostFlags {
 public:
  explicit HostFlags(int words);                         // this process's GPUs
  HostFlags(const std::string& shared_name, int words);  // every process that opens this name
  ~HostFlags();
  HostFlags(const HostFlags&) = delete;
  HostFlags& operator=(const HostFlags&) = delete;
  unsigned* device() const { return device_; }
  unsigned read(int i) const;
  void write(int i, unsigned v);

 private:
  unsigned* host_ = nullptr;
  unsigned* device_ = nullptr;
  size_t bytes_ = 0;
  bool shared_ = false;
};

// `gpus` GPUs and `hosts` launching threads (one for all GPUs in calibrate, one a rank in a
// replay). For each sample: begin(), then every GPU's hold() on its stream before the sample's
// launch and every host's launched() after it. Each GPU waits until every GPU has reached the
// barrier and every host has launched the sample on its GPUs, so the sample starts everywhere
// within a read of host memory (about a microsecond), however slowly the hosts launch.
class GpuBarrier {
 public:
  GpuBarrier(HostFlags& flags, int gpus, int hosts) : flags_(flags), gpus_(gpus), hosts_(hosts) {}
  static int words(int gpus, int hosts) { return gpus + hosts + 1; }
  void begin() { ++epoch_; }
  void hold(int gpu, cudaStream_t s);
  void launched(int host) { flags_.write(gpus_ + host, epoch_); }
  // Throws where a GPU gave up waiting (10 s): a rank that never arrived.
  void check() const;

 private:
  HostFlags& flags_;
  int gpus_, hosts_;
  unsigned epoch_ = 0;
};

}  // namespace rooflens::profiler
