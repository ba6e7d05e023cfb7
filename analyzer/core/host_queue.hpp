#pragma once
// Eager PyTorch as a queue: the host spends its own time before issuing each kernel (Python, the
// dispatcher, autograd), and the GPU runs each kernel once it is issued and the one before it is
// done. Where the host is slower than the kernels, the GPU waits; a device-to-host copy (.item(),
// .tolist()) makes the host wait for the GPU to drain. The training step (analyzer/training/
// timeline.cpp) and eager inference (analyzer/runtime) queue their kernels through it.
#include <algorithm>
#include <cstdint>

namespace rooflens {

class HostQueue {
 public:
  // One kernel of `gpu_s` issued after `host_s` of the host's time; `sync`: the host first waits
  // for the GPU to drain.
  void issue(double gpu_s, double host_s, bool sync = false) {
    host_ += host_s;
    if (sync) {
      host_ = std::max(host_, gpu_);
      ++syncs_;
    }
    gpu_ = std::max(gpu_, host_) + gpu_s;
    busy_ += gpu_s;
    ++kernels_;
  }
  // Host time that issues no kernel (the per-forward Python before the first launch).
  void host_only(double host_s) { host_ += host_s; }
  double host() const { return host_; }  // when the host issued its last kernel
  double gpu() const { return gpu_; }    // when the GPU finished the last one
  double busy() const { return busy_; }
  int64_t kernels() const { return kernels_; }
  int64_t syncs() const { return syncs_; }

 private:
  double host_ = 0, gpu_ = 0, busy_ = 0;
  int64_t kernels_ = 0, syncs_ = 0;
};

}  // namespace rooflens
