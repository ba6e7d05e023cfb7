#pragma once
// Streams a large JSON document (a 50 MB trace) without building it whole: each element of the
// chosen top-level arrays is built on its own and handed over, then dropped; other top-level
// values are handed over whole. Chrome-trace times ("ts", "dur": microseconds with three
// decimals) are read from their digits into exact integer nanoseconds, which a double at
// epoch scale would round.
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace rooflens::profiler {

struct JsonStream {
  // Arrays under these top-level keys are streamed element by element; a document that is an
  // array at its root is streamed under the key "".
  std::set<std::string> streamed;
  // Direct fields of a streamed element whose numbers are microseconds: handed over as integer
  // nanoseconds instead.
  std::set<std::string> microsecond_fields;
  std::function<void(const std::string& array_key, nlohmann::json&& element)> element;
  std::function<void(const std::string& key, nlohmann::json&& value)> top_level;
};

// Throws std::runtime_error with the parser's message (truncated, not JSON, trailing bytes).
void stream_json(std::string_view text, const JsonStream& handlers);

// "123.4567" microseconds as nanoseconds, rounded to the nearest; exact up to 9e15 microseconds.
int64_t microseconds_text_to_ns(const std::string& text);

}  // namespace rooflens::profiler
