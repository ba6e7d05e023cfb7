// `rooflens record` on a real GPU: a CUDA program with known kernels, copies, NVTX ranges of two
// domains and two threads, and a CUDA graph (record_target.cu) is recorded whole: every kernel,
// with the launch call that owns it, every range on its thread, nothing dropped; the program's exit
// code comes back, and a SIGTERM still flushes what ran.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "bench/beside_binary.hpp"
#include "profiler/trace/trace_io.hpp"

using namespace rooflens::profiler;
namespace fs = std::filesystem;

namespace {

int record(const std::string& out, const std::string& args) {
  using rooflens::bench::beside_binary_or;
  // This test process holds CUPTI (other GPU tests profiled) and set NVTX_INJECTION64_PATH for
  // itself; the recorded program is a fresh process of its own, as a user starts it.
  std::string cmd = "env -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH " +
                    beside_binary_or("rooflens", ROOFLENS_BIN) + " record --out " + out + " -- " +
                    beside_binary_or("rooflens_record_target", ROOFLENS_RECORD_TARGET) + " " + args;
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rooflens_record_gpu_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d / name;
}

std::map<std::string, int> kernel_counts(const Trace& t) {
  std::map<std::string, int> n;
  for (const auto& a : t.activities)
    if (a.kind == GpuActivity::Kind::kernel) ++n[a.name];
  return n;
}

}  // namespace

TEST_CASE(
    "record of a CUDA program finds every kernel, copy and range, each kernel with its launch") {
  std::string out = scratch("known.json").string();
  REQUIRE(record(out, "") == 0);
  Trace t = read_trace(out);
  CHECK(t.complete);
  CHECK(t.dropped == 0);
  CHECK(t.exit_code == 0);
  CHECK_FALSE(t.gpu.empty());
  auto k = kernel_counts(t);
  CHECK(k["rooflens_test_kernel_a"] == 4);  // 3 + 1 in the graph
  CHECK(k["rooflens_test_kernel_b"] == 3);  // 2 + 1 in the graph
  CHECK(k["rooflens_test_kernel_c"] == 1);
  int graph_kernels = 0, memcpys = 0, memsets = 0;
  for (const auto& a : t.activities) {
    graph_kernels += a.graph_id != 0;
    if (a.kind == GpuActivity::Kind::memcpy) {
      CHECK(a.bytes == (1u << 20));
      ++memcpys;
    }
    if (a.kind == GpuActivity::Kind::memset) {
      CHECK(a.bytes == (2u << 20));
      ++memsets;
    }
  }
  CHECK(graph_kernels == 2);
  CHECK(memcpys == 1);
  CHECK(memsets == 1);
  // Every activity has the call that launched it; the graph's two kernels share the graph launch.
  std::unordered_map<uint32_t, const ApiCall*> launch;
  for (const auto& c : t.api_calls) launch[c.correlation_id] = &c;
  for (const auto& a : t.activities) {
    INFO(a.name);
    REQUIRE(launch.count(a.correlation_id));
    if (a.graph_id) CHECK(launch[a.correlation_id]->name.find("GraphLaunch") != std::string::npos);
  }
  std::map<std::string, const NvtxRange*> ranges;
  for (const auto& r : t.ranges) ranges[r.name] = &r;
  for (const char* name : {"outer", "inner", "worker", "across", "graph"}) {
    INFO(name);
    REQUIRE(ranges.count(name));
    CHECK(ranges[name]->start_ns < ranges[name]->end_ns);
  }
  CHECK(ranges["across"]->domain == "rooflens-test");
  CHECK(ranges["across"]->tid == 0);  // a start/end range belongs to the process
  CHECK(ranges["inner"]->tid == ranges["outer"]->tid);
  CHECK(ranges["worker"]->tid != ranges["outer"]->tid);
  CHECK(ranges["inner"]->start_ns >= ranges["outer"]->start_ns);
  CHECK(ranges["inner"]->end_ns <= ranges["outer"]->end_ns);
  // kernel_b's two plain launches ran inside "inner" on its thread; kernel_c's inside "worker".
  for (const auto& a : t.activities) {
    const ApiCall& c = *launch[a.correlation_id];
    const NvtxRange* around = a.name == "rooflens_test_kernel_b" && !a.graph_id ? ranges["inner"]
                              : a.name == "rooflens_test_kernel_c"              ? ranges["worker"]
                                                                                : nullptr;
    if (!around) continue;
    CHECK(c.tid == around->tid);
    CHECK(c.start_ns >= around->start_ns);
    CHECK(c.end_ns <= around->end_ns);
  }
}

TEST_CASE("record returns the program's exit code, and a SIGTERM still flushes what ran") {
  std::string failed = scratch("exit3.json").string();
  CHECK(record(failed, "--exit 3") == 3);
  Trace t = read_trace(failed);
  CHECK_FALSE(t.complete);
  CHECK(t.exit_code == 3);
  CHECK(kernel_counts(t)["rooflens_test_kernel_a"] == 4);

  std::string killed = scratch("term.json.gz").string();
  CHECK(record(killed, "--sigterm") == 128 + 15);
  t = read_trace(killed);
  CHECK_FALSE(t.complete);
  CHECK(t.incomplete_reason.find("signal 15") != std::string::npos);
  CHECK(kernel_counts(t)["rooflens_test_kernel_a"] == 4);
  CHECK(kernel_counts(t)["rooflens_test_kernel_c"] == 1);
}
