// Two GPUs or more, as many as the machine has (up to 8): NCCL's collectives give the right
// results and CUPTI sees every NCCL kernel (calibrate --gpus N), and a tensor-parallel profile runs
// one rank per GPU, replays the all-reduces through NCCL and puts each GPU's kernels and NVTX
// ranges on tracks of their own.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "gpu_helpers.hpp"
#include "profiler/gpu/calibrate_collectives.hpp"

using namespace rooflens;
namespace fs = std::filesystem;

namespace {

// The rooflens binary: $ROOFLENS_BIN, beside this test (the GPU bundle), else the build's.
std::string rooflens_binary() {
  if (const char* b = std::getenv("ROOFLENS_BIN"); b && *b) return b;
  std::error_code ec;
  fs::path beside = fs::read_symlink("/proc/self/exe", ec).parent_path() / "rooflens";
  if (!ec && fs::exists(beside)) return beside.string();
  return ROOFLENS_BIN;
}

// Every GPU of the machine, up to 8 (the main checked there are at least two).
int machine_gpus() {
  int count = 0;
  cudaGetDeviceCount(&count);
  return std::min(count, 8);
}

// `rooflens profile ARGS --json r.json [--trace t.json]` in a scratch folder: its exit code, its
// terminal text, the folder.
struct ProfileRun {
  int rc = 0;
  std::string text;
  fs::path dir;
  nlohmann::json result() const { return nlohmann::json::parse(std::ifstream(dir / "r.json")); }
  nlohmann::json trace() const { return nlohmann::json::parse(std::ifstream(dir / "t.json")); }
  ~ProfileRun() { fs::remove_all(dir); }
};

std::unique_ptr<ProfileRun> run_profile(const std::string& what, const std::string& args) {
  auto run = std::make_unique<ProfileRun>();
  run->dir = fs::temp_directory_path() / fmt::format("rooflens-{}-test-{}", what, getpid());
  fs::create_directories(run->dir);
  std::string cmd = fmt::format("'{}' profile {} --json '{}' --trace '{}' > '{}' 2>&1",
                                rooflens_binary(), args, (run->dir / "r.json").string(),
                                (run->dir / "t.json").string(), (run->dir / "out.txt").string());
  run->rc = WEXITSTATUS(std::system(cmd.c_str()));
  std::ifstream out_text(run->dir / "out.txt");
  run->text.assign(std::istreambuf_iterator<char>(out_text), {});
  return run;
}

}  // namespace

TEST_CASE("NCCL collectives among all GPUs: results checked, every kernel seen by CUPTI") {
  // measure_collectives checks each collective on known values first and throws when a result is
  // wrong or CUPTI misses the kernels of any sample.
  const int gpus = machine_gpus();
  std::ostringstream log;
  CollectiveCurveSet set = profiler::measure_collectives(gpus, true, "", log);
  INFO(log.str());
  CHECK(set.gpus == gpus);
  CHECK(set.nccl.find("NCCL 2.") == 0);
  for (Collective c : kCollectives) {
    const auto& curve = set.curves.at(std::string(collective_name(c)));
    REQUIRE(curve.size() == 6);  // 1 KiB x 16^k up to 1 GiB
    CHECK(curve.front().bytes <= 1024);
    CHECK(curve.back().bytes >= (int64_t{1} << 30) - 4);
    for (const CollectivePoint& p : curve) {
      CHECK(p.kernel_s > 0);
      CHECK(p.kernel_cold_s > 0);
      CHECK(p.wall_s > 0);
    }
    // Behind the barrier every sample starts on all GPUs within a few microseconds, so a
    // kibibyte's kernel takes NCCL's latency (5-10 us on NVLink), not the launching thread's
    // stagger across the GPUs (tens of microseconds).
    CHECK(curve.front().kernel_s < 30e-6);
    // A gibibyte takes longer than 64 MiB, and moves at a bus bandwidth a link can carry:
    // above 20 GB/s (PCIe 4 x16 reaches 25) and below 2 TB/s (NVLink 5's 900 GB/s a direction).
    CHECK(curve.back().kernel_s > curve[curve.size() - 2].kernel_s);
    double busbw =
        static_cast<double>(curve.back().bytes) / curve.back().kernel_s * bus_factor(c, gpus);
    CHECK(busbw > 20e9);
    CHECK(busbw < 2e12);
  }
}

TEST_CASE(
    "profile --tp N: one rank per GPU, the all-reduces replayed through NCCL, a track per GPU") {
  // TinyLlama's 4 KV heads split over 2 or 4 GPUs.
  const int tp = machine_gpus() >= 4 ? 4 : 2;
  std::string config = gpu_test::checkout_file("samples/configs/tinyllama-1.1b/config.json");
  auto run = run_profile("tp", fmt::format("'{}' --phase decode --tp {} --batch 4 --context 256 "
                                           "--max-samples 20",
                                           config, tp));
  INFO(run->text);
  REQUIRE(run->rc == 0);
  nlohmann::json r = run->result();
  REQUIRE(r.contains("tensor_parallel"));
  CHECK(r["tensor_parallel"]["ranks"] == tp);
  int all_reduces = 0;
  for (const auto& n : r["nodes"]) {
    if (n["op"] != "rooflens.AllReduce") continue;
    ++all_reduces;
    CHECK(n["measured"]["status"] == "measured");
    REQUIRE(n.contains("measured_per_gpu_s"));
    REQUIRE(n["measured_per_gpu_s"].size() == static_cast<size_t>(tp));
    for (const auto& per_gpu : n["measured_per_gpu_s"]) CHECK(per_gpu.get<double>() > 0);
  }
  CHECK(all_reduces == 2 * 22 + 1);  // two a layer over TinyLlama's 22, and the embedding's
  CHECK(run->text.find(fmt::format("tensor parallel: {} GPUs", tp)) != std::string::npos);
  // The trace: GPU r's kernels on pid 10r + 1, its NVTX layer ranges on pid 10r + 2.
  nlohmann::json t = run->trace();
  std::set<int> kernel_pids, nvtx_pids;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("cat", "") == "kernel") kernel_pids.insert(e["pid"].get<int>());
    if (e.value("cat", "") == "nvtx") nvtx_pids.insert(e["pid"].get<int>());
  }
  std::set<int> want_kernel_pids, want_nvtx_pids;
  for (int rank = 0; rank < tp; ++rank) {
    want_kernel_pids.insert(10 * rank + 1);
    want_nvtx_pids.insert(10 * rank + 2);
  }
  CHECK(kernel_pids == want_kernel_pids);
  CHECK(nvtx_pids == want_nvtx_pids);
}

TEST_CASE(
    "profile --ep N: the dispatch and combine all-to-alls replayed through NCCL on every GPU") {
  // Mixtral's layout at 4 layers (8 experts, top-2): 2 or 4 GPUs, 2 sequences each.
  const int ep = machine_gpus() >= 4 ? 4 : 2;
  std::string config =
      gpu_test::checkout_file("tests/data/reference/training/configs/mixtral-4l.json");
  auto run = run_profile("ep", fmt::format("'{}' --phase decode --ep {} --batch {} --context 256 "
                                           "--max-samples 20",
                                           config, ep, 2 * ep));
  INFO(run->text);
  REQUIRE(run->rc == 0);
  nlohmann::json r = run->result();
  CHECK(r["tensor_parallel"]["ranks"] == ep);
  CHECK(r["transformer"]["ep"] == ep);
  int all_to_alls = 0;
  for (const auto& n : r["nodes"]) {
    if (n["op"] != "rooflens.AllToAll") continue;
    ++all_to_alls;
    CHECK(n["measured"]["status"] == "measured");
    REQUIRE(n["measured_per_gpu_s"].size() == static_cast<size_t>(ep));
    for (const auto& per_gpu : n["measured_per_gpu_s"]) CHECK(per_gpu.get<double>() > 0);
  }
  CHECK(all_to_alls == 2 * 4);  // dispatch and combine in each of the 4 layers
  CHECK(r["profile"]["not_replayed"] == 0);
  CHECK(run->text.find(fmt::format("expert parallel: {} GPUs", ep)) != std::string::npos);
}
