// `rooflens record` without a GPU: the part files the injection library writes and their merge,
// and the command itself on programs that never touch CUDA (exit codes, signals, an incomplete
// trace, CUPTI taken). With the CUDA build, the real injection library is loaded by a probe that
// stands in for the driver; on a machine without one, CUPTI refuses and record says so.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_run.hpp"
#include "profiler/trace/record_parts.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::profiler;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = test::scratch_dir("record");
  return dir;
}

struct Run {
  int code;
  std::string err;
};

Run record(const std::string& env, const std::string& args) {
  test::CliRun r = test::run_cli(env + " " + ROOFLENS_BIN + " record " + args, scratch());
  return {r.code, r.err};
}

// Any existing file will do where the program never initializes CUDA.
std::string any_library() {
  return std::string("ROOFLENS_RECORD_LIBRARY=") + ROOFLENS_FOREIGN_SO;
}

}  // namespace

TEST_CASE("record parts: merged, correlation ids kept apart per process, an unflushed process said",
          "[record]") {
  fs::path dir = scratch() / "parts";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Process 100 flushed cleanly; process 200 was killed mid-line.
  std::ofstream(dir / "part-100.jsonl")
      << R"({"part": {"pid": 100, "command": ["python3", "run.py"]}})" << '\n'
      << R"({"records": {"activities": [{"kind": "kernel", "name": "k1", "start": 50, "end": 90, "correlation": 1, "stream": 7, "bytes": 0, "device": 0, "context": 1},)"
      << R"( {"kind": "memcpy", "name": "memcpy", "start": 10, "end": 20, "correlation": 2, "stream": 7, "bytes": 4096, "device": 0, "context": 1}],)"
      << R"( "api_calls": [{"name": "cudaLaunchKernel", "start": 40, "end": 45, "correlation": 1, "pid": 100, "tid": 101},)"
      << R"( {"name": "cudaMemcpyAsync", "start": 5, "end": 8, "correlation": 2, "pid": 100, "tid": 101},)"
      << R"( {"name": "cudaGetDevice", "start": 1, "end": 2, "correlation": 3, "pid": 100, "tid": 101}],)"
      << R"( "ranges": [{"domain": "", "name": "model.layers.0", "start": 30, "end": 60, "pid": 100, "tid": 101}],)"
      << R"( "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}})" << '\n'
      << R"({"end": {"dropped": 5, "reason": "exit", "open_ranges": 0}})" << '\n';
  std::ofstream(dir / "part-200.jsonl")
      << R"({"part": {"pid": 200, "command": ["worker"]}})" << '\n'
      << R"({"records": {"activities": [{"kind": "kernel", "name": "k2", "start": 70, "end": 80, "correlation": 1, "stream": 3, "bytes": 0, "device": 0, "context": 2}],)"
      << R"( "api_calls": [{"name": "cudaLaunchKernel", "start": 60, "end": 65, "correlation": 1, "pid": 200, "tid": 201}],)"
      << R"( "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}})" << '\n'
      << R"({"records": {"activities": [{"kind": "ker)";
  std::ofstream(dir / "unrelated.txt") << "not a part";
  RecordedParts p = merge_record_parts(dir.string());
  CHECK(p.processes == 2);
  CHECK(p.unflushed == std::vector<std::string>{"200"});
  CHECK(p.unreadable_lines == 1);
  const Trace& t = p.trace;
  CHECK(t.dropped == 5);
  CHECK(t.gpu == "NVIDIA H100 80GB HBM3");
  CHECK(t.devices.size() == 1);
  CHECK(t.command == std::vector<std::string>{"python3", "run.py"});
  REQUIRE(t.activities.size() == 3);
  CHECK(t.activities[0].name == "memcpy");  // sorted by start
  // cudaGetDevice launched nothing: left out. Process 200's ids follow process 100's highest (3).
  REQUIRE(t.api_calls.size() == 3);
  CHECK(t.activities[2].name == "k2");
  CHECK(t.activities[2].correlation_id == 4);
  bool found = false;
  for (const auto& c : t.api_calls) found |= c.correlation_id == 4 && c.pid == 200 && c.tid == 201;
  CHECK(found);
  REQUIRE(t.ranges.size() == 1);
  CHECK(t.ranges[0].tid == 101);
}

TEST_CASE("record returns the program's exit code and marks a failed or killed run incomplete",
          "[record]") {
  fs::path out = scratch() / "exit3.json";
  Run r = record(any_library(), "--out " + out.string() + " -- sh -c 'exit 3'");
  INFO(r.err);
  CHECK(r.code == 3);
  Trace t = read_trace(out.string());
  CHECK_FALSE(t.complete);
  CHECK(t.incomplete_reason == "the program exited with code 3");
  CHECK(t.exit_code == 3);
  CHECK(t.command == std::vector<std::string>{"sh", "-c", "exit 3"});
  CHECK(t.source == "rooflens record");
  CHECK(t.activities.empty());
  REQUIRE(!t.notes.empty());
  CHECK_THAT(t.notes[0], Catch::Contains("no process initialized CUDA"));
  CHECK_THAT(r.err, Catch::Contains("INCOMPLETE: the program exited with code 3"));

  fs::path killed = scratch() / "killed.json.gz";
  r = record(any_library(), "--out " + killed.string() + " -- sh -c 'kill -TERM $$'");
  CHECK(r.code == 128 + 15);
  t = read_trace(killed.string());  // gzip, by its name
  CHECK_FALSE(t.complete);
  CHECK(t.incomplete_reason == "the program was killed by signal 15 (SIGTERM)");

  fs::path fine = scratch() / "fine.json";
  r = record(any_library(), "--out " + fine.string() + " -- true");
  CHECK(r.code == 0);
  CHECK(read_trace(fine.string()).complete);
}

TEST_CASE(
    "record refuses in one line: CUPTI taken by another profiler, a program that cannot run, no "
    "library",
    "[record]") {
  fs::path out = scratch() / "refused.json";
  Run r =
      record(any_library() + " CUDA_INJECTION64_PATH=/opt/nsight-systems/libToolsInjection64.so",
             "--out " + out.string() + " -- true");
  CHECK(r.code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(
      r.err,
      Catch::Contains(
          "CUPTI is taken: CUDA_INJECTION64_PATH=/opt/nsight-systems/libToolsInjection64.so"));
  CHECK_FALSE(fs::exists(out));
  r = record(any_library(), "--out " + out.string() + " -- /nonexistent/program");
  CHECK(r.code == 2);
  CHECK(r.err == "rooflens: cannot run '/nonexistent/program': No such file or directory\n");
  r = record("ROOFLENS_RECORD_LIBRARY=/nonexistent/librooflens_record.so", "-- true");
  CHECK(r.code == 2);
  CHECK(r.err ==
        "rooflens: ROOFLENS_RECORD_LIBRARY=/nonexistent/librooflens_record.so: no such file\n");
  r = record("", "--out " + out.string());
  CHECK(r.code == 2);  // no command
}

TEST_CASE("record with the real injection library, loaded the way the CUDA driver loads it",
          "[record]") {
  fs::path lib = fs::path(ROOFLENS_BINARY_DIR) / "lib" / "librooflens_record.so";
  if (!fs::exists(lib)) {
    WARN("skipped: this build has no librooflens_record.so (no CUDA toolkit)");
    return;
  }
  fs::path out = scratch() / "probe.json";
  Run r = record("", "--out " + out.string() + " -- " + ROOFLENS_INJECTION_PROBE);
  INFO(r.err);
  Trace t = read_trace(out.string());
  CHECK(t.command == std::vector<std::string>{ROOFLENS_INJECTION_PROBE});
  if (r.err.find("CUPTI unavailable") != std::string::npos) {
    // No driver here: CUPTI refuses, the part says why, record says it in one line.
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::StartsWith("rooflens: CUPTI unavailable in process ") &&
                          Catch::Contains("cuptiSubscribe"));
    REQUIRE(t.notes.size() == 1);
    CHECK_THAT(t.notes[0], Catch::Contains("cuptiSubscribe"));
    CHECK_FALSE(t.complete);
    CHECK(t.incomplete_reason == "CUPTI unavailable in 1 process(es): nothing recorded there");
  } else {
    // A machine with a driver: CUPTI subscribed, the probe ran no kernel, the part was closed.
    CHECK(r.code == 0);
    CHECK(t.complete);
    CHECK(t.activities.empty());
  }
}
