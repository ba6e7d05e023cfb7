#pragma once
// A Trace as a file: the format `rooflens record` writes and `profile --record` keeps in
// tests/data/ (trace_json.hpp defines the fields), and the reader that takes either it or a
// PyTorch profiler trace (`compare`'s TIMELINE). Files may be gzip (read_text_file).
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// The trace as JSON, one record per line; gzip data when `gzip`.
void write_trace(std::ostream& out, const Trace& trace, bool gzip = false);
// A rooflens trace file (version 1 or 2). InputError on a file that is not one.
Trace read_trace(const std::string& path);
// A rooflens trace file or a PyTorch profiler trace (Chrome trace JSON, .json or .json.gz);
// `source` says which. InputError on anything else, naming the file and what is wrong.
Trace read_timeline(const std::string& path);
// The same from text already in memory (not gzip); `name` stands for the file in messages.
Trace parse_timeline_text(std::string text, const std::string& name);

// Collects the records of a rooflens trace while it is streamed.
class RecordCollector {
 public:
  static bool is_record_array(const std::string& key);
  void element(const std::string& key, nlohmann::json&& record);
  void header(const std::string& key, nlohmann::json&& value);
  bool seen_version() const { return header_.contains("trace_version"); }
  // InputError (prefixed with `name`) on an unknown version or a missing header field.
  Trace finish(const std::string& name);

 private:
  Trace trace_;
  nlohmann::json header_ = nlohmann::json::object();
};

}  // namespace rooflens::profiler
