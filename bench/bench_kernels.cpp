// GPU benchmark of the replay kernels (run on the GPU machine):
//   1. memory-bound kernels at large sizes as a fraction of the calibrated HBM bandwidth,
//   2. large GEMMs (transformer shapes) as a fraction of the calibrated tensor peak,
//   3. how much CUPTI tracing changes measured kernel time against CUDA events without CUPTI.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <functional>
#include <vector>

#include "analyzer/measurement.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gemm.hpp"
#include "kernels/memory_kernels.hpp"
#include "profiler/attribution.hpp"
#include "profiler/calibrate.hpp"
#include "profiler/cupti_session.hpp"
#include "profiler/gpu.hpp"

using namespace rooflens;
using rooflens::kernels::EwOp;

namespace {

double event_median(const std::function<void()>& fn, int reps = 20) {
  return profiler::event_time_median([&](cudaStream_t) { fn(); }, reps, nullptr);
}

struct Case {
  std::string name;
  double bytes_or_flops;
  std::function<void()> run;
};

}  // namespace

int main() {
  profiler::prepare_nvtx_injection();
  DeviceProfile p = profiler::run_calibrate({true});
  double hbm = p.hbm_bandwidth;
  fmt::print("GPU {} | calibrated HBM {:.0f} GB/s, bf16 tensor {:.0f} TFLOP/s, fp8 {:.0f} TFLOP/s\n", p.gpu, hbm / 1e9,
             p.tensor_flops["bf16"] / 1e12, p.tensor_flops.count("fp8") ? p.tensor_flops["fp8"] / 1e12 : 0.0);
  using kernels::DeviceBuffer;
  const int64_t n = 1ll << 28;  // 256 Mi elements, 512 MiB in bf16
  DeviceBuffer a(n * 2), b(n * 2), c(n * 2), g(16384 * 2), idx(8192 * 8);
  kernels::fill(a.get(), DType::bf16, n, 0, 1, nullptr);
  kernels::fill(b.get(), DType::bf16, n, 0, 2, nullptr);
  kernels::fill(g.get(), DType::bf16, 16384, 0, 3, nullptr);
  kernels::fill(idx.get(), DType::i64, 8192, 32000, 4, nullptr);
  const int64_t rows = n / 8192, cols = 8192;
  std::vector<Case> mem{
      {"add bf16 (2 reads, 1 write)", 3.0 * n * 2, [&] { kernels::elementwise(EwOp::add, {{a.get(), DType::bf16, {n}}, {b.get(), DType::bf16, {n}}}, c.get(), DType::bf16, {n}, nullptr); }},
      {"add bf16, bias broadcast", 2.0 * n * 2, [&] { kernels::elementwise(EwOp::add, {{a.get(), DType::bf16, {rows, cols}}, {g.get(), DType::bf16, {cols}}}, c.get(), DType::bf16, {rows, cols}, nullptr); }},
      {"silu bf16", 2.0 * n * 2, [&] { kernels::elementwise(EwOp::swish, {{a.get(), DType::bf16, {n}}}, c.get(), DType::bf16, {n}, nullptr); }},
      {"softmax bf16 rows of 8192", 2.0 * n * 2, [&] { kernels::softmax_rows(a.get(), c.get(), DType::bf16, rows, cols, false, nullptr); }},
      {"rms norm bf16 rows of 8192", 2.0 * n * 2, [&] { kernels::norm_rows(a.get(), nullptr, g.get(), nullptr, c.get(), DType::bf16, rows, cols, true, nullptr); }},
      {"layer norm bf16 rows of 8192", 2.0 * n * 2, [&] { kernels::norm_rows(a.get(), nullptr, g.get(), g.get(), c.get(), DType::bf16, rows, cols, false, nullptr); }},
      {"reduce mean bf16 rows of 8192", 1.0 * n * 2, [&] { kernels::reduce_rows(a.get(), c.get(), DType::bf16, rows, cols, kernels::RowReduce::mean, nullptr); }},
      {"transpose bf16 (8192 x 32768)", 2.0 * n * 2, [&] { kernels::strided_copy(a.get(), c.get(), 2, {cols, rows}, {1, cols}, {rows, 1}, 0, 0, nullptr); }},
      {"gather 8192 rows of 8192 bf16", 2.0 * 8192 * 8192 * 2, [&] { kernels::gather(a.get(), idx.get(), DType::i64, c.get(), 2, 1, 32000, 8192, 8192, nullptr); }},
  };
  fmt::print("\nMemory-bound replay kernels at 512 MiB per operand (target >= 85% of calibrated HBM)\n");
  for (auto& m : mem) {
    double t = event_median(m.run);
    fmt::print("  {:<34} {:>8.1f} us {:>7.0f} GB/s {:>5.1f}%\n", m.name, t * 1e6, m.bytes_or_flops / t / 1e9, 100 * m.bytes_or_flops / t / hbm);
  }
  kernels::CublasLt lt;
  struct G {
    const char* name;
    Precision p;
    int64_t m, n, k;
  };
  fmt::print("\nGEMMs of transformer shapes (target >= 70% of calibrated tensor peak)\n");
  for (G gc : {G{"Llama-7B q_proj, 4096 tokens, bf16", Precision::bf16, 4096, 4096, 4096},
               G{"Llama-7B up_proj, 4096 tokens, bf16", Precision::bf16, 4096, 11008, 4096},
               G{"Llama-7B down_proj, 4096 tokens, bf16", Precision::bf16, 4096, 4096, 11008},
               G{"Llama-70B up_proj, 8192 tokens, fp16", Precision::fp16, 8192, 28672, 8192},
               G{"Llama-70B up_proj, 8192 tokens, fp8", Precision::fp8, 8192, 28672, 8192}}) {
    DType in = storage_dtype(gc.p);
    DeviceBuffer x(storage_bytes(in, gc.m * gc.k)), w(storage_bytes(in, gc.n * gc.k)), d(gc.m * gc.n * 2);
    kernels::fill(x.get(), in, gc.m * gc.k, 0, 5, nullptr);
    kernels::fill(w.get(), in, gc.n * gc.k, 0, 6, nullptr);
    kernels::GemmShape s;
    s.precision = gc.p;
    s.dims = GemmDims{1, gc.m, gc.n, gc.k};
    kernels::Gemm gemm(lt, s);
    double t = event_median([&] { gemm.run(x.get(), w.get(), d.get(), nullptr, nullptr); });
    double rate = 2.0 * gc.m * gc.n * gc.k / t;
    double peak = p.tensor_flops[std::string(precision_name(gc.p))];
    fmt::print("  {:<40} {:>8.1f} us {:>7.0f} TFLOP/s {:>5.1f}%\n", gc.name, t * 1e6, rate / 1e12, 100 * rate / peak);
  }
  // CUPTI overhead: CUDA events without CUPTI, CUDA events with the CUPTI session active, and
  // CUPTI's own kernel durations, for short and long kernels.
  fmt::print("\nCUPTI tracing vs CUDA events (target: changes kernel time by <= 2%)\n");
  std::vector<Case> probes{mem[0], mem[3], {"bf16 GEMM 4096^3", 0, nullptr}, {"add bf16, 1 Mi elements", 0, nullptr}};
  DeviceBuffer x(4096 * 4096 * 2), w(4096 * 4096 * 2), d(4096 * 4096 * 2);
  kernels::GemmShape s;
  s.dims = GemmDims{1, 4096, 4096, 4096};
  kernels::Gemm gemm(lt, s);
  probes[2].run = [&] { gemm.run(x.get(), w.get(), d.get(), nullptr, nullptr); };
  probes[3].run = [&] { kernels::elementwise(EwOp::add, {{a.get(), DType::bf16, {1 << 20}}, {b.get(), DType::bf16, {1 << 20}}}, c.get(), DType::bf16, {1 << 20}, nullptr); };
  std::vector<double> plain;
  for (auto& pr : probes) plain.push_back(event_median(pr.run, 50));
  profiler::CuptiSession cupti;
  if (!cupti.ok()) {
    fmt::print("  CUPTI unavailable: {}\n", cupti.failure());
    return 0;
  }
  for (size_t i = 0; i < probes.size(); ++i) {
    cupti.flush();
    for (int r = 0; r < 50; ++r) {
      cupti.push_external(profiler::external_id(static_cast<int>(i), r));
      probes[i].run();
      cupti.pop_external();
      cudaDeviceSynchronize();
    }
    double traced_events = event_median(probes[i].run, 50);
    cudaDeviceSynchronize();
    profiler::Attribution at = profiler::attribute(cupti.flush(), {});
    std::vector<double> durs;
    for (auto& [key, st] : at.samples) durs.push_back(st.gpu_ns * 1e-9);
    double cupti_med = summarize_samples(durs).median;
    fmt::print("  {:<28} events {:>9.2f} us | events under CUPTI {:>9.2f} us ({:+.2f}%) | CUPTI duration {:>9.2f} us ({:+.2f}%)\n",
               probes[i].name, plain[i] * 1e6, traced_events * 1e6, 100 * (traced_events / plain[i] - 1), cupti_med * 1e6,
               100 * (cupti_med / plain[i] - 1));
  }
  return 0;
}
