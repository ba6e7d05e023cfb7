// Roofline classes and the device database.
#include <catch2/catch.hpp>

#include "analyzer/errors.hpp"
#include "analyzer/roofline.hpp"

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
  CHECK(p.predicted == Approx(137.438953472e9 / 989.4e12 + h100.launch_floor_s));  // 138.9 us + the floor
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
  CHECK_THROWS_WITH(place_on_roofline(c, Precision::fp8, find_device("A100-SXM-80GB")), Catch::Contains("no fp8"));
}

TEST_CASE("the device database holds the required GPUs with a source for each number", "[devices]") {
  for (const char* id : {"H100-SXM", "H100-PCIe", "H200", "A100-SXM-80GB", "A100-PCIe-40GB", "L4", "L40S", "RTX4090", "B200"}) {
    const Device& d = find_device(id);
    CHECK(d.sm_count > 0);
    CHECK(d.memory_bytes > 0);
    CHECK(d.hbm_bandwidth > 0);
    CHECK(d.launch_floor_s > 0);
    CHECK(d.tensor_flops.at("bf16") > d.cuda_core_flops.at("fp32"));
    for (const char* key : {"rates", "hbm_bandwidth", "sm_count", "memory_bytes", "l2_bytes", "nvlink_bandwidth", "pcie_bandwidth", "launch_floor_s"})
      CHECK_FALSE(d.sources.at(key).empty());
  }
  CHECK(find_device("h100").id == "H100-SXM");  // aliases, any case
  CHECK_THROWS_WITH(find_device("TPUv5"), Catch::Contains("known: H100-SXM"));
}
