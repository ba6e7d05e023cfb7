#pragma once
// A CUPTI Activity API session: kernels (concurrent), memcpy, memset, runtime and driver calls,
// external correlation and NVTX markers, into plain records (records.hpp). Buffers are allocated
// up front; a flush is forced after each measurement block and dropped records are counted.
#include <cstdint>
#include <memory>
#include <string>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// Points NVTX at CUPTI's injection library so NVTX ranges reach CUPTI as marker records. Must
// run before the first NVTX call; leaves an existing setting (nsys sets its own) alone.
void prepare_nvtx_injection();

class CuptiSession {
 public:
  // Tries to subscribe and enable the activity kinds; ok() says whether it worked.
  CuptiSession();
  ~CuptiSession();
  CuptiSession(const CuptiSession&) = delete;
  CuptiSession& operator=(const CuptiSession&) = delete;

  bool ok() const;
  const std::string& failure() const;  // why not ok (another profiler owns CUPTI, ...)
  // Forces out every completed record and moves them into a Trace (dropped count included).
  Trace flush();
  void push_external(uint64_t id);
  void pop_external();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rooflens::profiler
