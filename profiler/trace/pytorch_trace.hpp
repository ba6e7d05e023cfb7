#pragma once
// A PyTorch profiler trace (torch.profiler's export_chrome_trace: Chrome trace JSON written by
// Kineto) read into the same records as a `rooflens record` file: kernels, memcpys and memsets
// (GPU), the runtime and driver calls that launched them (host, by correlation id), module calls
// that with_stack=True records ("nn.Module: LlamaDecoderLayer_3", domain "nn.Module") and
// record_function ranges (domain "record_function"). Everything else (aten ops, Python frames,
// flows) is not needed to attribute kernels and is skipped.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

inline constexpr const char* kModuleDomain = "nn.Module";
inline constexpr const char* kRecordFunctionDomain = "record_function";

class PytorchTraceReader {
 public:
  static constexpr const char* kEventsKey = "traceEvents";
  // Event fields whose numbers are microseconds (read as exact nanoseconds by json_stream).
  static std::set<std::string> microsecond_fields() { return {"ts", "dur"}; }

  // One element of traceEvents, with "ts" and "dur" already in integer nanoseconds.
  void event(nlohmann::json&& e);
  void header(const std::string& key, nlohmann::json&& value);
  void no_events_array() { events_not_array_ = true; }
  bool seen_events() const { return events_ > 0 || events_not_array_ || saw_header_; }
  // InputError (prefixed with `name`) when traceEvents is missing or not an array.
  Trace finish(const std::string& name);

 private:
  Trace trace_;
  int64_t base_ns_ = 0;
  int64_t events_ = 0, skipped_ = 0;
  bool events_not_array_ = false, saw_header_ = false;
};

}  // namespace rooflens::profiler
