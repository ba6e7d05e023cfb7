#pragma once
// A timeline built by hand, for the CPU tests of `compare` and its benchmark: one host thread calls
// modules and launches GPU work onto one stream, the way eager PyTorch does. Host time advances
// with each call and launch; each launch starts on the GPU when the launch call has returned and
// the stream is free. Written as a PyTorch profiler trace (Kineto's Chrome trace: nn.Module
// python_function events, cuda_runtime launches, kernels with correlation ids) or as rooflens
// records (NVTX ranges, API calls).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/trace/records.hpp"

namespace rooflens::bench {

class SyntheticTimeline {
 public:
  explicit SyntheticTimeline(uint64_t pid = 4242, uint64_t tid = 4243);

  // A range opens: a vanilla module instance ("Linear_3", domain nn.Module), a record_function
  // ("record_function"), or an NVTX range (any other domain).
  void enter(const std::string& name, const std::string& domain = "nn.Module",
             double host_us = 1.0);
  void exit(double host_us = 0.5);
  // One launch call of host_us on the host, then gpu_us on the GPU; returns its correlation id.
  uint32_t launch(const std::string& kernel, double gpu_us, double host_us = 4.0,
                  profiler::GpuActivity::Kind kind = profiler::GpuActivity::Kind::kernel,
                  uint64_t bytes = 0, const std::string& api = "cudaLaunchKernel");
  // A CUDA graph launch: one call, then every kernel of the graph (graph_id set).
  void graph_launch(const std::vector<std::pair<std::string, double>>& kernels,
                    double host_us = 6.0);
  void host(double us);  // Python between calls
  // A kernel whose launch call the trace lacks (correlation 0, as for CUPTI-internal work).
  void orphan_kernel(const std::string& kernel, double gpu_us);

  // The name the profiler gives the module at `path` of class `cls`: per class, numbered in order
  // of first call ("Conv1D_5"); the same object keeps its name every step.
  std::string instance_name(const std::string& path, const std::string& cls);

  uint64_t now_ns() const { return host_ns_; }
  const profiler::Trace& trace() const { return trace_; }
  // Kineto's Chrome trace: ts in microseconds with three decimals after baseTimeNanoseconds.
  std::string chrome_trace_json() const;

 private:
  uint64_t pid_, tid_;
  uint64_t host_ns_, gpu_free_ns_;
  uint32_t next_correlation_ = 1, next_graph_ = 1;
  std::vector<size_t> open_;  // indices into trace_.ranges
  std::map<std::string, int> next_instance_;
  std::map<std::string, std::string> instance_of_path_;
  profiler::Trace trace_;
};

// HF transformers GPT2LMHeadModel's forward, module by module as PyTorch calls them, with the
// kernels eager PyTorch launches for each (NewGELUActivation as eight element-wise kernels).
// `vanilla`: ranges are nn.Module instances ("Conv1D_5"); else NVTX ranges named by module
// path, the root by its class (python/rooflens_annotate.py).
void gpt2_forward(SyntheticTimeline& t, int layers, bool vanilla);

}  // namespace rooflens::bench
