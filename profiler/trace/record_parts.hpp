#pragma once
// `rooflens record`: the injection library (record_injection.cpp, loaded into the recorded
// program through CUDA_INJECTION64_PATH) appends what CUPTI delivers to a part file per process,
// one JSON object per line, as it arrives, so a crash loses only the last buffers; `rooflens`
// merges the parts into one trace once the program has ended. This header is the contract
// between the two sides.
#include <string>
#include <vector>

#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// The folder the parts go to, given to the program in its environment.
inline constexpr const char* kRecordDirEnv = "ROOFLENS_RECORD_DIR";
inline constexpr const char* kPartPrefix = "part-";  // part-<pid>.jsonl
inline constexpr const char* kPartSuffix = ".jsonl";

// Line kinds, by their one key:
//   {"part": {"pid": P, "command": [...]}}            first line
//   {"records": {"activities": [...], "api_calls": [...], "ranges": [...], "devices": [...]}}
//   {"cupti_unavailable": "why"}                       CUPTI refused (another profiler owns it)
//   {"end": {"dropped": N, "reason": "exit" | "signal 15"}}   last line, at a clean flush
inline constexpr const char* kPartLine = "part";
inline constexpr const char* kRecordsLine = "records";
inline constexpr const char* kUnavailableLine = "cupti_unavailable";
inline constexpr const char* kEndLine = "end";

struct RecordedParts {
  Trace trace;                           // every part's records, merged
  int processes = 0;                     // part files found
  std::vector<std::string> unflushed;    // processes whose part has no end line (killed, crashed)
  std::vector<std::string> unavailable;  // CUPTI refused in these processes: why
  int64_t unreadable_lines = 0;          // a line cut short by a kill
};

// Reads every part file in `dir`. API calls no GPU activity refers to are left out (a PyTorch
// program makes millions of cudaGetDevice calls); the launches stay.
RecordedParts merge_record_parts(const std::string& dir);

}  // namespace rooflens::profiler
