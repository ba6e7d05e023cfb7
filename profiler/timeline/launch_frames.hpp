#pragma once
// Which function of the program's own Python launched a kernel: the innermost frame of a
// with_stack PyTorch trace around the kernel's launch call, on the launching thread. `compare`
// names it in its hints ("launched from transformers/cache_utils.py: update").
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

class LaunchFrames {
 public:
  explicit LaunchFrames(const Trace& t);
  // The innermost frame around `launch`, as "file.py: function" (the line number dropped), or ""
  // where the trace holds none.
  std::string frame_of(const ApiCall& launch) const;
  bool empty() const { return by_thread_.empty(); }

 private:
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const NvtxRange*>> by_thread_;
};

}  // namespace rooflens::profiler
