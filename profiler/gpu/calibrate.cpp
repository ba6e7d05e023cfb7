#include "profiler/gpu/calibrate.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include "analyzer/core/errors.hpp"
#include "kernels/calibrate_kernels.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gemm.hpp"
#include "kernels/memory_kernels.hpp"
#include "profiler/gpu/calibrate_collectives.hpp"
#include "profiler/gpu/calibrate_tables.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_info.hpp"
#include "profiler/gpu/harness.hpp"

namespace rooflens::profiler {

namespace {

// Launches and floors first, before the large-GEMM sweep drives the GPU to its power limit:
// measured after it, the H100's floor came out 1.50-1.63 us from run to run, before it
// 1.47 us twice (the same add inside `profile` takes 1.31-1.34 us). Back-to-back empty
// kernels (issue interval) and, under CUPTI, the floors.
void measure_floors(DeviceProfile& p, const GpuInfo& gpu, cudaStream_t s, int reps, bool quick) {
  constexpr int kLaunches = 2000;
  double t = event_time_median(
      [&](cudaStream_t st) {
        for (int i = 0; i < kLaunches; ++i) kernels::empty_kernel(st);
      },
      3, s);
  p.launch_interval_s = t / kLaunches;
  CuptiSession cupti;
  if (cupti.ok()) {
    // Floors, measured as `profile --l2 cold` measures a layer: L2 flushed before each run,
    // the median CUPTI duration of 100. The launch floor is the replay's own element-wise add
    // on 1024 bf16 (2 KiB read twice, written once): the least a layer that touches HBM
    // costs. The GEMM floor is a 128^3 fp16 cuBLASLt GEMM, one tile: launch, the first
    // tile loads before any MMA, the epilogue.
    L2Flush flush(gpu.l2_bytes, gpu.sm_count);
    // Batches of kHarnessBatch between host syncs, as the harness samples a layer: a kernel
    // that follows its flush straight away, not one launched onto an idle GPU after a sync.
    auto cold_median = [&](const std::function<void()>& fn) {
      return cupti_time_median(
          cupti, fn, 100, s, [&] { flush.run(s); }, kHarnessBatch);
    };
    constexpr int64_t kAdd = 1024;
    kernels::DeviceBuffer a(kAdd * 2), b(kAdd * 2), c(kAdd * 2);
    kernels::fill(a.get(), DType::bf16, kAdd, 0, 5, s);
    kernels::fill(b.get(), DType::bf16, kAdd, 0, 6, s);
    p.launch_floor_s = cold_median([&] {
      kernels::elementwise(kernels::EwOp::add,
                           {{a.get(), DType::bf16, {kAdd}}, {b.get(), DType::bf16, {kAdd}}},
                           c.get(), DType::bf16, {kAdd}, s);
    });
    p.method["launch_floor_s"] =
        "median CUPTI duration of 100 element-wise adds of 1024 bf16 (the replay kernel), L2 "
        "flushed, sampled as the harness samples a layer";
    kernels::CublasLt lt;
    kernels::GemmShape shape;
    shape.precision = Precision::fp16;
    shape.dims = GemmDims{1, 128, 128, 128};
    kernels::Gemm g(lt, shape);
    kernels::DeviceBuffer ga(128 * 128 * 2), gb(128 * 128 * 2), gd(128 * 128 * 2);
    kernels::fill(ga.get(), DType::f16, 128 * 128, 0, 7, s);
    kernels::fill(gb.get(), DType::f16, 128 * 128, 0, 8, s);
    p.gemm_floor_s = cold_median([&] { g.run(ga.get(), gb.get(), gd.get(), nullptr, s); });
    p.method["gemm_floor_s"] =
        "median CUPTI duration of 100 fp16 cuBLASLt GEMMs of 128x128x128 (one tile), L2 flushed, "
        "sampled as the harness samples a layer";
  } else {
    p.launch_floor_s = p.launch_interval_s;
    p.method["launch_floor_s"] =
        "back-to-back empty kernel interval (CUPTI unavailable: " + cupti.failure() + ")";
  }
  p.method["launch_interval_s"] =
      fmt::format("{} empty kernels back to back, per launch", kLaunches);
}

// HBM: working sets far beyond L2; the best of copy (read + write) and read-only streams.
void measure_hbm(DeviceProfile& p, const GpuInfo& gpu, cudaStream_t s, int reps, bool quick) {
  std::vector<int64_t> sizes = quick ? std::vector<int64_t>{1ll << 30}
                                     : std::vector<int64_t>{256ll << 20, 1ll << 30, 2ll << 30};
  kernels::DeviceBuffer src(static_cast<size_t>(sizes.back())),
      dst(static_cast<size_t>(sizes.back())), sink(64);
  kernels::fill(src.get(), DType::u8, sizes.back(), 256, 1, s);
  double best_copy = 0, best_read = 0;
  for (int64_t bytes : sizes) {
    double tc = event_time_median(
        [&](cudaStream_t st) {
          kernels::stream_copy(dst.get(), src.get(), bytes, gpu.sm_count, st);
        },
        reps, s);
    double tr = event_time_median(
        [&](cudaStream_t st) {
          kernels::stream_read(src.get(), bytes, 1, sink.as<float>(), gpu.sm_count, st);
        },
        reps, s);
    best_copy = std::max(best_copy, 2.0 * bytes / tc);
    best_read = std::max(best_read, bytes / tr);
  }
  p.hbm_bandwidth = std::max(best_copy, best_read);
  p.method["hbm_bandwidth"] =
      fmt::format("16-byte streams over {} to {} MiB: copy {:.0f} GB/s, read {:.0f} GB/s; the best",
                  sizes.front() >> 20, sizes.back() >> 20, best_copy / 1e9, best_read / 1e9);
}

// L2: read-only passes over working sets well inside L2.
void measure_l2(DeviceProfile& p, const GpuInfo& gpu, cudaStream_t s, int reps, bool quick) {
  kernels::DeviceBuffer buf(static_cast<size_t>(gpu.l2_bytes)), sink(64);
  kernels::fill(buf.get(), DType::u8, gpu.l2_bytes, 256, 2, s);
  double best = 0;
  for (int64_t bytes : {gpu.l2_bytes / 4 / 16 * 16, gpu.l2_bytes / 2 / 16 * 16}) {
    int passes = 50;
    double t = event_time_median(
        [&](cudaStream_t st) {
          kernels::stream_read(buf.get(), bytes, passes, sink.as<float>(), gpu.sm_count, st);
        },
        reps, s);
    best = std::max(best, static_cast<double>(bytes) * passes / t);
  }
  p.l2_bandwidth = best;
  p.method["l2_bandwidth"] =
      fmt::format("50 read passes over {} and {} MiB (L2 {} MiB)", gpu.l2_bytes / 4 >> 20,
                  gpu.l2_bytes / 2 >> 20, gpu.l2_bytes >> 20);
}

// Compute: large cuBLASLt GEMMs per precision; the best of a few sizes.
void measure_compute(DeviceProfile& p, const GpuInfo& gpu, cudaStream_t s, int reps, bool quick) {
  kernels::CublasLt lt;
  struct Case {
    Precision precision;
    const char* key;
    bool tensor;
  };
  std::vector<Case> cases{{Precision::fp32, "fp32", false},
                          {Precision::tf32, "tf32", true},
                          {Precision::bf16, "bf16", true},
                          {Precision::fp16, "fp16", true}};
  if (gpu.cc_major * 10 + gpu.cc_minor >= 89) cases.push_back({Precision::fp8, "fp8", true});
  for (const Case& c : cases) {
    std::vector<int64_t> sizes =
        quick ? std::vector<int64_t>{8192} : std::vector<int64_t>{4096, 8192};
    if (!quick && c.tensor && c.precision != Precision::tf32) sizes.push_back(16384);
    double best = 0;
    int64_t best_n = 0;
    for (int64_t n : sizes) {
      DType dt = storage_dtype(c.precision);
      int64_t in_bytes = storage_bytes(dt, n * n),
              out_bytes = storage_bytes(c.precision == Precision::fp8 ? DType::bf16 : dt, n * n);
      kernels::DeviceBuffer a(static_cast<size_t>(in_bytes)), b(static_cast<size_t>(in_bytes)),
          d(static_cast<size_t>(out_bytes));
      kernels::fill(a.get(), dt, n * n, 0, 3, s);
      kernels::fill(b.get(), dt, n * n, 0, 4, s);
      kernels::GemmShape shape;
      shape.precision = c.precision;
      shape.dims = GemmDims{1, n, n, n};
      kernels::Gemm g(lt, shape);
      double t = event_time_median(
          [&](cudaStream_t st) { g.run(a.get(), b.get(), d.get(), nullptr, st); }, reps, s);
      double rate = 2.0 * n * n * n / t;
      if (rate > best) best = rate, best_n = n;
    }
    (c.tensor ? p.tensor_flops : p.cuda_core_flops)[c.key] = best;
    p.method[std::string(c.tensor ? "tensor_" : "cuda_") + c.key] =
        fmt::format("cuBLASLt {0}x{0}x{0} GEMM, the best size", best_n);
  }
}

}  // namespace

DeviceProfile run_calibrate(const CalibrateOptions& o) {
  GpuInfo gpu = query_gpu();
  auto base = device_for_gpu_name(gpu.name, gpu.sm_count);
  if (!base)
    throw InputError(
        fmt::format("GPU '{}' is not in the device database (`rooflens devices`)", gpu.name));
  DeviceProfile p;
  p.base_device = base->id;
  p.gpu = gpu.name;
  if (o.gpus > 1)
    p.collectives.push_back(measure_collectives(o.gpus, o.quick, o.nccl_dir, std::cerr));
  if (o.collectives_only) return p;
  if (!o.roofs) {
    p.sm_clock_mhz = measure_sm_clock_mhz();
    CudaStream s;
    int reps = o.quick ? 5 : 10;
    measure_floors(p, gpu, s.handle, reps, o.quick);
    measure_hbm(p, gpu, s.handle, reps, o.quick);
    measure_l2(p, gpu, s.handle, reps, o.quick);
    measure_compute(p, gpu, s.handle, reps, o.quick);
  }
  if (o.tables) {
    // On the replay's own kernels, after the roofs: those budget which points to time.
    LayerTimer timer(o.cudnn_dir);
    p.method["tables"] =
        fmt::format("replay kernels timed as `profile` times a layer (CUPTI, L2 cold), {}; {}",
                    o.quick ? "quick grids" : "full grids", timer.cudnn_status());
    p.tables = measure_tables(timer, o.roofs ? *o.roofs : calibrated_device(p), o.quick,
                              o.only_tables, std::cerr);
  }
  return p;
}

}  // namespace rooflens::profiler
