#pragma once
// Internal to the CUDA half (includes cupti.h): CUPTI activity records become plain records
// (records.hpp) the moment they arrive, kineto's way. One converter serves the harness's session
// and the `rooflens record` injection library. No fmt here: the injection library is loaded into
// arbitrary programs and carries nothing but the C++ runtime and CUPTI.
#include <cupti.h>

#include <string>
#include <unordered_map>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// "CUPTI_ERROR_... (39)".
std::string cupti_error(CUptiResult r);
std::string cupti_api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// The activity kinds a full recording enables: kernels (concurrent), memcpy, memset, runtime and
// driver calls, NVTX markers.
inline constexpr CUpti_ActivityKind kTimelineKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER};

class CuptiRecordConverter {
 public:
  // Appends the record's plain form to `into`; an NVTX range is appended when its end arrives.
  void take(const CUpti_Activity* record, Trace& into);
  // Ranges started and not ended, or ended before their start arrived.
  size_t open_ranges() const { return open_.size() + ended_.size(); }

 private:
  struct OpenMarker {
    uint64_t start_ns = 0, pid = 0, tid = 0;
    std::string name, domain;
  };
  std::unordered_map<uint32_t, OpenMarker> open_;  // marker id -> its start
  struct EarlyEnd {
    uint64_t end_ns = 0, tid = 0;
  };
  std::unordered_map<uint32_t, EarlyEnd> ended_;  // marker id -> its end, the start not yet seen
  // An NVTX range's start or end; the range is appended once both have arrived.
  void take_marker(const CUpti_ActivityMarker2* m, Trace& into);
};

}  // namespace rooflens::profiler
