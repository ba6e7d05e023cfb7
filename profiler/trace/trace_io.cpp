#include "profiler/trace/trace_io.hpp"

#include <fmt/format.h>

#include <ostream>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "profiler/trace/compressed_text.hpp"
#include "profiler/trace/json_stream.hpp"
#include "profiler/trace/pytorch_trace.hpp"
#include "profiler/trace/trace_json.hpp"

namespace rooflens::profiler {

using nlohmann::json;

namespace {

constexpr auto kDump = json::error_handler_t::replace;  // kernel and range names may hold any bytes

template <typename T>
void write_array(std::ostream& out, const char* key, const std::vector<T>& records) {
  out << ",\n\"" << key << "\": [";
  for (size_t i = 0; i < records.size(); ++i)
    out << (i ? ",\n " : "\n ") << json(records[i]).dump(-1, ' ', false, kDump);
  out << "\n]";
}

}  // namespace

void write_trace(std::ostream& out, const Trace& t, bool gzip) {
  std::ostringstream text;
  std::string header = trace_header_json(t).dump(-1, ' ', false, kDump);
  text << header.substr(0, header.size() - 1);  // the header object, left open for the arrays
  write_array(text, "activities", t.activities);
  write_array(text, "api_calls", t.api_calls);
  write_array(text, "externals", t.externals);
  write_array(text, "ranges", t.ranges);
  text << "\n}\n";
  if (gzip)
    out << gzip_compress(text.str());
  else
    out << text.str();
}

bool RecordCollector::is_record_array(const std::string& key) {
  return key == "activities" || key == "api_calls" || key == "externals" || key == "ranges";
}

void RecordCollector::element(const std::string& key, json&& r) {
  if (key == "activities")
    trace_.activities.push_back(r.get<GpuActivity>());
  else if (key == "api_calls")
    trace_.api_calls.push_back(r.get<ApiCall>());
  else if (key == "externals")
    trace_.externals.push_back(r.get<ExternalCorrelation>());
  else if (key == "ranges")
    trace_.ranges.push_back(r.get<NvtxRange>());
}

void RecordCollector::header(const std::string& key, json&& value) {
  header_[key] = std::move(value);
}

Trace RecordCollector::finish(const std::string& name) {
  const json& v = header_.contains("trace_version") ? header_["trace_version"] : json();
  if (!v.is_number_integer() || v.get<int>() < 1 || v.get<int>() > kTraceVersion)
    throw InputError(fmt::format("{}: rooflens trace version {} (this build reads 1 to {})", name,
                                 v.dump(), kTraceVersion));
  try {
    read_trace_header(header_, trace_);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: not a readable rooflens trace: {}", name, e.what()));
  }
  if (trace_.source.empty()) trace_.source = "rooflens record";
  return std::move(trace_);
}

namespace {

Trace parse_timeline(std::string text, const std::string& path, bool allow_pytorch) {
  RecordCollector records;
  PytorchTraceReader pytorch;
  JsonStream s;
  s.streamed = {"activities", "api_calls", "externals", "ranges", PytorchTraceReader::kEventsKey};
  s.microsecond_fields = PytorchTraceReader::microsecond_fields();
  s.element = [&](const std::string& key, json&& e) {
    if (key == PytorchTraceReader::kEventsKey || key.empty())
      pytorch.event(std::move(e));
    else
      records.element(key, std::move(e));
  };
  s.top_level = [&](const std::string& key, json&& v) {
    if (key == PytorchTraceReader::kEventsKey || key.empty()) pytorch.no_events_array();
    records.header(key, json(v));
    pytorch.header(key, std::move(v));
  };
  try {
    stream_json(text, s);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // A parse error, or a record field of the wrong type.
    throw InputError(fmt::format("{}: not a readable trace: {}", path, e.what()));
  }
  text = std::string();
  if (records.seen_version()) return records.finish(path);
  if (!allow_pytorch)
    throw InputError(fmt::format("{}: not a rooflens trace (no trace_version)", path));
  if (pytorch.seen_events()) return pytorch.finish(path);
  throw InputError(fmt::format(
      "{}: not a trace: neither a rooflens record file (trace_version) nor a Chrome/PyTorch "
      "profiler trace (traceEvents)",
      path));
}

}  // namespace

Trace read_trace(const std::string& path) {
  return parse_timeline(read_text_file(path), path, false);
}
Trace read_timeline(const std::string& path) {
  return parse_timeline(read_text_file(path), path, true);
}
Trace parse_timeline_text(std::string text, const std::string& name) {
  return parse_timeline(std::move(text), name, true);
}

}  // namespace rooflens::profiler
