// Roofline classes and the device database.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/hw/roofline.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;

TEST_CASE("a 4096^3 bf16 GEMM on H100 is compute-bound at the tensor roof", "[roofline]") {
  const Device& h100 = find_device("H100-SXM");
  NodeCost c;
  c.flops = 2LL * 4096 * 4096 * 4096;
  c.read_act = 4096LL * 4096 * 2 * 2;
  c.written = 4096LL * 4096 * 2;
  c.tensor_cores = true;
  c.parallel_tiles = 4096;
  RooflinePoint p = place_on_roofline(c, Precision::bf16, h100);
  CHECK(p.bound == Bound::compute);
  CHECK(p.unit == "tensor bf16");
  CHECK(p.predicted ==
        Approx(137.438953472e9 / 989.4e12 + h100.launch_floor_s));  // 138.9 us + the floor
}

TEST_CASE("a large element-wise add is memory-bound at HBM bandwidth", "[roofline]") {
  const Device& h100 = find_device("H100-SXM");
  NodeCost c;
  int64_t n = 1LL << 26;
  c.flops = n;
  c.read_act = 2 * n * 4;
  c.written = n * 4;
  RooflinePoint p = place_on_roofline(c, Precision::fp32, h100);
  CHECK(p.bound == Bound::memory);
  CHECK(p.predicted == Approx(12.0 * n / 3.35e12 + h100.launch_floor_s));
}

TEST_CASE("a tiny kernel is latency-bound at the launch floor", "[roofline]") {
  const Device& h100 = find_device("H100-SXM");
  NodeCost c;
  c.flops = 256;
  c.read_act = c.written = 1024;
  RooflinePoint p = place_on_roofline(c, Precision::fp32, h100);
  CHECK(p.bound == Bound::latency);
  // One block of work on 132 SMs; memory time is not scaled by the wave fraction.
  CHECK(p.wave_fraction == Approx(1.0 / 132));
  CHECK(p.predicted == Approx(h100.launch_floor_s + 2048 / 3.35e12));
}

TEST_CASE("below one wave the roofs shrink and the node is latency-bound", "[roofline]") {
  const Device& h100 = find_device("H100-SXM");
  NodeCost c;
  c.flops = 2LL * 1024 * 1024 * 1024;
  c.read_act = 1;
  c.tensor_cores = true;
  c.parallel_tiles = 33;  // a quarter of 132 SMs
  RooflinePoint p = place_on_roofline(c, Precision::fp16, h100);
  CHECK(p.wave_fraction == Approx(0.25));
  CHECK(p.predicted == Approx(4 * p.t_compute + h100.launch_floor_s));
  CHECK(p.bound == Bound::latency);
}

TEST_CASE("a precision the device lacks is an input error", "[roofline]") {
  NodeCost c;
  c.flops = 1000;
  c.read_act = 1000;
  c.tensor_cores = true;
  CHECK_THROWS_WITH(place_on_roofline(c, Precision::fp8, find_device("A100-SXM-80GB")),
                    Catch::Contains("no fp8"));
}

TEST_CASE("the device database holds the required GPUs with a source for each number",
          "[devices]") {
  for (const char* id : {"H100-SXM", "H100-PCIe", "H200", "A100-SXM-80GB", "A100-PCIe-40GB", "L4",
                         "L40S", "RTX4090", "B200"}) {
    const Device& d = find_device(id);
    CHECK(d.sm_count > 0);
    CHECK(d.memory_bytes > 0);
    CHECK(d.hbm_bandwidth > 0);
    CHECK(d.launch_floor_s > 0);
    CHECK(d.tensor_flops.at("bf16") > d.cuda_core_flops.at("fp32"));
    for (const char* key : {"rates", "hbm_bandwidth", "sm_count", "memory_bytes", "l2_bytes",
                            "nvlink_bandwidth", "pcie_bandwidth", "launch_floor_s"})
      CHECK_FALSE(d.sources.at(key).empty());
  }
  CHECK(find_device("h100").id == "H100-SXM");  // aliases, any case
  CHECK_THROWS_WITH(find_device("TPUv5"), Catch::Contains("known: H100-SXM"));
}

TEST_CASE(
    "a tiled GEMM pays the calibrated GEMM floor while a GEMV and an element-wise kernel pay the "
    "launch floor",
    "[roofline]") {
  Device d = find_device("H100-SXM");
  d.launch_floor_s = 1.5e-6;
  d.gemm_floor_s = 3.0e-6;
  NodeCost c;
  c.flops = 2LL * 1024 * 768 * 768;  // GPT-2 attention projection over 1024 tokens
  c.read_act = (1024LL * 768 + 768LL * 768) * 2;
  c.written = 1024LL * 768 * 2;
  c.tensor_cores = true;
  c.parallel_tiles = 1024;
  c.tiled = true;
  // 4,325,376 bytes at 3.35 TB/s (1.29 us) outweigh 1.21 GFLOP at 989.4 TFLOP/s (1.22 us).
  const double t_memory = 4325376 / 3.35e12;
  RooflinePoint p = place_on_roofline(c, Precision::bf16, d);
  CHECK(p.predicted == Approx(t_memory + 3.0e-6));
  c.tiled = false;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted == Approx(t_memory + 1.5e-6));
  d.gemm_floor_s = 0;  // not measured: the launch floor
  c.tiled = true;
  CHECK(place_on_roofline(c, Precision::bf16, d).predicted == Approx(t_memory + 1.5e-6));
}

namespace {

DeviceProfile h100_profile() {
  DeviceProfile p;
  p.base_device = "H100-SXM";
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.sm_clock_mhz = 1980;
  p.hbm_bandwidth = 3.0e12;
  p.l2_bandwidth = 2.0e13;
  p.tensor_flops["bf16"] = 7.6e14;
  p.cuda_core_flops["fp32"] = 5.1e13;
  p.launch_floor_s = 1.4e-6;
  p.gemm_floor_s = 3.1e-6;
  return p;
}

// Writes `text` into the test's scratch directory; returns the path.
auto file_writer(const std::filesystem::path& dir) {
  return [dir](const std::string& name, const std::string& text) {
    std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  };
}

}  // namespace

TEST_CASE("device profiles round-trip and the GEMM floor is optional and must be positive",
          "[devices]") {
  DeviceProfile p = h100_profile();
  auto write = file_writer(test::scratch_dir("devprof"));
  DeviceProfile back = read_device_profile(write("full.json", device_profile_json(p)));
  CHECK(back.gemm_floor_s == Approx(3.1e-6));
  Device cal = calibrated_device(back);
  CHECK(cal.gemm_floor_s == Approx(3.1e-6));
  CHECK(cal.launch_floor_s == Approx(1.4e-6));
  CHECK(cal.tensor_flops.at("bf16") == Approx(7.6e14));
  CHECK(cal.tensor_flops.at("fp8") ==
        Approx(find_device("H100-SXM").tensor_flops.at("fp8")));  // unmeasured: spec

  auto j = nlohmann::json::parse(device_profile_json(p));
  j.erase("gemm_floor_s");  // a profile written before the GEMM floor was measured
  CHECK(read_device_profile(write("old.json", j.dump())).gemm_floor_s == 0);
  j["gemm_floor_s"] = -1;
  CHECK_THROWS_AS(read_device_profile(write("neg.json", j.dump())), InputError);
  j.erase("gemm_floor_s");
  j.erase("hbm_bandwidth");
  CHECK_THROWS_WITH(read_device_profile(write("missing.json", j.dump())),
                    Catch::Contains("not a device profile"));
  CHECK_THROWS_WITH(read_device_profile(write("bad.json", "{\"schema\": 3")),
                    Catch::Contains("not a device profile"));
}

TEST_CASE("a profile's eager host costs round-trip, are optional, and must be seconds",
          "[devices]") {
  DeviceProfile p = h100_profile();
  auto write = file_writer(test::scratch_dir("devprof-eager"));
  EagerHostCosts e;
  e.forward_kernel_s = 36e-6;
  e.backward_kernel_s = 28e-6;
  e.checkpointed_forward_kernel_s = 53e-6;
  e.checkpointed_backward_kernel_s = 47e-6;
  e.adamw_fixed_s = 1.5e-3;
  e.adamw_tensor_s = 18e-6;
  e.sgd_tensor_s = 10e-6;
  e.source = "by hand";
  p.eager_host = e;
  Device cal = calibrated_device(read_device_profile(write("eager.json", device_profile_json(p))));
  REQUIRE(cal.eager_host);
  CHECK(cal.eager_host->checkpointed_backward_kernel_s == Approx(47e-6));
  CHECK(cal.eager_host->adamw_fixed_s == Approx(1.5e-3));
  CHECK(cal.eager_host->source == "by hand");
  auto j = nlohmann::json::parse(device_profile_json(p));
  j.erase("eager_host");
  CHECK_FALSE(read_device_profile(write("none.json", j.dump())).eager_host);
  j = nlohmann::json::parse(device_profile_json(p));
  j["eager_host"]["forward_kernel_s"] = -1;
  CHECK_THROWS_WITH(read_device_profile(write("neg.json", j.dump())),
                    Catch::Contains("eager_host.forward_kernel_s"));
  j = nlohmann::json::parse(device_profile_json(p));
  j["eager_host"].erase("backward_kernel_s");
  CHECK_THROWS_WITH(read_device_profile(write("missing.json", j.dump())),
                    Catch::Contains("not a device profile"));
}
