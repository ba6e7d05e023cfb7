#include "profiler/timeline/launch_frames.hpp"

#include <algorithm>

namespace rooflens::profiler {
namespace {

// "transformers/cache_utils.py(129): update" -> "transformers/cache_utils.py: update".
std::string label(const std::string& frame) {
  auto open = frame.find(".py(");
  auto colon = frame.find("): ", open);
  if (open == std::string::npos || colon == std::string::npos) return frame;
  return frame.substr(0, open + 3) + frame.substr(colon + 1);
}

// Frames nested deeper than this are not searched for (a sibling's frames end before the launch).
constexpr int kMaxLookBack = 256;

}  // namespace

LaunchFrames::LaunchFrames(const Trace& t) {
  for (const NvtxRange& f : t.python_frames) by_thread_[{f.pid, f.tid}].push_back(&f);
  for (auto& [thread, frames] : by_thread_)
    std::stable_sort(frames.begin(), frames.end(), [](auto* x, auto* y) {
      return x->start_ns != y->start_ns ? x->start_ns < y->start_ns : x->end_ns > y->end_ns;
    });
}

std::string LaunchFrames::frame_of(const ApiCall& launch) const {
  auto it = by_thread_.find({launch.pid, launch.tid});
  if (it == by_thread_.end()) return "";
  const auto& frames = it->second;
  // The latest-starting frame still open at the launch is the innermost.
  auto end = std::upper_bound(frames.begin(), frames.end(), launch.start_ns,
                              [](uint64_t t, const NvtxRange* f) { return t < f->start_ns; });
  int looked = 0;
  for (auto f = end; f != frames.begin() && looked < kMaxLookBack; ++looked) {
    --f;
    if ((*f)->end_ns >= launch.start_ns) return label((*f)->name);
  }
  return "";
}

}  // namespace rooflens::profiler
