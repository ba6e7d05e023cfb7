#include "profiler/trace/record_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "profiler/trace/trace_json.hpp"

namespace rooflens::profiler {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

template <typename T>
void append(std::vector<T>& to, const json& chunk, const char* key) {
  auto it = chunk.find(key);
  if (it == chunk.end()) return;
  for (const json& r : *it) to.push_back(r.get<T>());
}

}  // namespace

namespace {

// The part files a recorded run's processes wrote into `dir`, in name order.
std::vector<fs::path> part_files(const std::string& dir) {
  std::vector<fs::path> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kPartPrefix, 0) == 0 && name.size() > std::string(kPartSuffix).size() &&
        name.compare(name.size() - std::string(kPartSuffix).size(), std::string::npos,
                     kPartSuffix) == 0)
      parts.push_back(entry.path());
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

// One process's part: its records into `part`, its devices, command, refusal and end into `out`.
void read_part(const fs::path& p, Trace& part, std::set<uint32_t>& device_ids, RecordedParts& out) {
  Trace& t = out.trace;
  std::ifstream in(p);
  std::string line, pid = p.filename().string();
  bool ended = false, refused = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {
      ++out.unreadable_lines;  // the last line of a process killed while writing
      continue;
    }
    try {
      if (auto it = j.find(kPartLine); it != j.end()) {
        pid = std::to_string(uint_field_or(*it, "pid", 0));
        if (t.command.empty()) t.command = it->value("command", std::vector<std::string>{});
      } else if (auto rec = j.find(kRecordsLine); rec != j.end()) {
        append(part.activities, *rec, "activities");
        append(part.api_calls, *rec, "api_calls");
        append(part.ranges, *rec, "ranges");
        std::vector<TraceDevice> devices;
        append(devices, *rec, "devices");
        for (auto& d : devices)
          if (device_ids.insert(d.id).second) t.devices.push_back(std::move(d));
      } else if (auto u = j.find(kUnavailableLine); u != j.end()) {
        out.unavailable.push_back(fmt::format("process {}: {}", pid, u->get<std::string>()));
        refused = true;
      } else if (auto e = j.find(kEndLine); e != j.end()) {
        t.dropped += uint_field_or(*e, "dropped", 0);
        ended = true;
      }
    } catch (const std::exception&) {
      ++out.unreadable_lines;
    }
  }
  if (!ended && !refused)
    out.unflushed.push_back(pid);  // a refused process recorded nothing to flush
}

// Keeps the calls that launched something (and so carry a GPU activity's correlation id); sorts
// every record by its start.
void finish_trace(Trace& t) {
  std::unordered_set<uint32_t> launched;
  for (const auto& a : t.activities) launched.insert(a.correlation_id);
  t.api_calls.erase(
      std::remove_if(t.api_calls.begin(), t.api_calls.end(),
                     [&](const ApiCall& c) { return !launched.count(c.correlation_id); }),
      t.api_calls.end());
  auto by_start = [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; };
  std::stable_sort(t.activities.begin(), t.activities.end(), by_start);
  std::stable_sort(t.api_calls.begin(), t.api_calls.end(), by_start);
  std::stable_sort(t.ranges.begin(), t.ranges.end(), by_start);
  std::sort(t.devices.begin(), t.devices.end(),
            [](const auto& x, const auto& y) { return x.id < y.id; });
  if (!t.devices.empty()) t.gpu = t.devices.front().name;
  t.source = "rooflens record";
}

}  // namespace

RecordedParts merge_record_parts(const std::string& dir) {
  RecordedParts out;
  Trace& t = out.trace;
  std::set<uint32_t> device_ids;
  uint32_t correlation_offset = 0;
  for (const fs::path& p : part_files(dir)) {
    ++out.processes;
    Trace part;
    read_part(p, part, device_ids, out);
    // Each process counts correlation ids from 1: shift every part past the ones before it.
    uint32_t highest = 0;
    for (auto& a : part.activities)
      highest = std::max(highest, a.correlation_id += correlation_offset);
    for (auto& c : part.api_calls)
      highest = std::max(highest, c.correlation_id += correlation_offset);
    correlation_offset = highest;
    t.activities.insert(t.activities.end(), part.activities.begin(), part.activities.end());
    t.api_calls.insert(t.api_calls.end(), part.api_calls.begin(), part.api_calls.end());
    t.ranges.insert(t.ranges.end(), part.ranges.begin(), part.ranges.end());
  }
  finish_trace(t);
  return out;
}

}  // namespace rooflens::profiler
