// GPU benchmark of the replay kernels (run on the GPU machine):
//   1. memory-bound kernels at large sizes as a fraction of the calibrated HBM bandwidth,
//   2. decode-step kernels (GEMV, split-KV attention) with cold operands, against HBM,
//   3. large GEMMs (transformer shapes) as a fraction of the calibrated tensor peak,
//   4. how much CUPTI tracing changes kernel time: batches of back-to-back launches timed with
//      CUDA events, without and with the CUPTI session, and CUPTI's own durations.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "analyzer/analysis/measurement.hpp"
#include "kernels/attention.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemv.hpp"
#include "kernels/memory_kernels.hpp"
#include "profiler/gpu/calibrate.hpp"
#include "profiler/gpu/cupti_session.hpp"
#include "profiler/gpu/gpu_info.hpp"

using namespace rooflens;
using rooflens::kernels::EwOp;

namespace {

double event_median(const std::function<void()>& fn, int reps = 20) {
  return profiler::event_time_median([&](cudaStream_t) { fn(); }, reps, nullptr);
}

// Median over `reps` runs of the summed GPU duration of the kernels `fn` launches, from CUPTI:
// for short kernels the CUDA-event pair adds microseconds of its own.
// `before` runs outside the measured range (an L2 flush).
double cupti_median(const std::function<void()>& fn, int reps = 30,
                    const std::function<void()>& before = {}) {
  profiler::CuptiSession cupti;
  if (!cupti.ok()) return event_median(fn, reps);
  return profiler::cupti_time_median(cupti, fn, reps, nullptr, before,
                                     reps);  // one host sync, at the end
}

struct Case {
  std::string name;
  double bytes_or_flops;
  std::function<void()> run;
};

}  // namespace

using kernels::DeviceBuffer;

namespace {

// What every benchmark below reads: the calibrated roofs, the GPU, cuBLASLt's handle.
struct Context {
  DeviceProfile p;
  double hbm = 0;
  int sms = 0;
  kernels::CublasLt lt;
};

// Decode-step kernels read operands of tens of MiB, which would stay in the 50 MiB L2 from one
// repetition to the next: each repetition reads another of kCopies copies (>= 256 MiB in all).
constexpr int kCopies = 8;

// Operands of 512 MiB (256 Mi bf16 elements) for the memory-bound kernels.
struct LargeOperands {
  const int64_t n = 1ll << 28;
  kernels::DeviceBuffer a{static_cast<size_t>(n * 2)}, b{static_cast<size_t>(n * 2)},
      c{static_cast<size_t>(n * 2)}, g{16384 * 2}, idx{8192 * 8};
  LargeOperands() {
    kernels::fill(a.get(), DType::bf16, n, 0, 1, nullptr);
    kernels::fill(b.get(), DType::bf16, n, 0, 2, nullptr);
    kernels::fill(g.get(), DType::bf16, 16384, 0, 3, nullptr);
    kernels::fill(idx.get(), DType::i64, 8192, 32000, 4, nullptr);
  }
};

std::vector<Case> memory_cases(const LargeOperands& o) {
  const int64_t n = o.n;
  void *a = o.a.get(), *b = o.b.get(), *c = o.c.get(), *g = o.g.get(), *idx = o.idx.get();
  const int64_t rows = n / 8192, cols = 8192;
  return {
      {"add bf16 (2 reads, 1 write)", 3.0 * n * 2,
       [=] {
         kernels::elementwise(EwOp::add, {{a, DType::bf16, {n}}, {b, DType::bf16, {n}}}, c,
                              DType::bf16, {n}, nullptr);
       }},
      {"add bf16, bias broadcast", 2.0 * n * 2,
       [=] {
         kernels::elementwise(EwOp::add, {{a, DType::bf16, {rows, cols}}, {g, DType::bf16, {cols}}},
                              c, DType::bf16, {rows, cols}, nullptr);
       }},
      {"silu bf16", 2.0 * n * 2,
       [=] {
         kernels::elementwise(EwOp::swish, {{a, DType::bf16, {n}}}, c, DType::bf16, {n}, nullptr);
       }},
      {"softmax bf16 rows of 8192", 2.0 * n * 2,
       [=] { kernels::softmax_rows(a, c, DType::bf16, rows, cols, false, nullptr); }},
      {"rms norm bf16 rows of 8192", 2.0 * n * 2,
       [=] {
         kernels::norm_rows(a, nullptr, g, nullptr, c, DType::bf16, rows, cols, true, nullptr);
       }},
      {"layer norm bf16 rows of 8192", 2.0 * n * 2,
       [=] { kernels::norm_rows(a, nullptr, g, g, c, DType::bf16, rows, cols, false, nullptr); }},
      {"reduce mean bf16 rows of 8192", 1.0 * n * 2,
       [=] {
         kernels::reduce_rows(a, c, DType::bf16, rows, cols, kernels::RowReduce::mean, nullptr);
       }},
      {"transpose bf16 (8192 x 32768)", 2.0 * n * 2,
       [=] {
         kernels::strided_copy(a, c, 2, {cols, rows}, {1, cols}, {rows, 1}, 0, 0, nullptr);
       }},
      {"gather 8192 rows of 8192 bf16", 2.0 * 8192 * 8192 * 2,
       [=] { kernels::gather(a, idx, DType::i64, c, 2, 1, 32000, 8192, 8192, nullptr); }},
  };
}

void memory_bound(const Context& ctx, const std::vector<Case>& mem) {
  double hbm = ctx.hbm;
  fmt::print(
      "\nMemory-bound replay kernels at 512 MiB per operand (target >= 85% of calibrated HBM)\n");
  for (auto& m : mem) {
    double t = event_median(m.run);
    fmt::print("  {:<34} {:>8.1f} us {:>7.0f} GB/s {:>5.1f}%\n", m.name, t * 1e6,
               m.bytes_or_flops / t / 1e9, 100 * m.bytes_or_flops / t / hbm);
  }
}

void decode_gemvs(Context& ctx) {
  double hbm = ctx.hbm;
  kernels::CublasLt& lt = ctx.lt;
  struct Gv {
    const char* name;
    int64_t n, k;
  };
  for (Gv gv : {Gv{"GEMV Llama-7B q_proj 4096x4096 bf16", 4096, 4096},
                Gv{"GEMV Llama-7B down_proj 4096x11008", 4096, 11008},
                Gv{"GEMV Llama-2 lm_head 32000x4096", 32000, 4096}}) {
    int64_t wbytes = gv.n * gv.k * 2;
    DeviceBuffer w(kCopies * wbytes), x(gv.k * 2), y(gv.n * 2);
    kernels::fill(w.get(), DType::bf16, kCopies * gv.n * gv.k, 0, 7, nullptr);
    kernels::fill(x.get(), DType::bf16, gv.k, 0, 8, nullptr);
    kernels::GemmShape gs;
    gs.dims = GemmDims{1, 1, gv.n, gv.k};
    kernels::Gemm cublas(lt, gs);
    int i = 0;
    auto wi = [&] { return static_cast<char*>(w.get()) + (i++ % kCopies) * wbytes; };
    double t = cupti_median([&] {
      kernels::gemv(x.get(), wi(), nullptr, y.get(), DType::bf16, 1, gv.n, gv.k, nullptr);
    });
    double tc = cupti_median([&] { cublas.run(x.get(), wi(), y.get(), nullptr, nullptr); });
    fmt::print("  {:<40} {:>8.1f} us {:>5.1f}%   (cuBLASLt {:>6.1f} us {:>5.1f}%)\n", gv.name,
               t * 1e6, 100 * wbytes / t / hbm, tc * 1e6, 100 * wbytes / tc / hbm);
  }
  // Warps per output column for the GQA K/V projection (n 1024) and q_proj: the choice gemv()
  // makes against the others.
  for (int64_t n : {1024, 4096}) {
    const int64_t k = 4096, wbytes = n * k * 2;
    DeviceBuffer w(kCopies * wbytes), x(k * 2), y(n * 2);
    kernels::fill(w.get(), DType::bf16, kCopies * n * k, 0, 7, nullptr);
    kernels::fill(x.get(), DType::bf16, k, 0, 8, nullptr);
    std::string line = fmt::format("  GEMV {}x{} by warps per column:", n, k);
    for (int split : {0, 1, 2, 4, 8}) {
      int i = 0;
      double t = cupti_median([&] {
        kernels::gemv(x.get(), static_cast<char*>(w.get()) + (i++ % kCopies) * wbytes, nullptr,
                      y.get(), DType::bf16, 1, n, k, nullptr, split);
      });
      line += fmt::format(" {} {:.2f} us", split == 0 ? std::string("auto") : std::to_string(split),
                          t * 1e6);
    }
    fmt::print("{}\n", line);
  }
}

void decode_attention_kernels(const Context& ctx) {
  double hbm = ctx.hbm;
  int sms = ctx.sms;
  struct Dc {
    const char* name;
    int64_t batch, hq, hkv, kv;
  };
  for (Dc dc : {Dc{"decode attn Llama-2-7B 32/32 heads ctx 2048", 1, 32, 32, 2048},
                Dc{"decode attn Llama-3-8B 32/8 heads ctx 8192", 1, 32, 8, 8192},
                Dc{"decode attn Llama-3-8B batch 8 ctx 2048", 8, 32, 8, 2048}}) {
    AttentionDims d{dc.batch, dc.hq, dc.hkv, 1, dc.kv, 128, 128, true, 0};
    int64_t kv_elems = dc.batch * dc.hkv * dc.kv * 128, bytes = 2 * kv_elems * 2;
    DeviceBuffer k(kCopies * kv_elems * 2), v(kCopies * kv_elems * 2), q(dc.batch * dc.hq * 256),
        o(dc.batch * dc.hq * 256), ws(static_cast<size_t>(kernels::decode_workspace_bytes(d, sms)));
    kernels::prepare_decode_workspace(ws.get(), d, sms, nullptr);
    kernels::fill(k.get(), DType::bf16, kCopies * kv_elems, 0, 9, nullptr);
    kernels::fill(v.get(), DType::bf16, kCopies * kv_elems, 0, 10, nullptr);
    kernels::fill(q.get(), DType::bf16, dc.batch * dc.hq * 128, 0, 11, nullptr);
    int i = 0;
    double t = cupti_median([&] {
      int64_t off = (i++ % kCopies) * kv_elems * 2;
      kernels::decode_attention(q.get(), static_cast<char*>(k.get()) + off,
                                static_cast<char*>(v.get()) + off, o.get(), ws.get(), DType::bf16,
                                d, sms, nullptr);
    });
    fmt::print("  {:<40} {:>8.1f} us {:>5.1f}%   (K+V {:.1f} MiB, with the combine kernel)\n",
               dc.name, t * 1e6, 100 * bytes / t / hbm, bytes / 1048576.0);
  }
}

void large_gemms(Context& ctx) {
  DeviceProfile& p = ctx.p;
  kernels::CublasLt& lt = ctx.lt;
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
    DeviceBuffer x(storage_bytes(in, gc.m * gc.k)), w(storage_bytes(in, gc.n * gc.k)),
        d(gc.m * gc.n * 2);
    kernels::fill(x.get(), in, gc.m * gc.k, 0, 5, nullptr);
    kernels::fill(w.get(), in, gc.n * gc.k, 0, 6, nullptr);
    kernels::GemmShape s;
    s.precision = gc.p;
    s.dims = GemmDims{1, gc.m, gc.n, gc.k};
    kernels::Gemm gemm(lt, s);
    double t = event_median([&] { gemm.run(x.get(), w.get(), d.get(), nullptr, nullptr); });
    double rate = 2.0 * gc.m * gc.n * gc.k / t;
    double peak = p.tensor_flops[std::string(precision_name(gc.p))];
    fmt::print("  {:<40} {:>8.1f} us {:>7.0f} TFLOP/s {:>5.1f}%\n", gc.name, t * 1e6, rate / 1e12,
               100 * rate / peak);
  }
}

// Flash attention prefill, causal: executed FLOPs (half the dense 4*S^2*D per head) per second.
void prefill_attention(Context& ctx) {
  DeviceProfile& p = ctx.p;
  fmt::print(
      "\nFlash attention prefill, causal, bf16 (CUPTI durations; vs calibrated bf16 tensor "
      "peak)\n");
  struct A {
    const char* name;
    int64_t batch, heads, seq, d;
  };
  for (A ac : {A{"GPT-2: 12 heads, 1024 tokens, D 64", 1, 12, 1024, 64},
               A{"GPT-2, batch 8", 8, 12, 1024, 64},
               A{"Llama-2-7B: 32 heads, 2048 tokens, D 128", 1, 32, 2048, 128},
               A{"Llama-2-7B: 32 heads, 8192 tokens, D 128", 1, 32, 8192, 128}}) {
    AttentionDims d{ac.batch, ac.heads, ac.heads, ac.seq, ac.seq, ac.d, ac.d, true, 0};
    int64_t n = ac.batch * ac.heads * ac.seq * ac.d;
    DeviceBuffer q(n * 2), k(n * 2), v(n * 2), o(n * 2);
    for (auto* buf : {&q, &k, &v}) kernels::fill(buf->get(), DType::bf16, n, 0, 12, nullptr);
    double t = cupti_median([&] {
      kernels::flash_prefill(q.get(), k.get(), v.get(), o.get(), DType::bf16, d, nullptr);
    });
    double flops = 2.0 * ac.batch * ac.heads * ac.seq * ac.seq * ac.d;  // 4 S^2 D / 2 (causal)
    fmt::print("  {:<42} {:>8.1f} us {:>6.0f} TFLOP/s {:>5.1f}%\n", ac.name, t * 1e6,
               flops / t / 1e12, 100 * flops / t / p.tensor_flops["bf16"]);
  }
}

// Decode-step small kernels, L2 flushed (as `profile` measures them) and back to back: what
// beyond the launch floor each pays, and how much of it the flush causes.
void small_kernels(const Context& ctx) {
  int sms = ctx.sms;
  fmt::print("\nDecode-step small kernels, CUPTI durations: L2 flushed | hot\n");
  profiler::L2Flush flush(profiler::query_gpu().l2_bytes, sms);
  DeviceBuffer x(4096 * 2), r(4096 * 2), gm(4096 * 2), bt(4096 * 2), o(4096 * 2), pos(8),
      cs(4096 * 64 * 2), sn(4096 * 64 * 2), tab(32000 * 4096 * 2), id(8);
  for (auto* buf : {&x, &r, &gm, &bt}) kernels::fill(buf->get(), DType::bf16, 4096, 0, 13, nullptr);
  kernels::fill(cs.get(), DType::bf16, 4096 * 64, 0, 14, nullptr);
  kernels::fill(sn.get(), DType::bf16, 4096 * 64, 0, 15, nullptr);
  kernels::fill(pos.get(), DType::i64, 1, 4096, 16, nullptr);
  kernels::fill(id.get(), DType::i64, 1, 32000, 17, nullptr);
  std::vector<Case> tiny{
      {"add 768 bf16", 0,
       [&] {
         kernels::elementwise(EwOp::add,
                              {{x.get(), DType::bf16, {768}}, {r.get(), DType::bf16, {768}}},
                              o.get(), DType::bf16, {768}, nullptr);
       }},
      {"silu 14336 bf16", 0,
       [&] {
         kernels::elementwise(EwOp::swish, {{tab.get(), DType::bf16, {14336}}}, o.get(),
                              DType::bf16, {14336}, nullptr);
       }},
      {"layer norm 1 x 768", 0,
       [&] {
         kernels::norm_rows(x.get(), nullptr, gm.get(), bt.get(), o.get(), DType::bf16, 1, 768,
                            false, nullptr);
       }},
      {"rms norm 1 x 4096", 0,
       [&] {
         kernels::norm_rows(x.get(), nullptr, gm.get(), nullptr, o.get(), DType::bf16, 1, 4096,
                            true, nullptr);
       }},
      {"rope 32 heads x 128", 0,
       [&] {
         kernels::rope(x.get(), static_cast<const int64_t*>(pos.get()), cs.get(), sn.get(), o.get(),
                       DType::bf16, 32, 32, 1, 128, 128, false, nullptr);
       }},
      {"gather 1 row of 4096", 0,
       [&] {
         kernels::gather(tab.get(), id.get(), DType::i64, o.get(), 2, 1, 32000, 1, 4096, nullptr);
       }},
  };
  for (const Case& c : tiny) {
    double cold = cupti_median(c.run, 30, [&] { flush.run(nullptr); }),
           hot = cupti_median(c.run, 30);
    fmt::print("  {:<28} {:>6.2f} us | {:>6.2f} us\n", c.name, cold * 1e6, hot * 1e6);
  }
}

// Small GEMMs as a prefill of GPT-2 runs them, after an L2 flush as `profile --l2 cold` does:
// how far from max(compute, memory) + launch floor they land. The 128^3 one is all overhead.
void small_gemms(Context& ctx) {
  DeviceProfile& p = ctx.p;
  double hbm = ctx.hbm;
  int sms = ctx.sms;
  kernels::CublasLt& lt = ctx.lt;
  fmt::print("\nSmall bf16 GEMMs, L2 flushed, CUPTI durations (launch floor {:.2f} us)\n",
             p.launch_floor_s * 1e6);
  profiler::L2Flush flush(profiler::query_gpu().l2_bytes, sms);
  DeviceBuffer x(4096 * 4096 * 2), w(4096 * 4096 * 2), d(4096 * 4096 * 2);
  kernels::fill(x.get(), DType::bf16, 4096 * 4096, 0, 5, nullptr);
  kernels::fill(w.get(), DType::bf16, 4096 * 4096, 0, 6, nullptr);
  struct S {
    int64_t m, n, k;
  };
  for (S sc : {S{128, 128, 128}, S{256, 256, 256}, S{1024, 768, 768}, S{1024, 2304, 768},
               S{1024, 3072, 768}, S{1024, 768, 3072}, S{2048, 4096, 4096}}) {
    kernels::GemmShape gs;
    gs.precision = Precision::bf16;
    gs.dims = GemmDims{1, sc.m, sc.n, sc.k};
    kernels::Gemm gemm(lt, gs);
    double t = cupti_median([&] { gemm.run(x.get(), w.get(), d.get(), nullptr, nullptr); }, 30,
                            [&] { flush.run(nullptr); });
    double fl = 2.0 * sc.m * sc.n * sc.k, by = 2.0 * (sc.m * sc.k + sc.n * sc.k + sc.m * sc.n);
    double model = std::max(fl / p.tensor_flops["bf16"], by / hbm) + p.launch_floor_s;
    fmt::print("  m={:<5} n={:<5} k={:<5} {:>8.2f} us  model {:>8.2f} us  ({:+.1f}%)\n", sc.m, sc.n,
               sc.k, t * 1e6, model * 1e6, 100 * (model - t) / t);
  }
}

// CUPTI overhead. Single-kernel event timings spread by several percent from run to run, so
// each figure is a batch of back-to-back launches (>= 5 ms) between two events, per launch,
// median of 5 batches; rounds without and with the CUPTI session alternate, so clock and
// thermal drift hit both alike, and the figure is the median over 9 rounds of each round's
// ratio (a 4096^3 GEMM's single rounds spread -6% to +8% with power-limited clocks).
void cupti_overhead(Context& ctx, const std::vector<Case>& mem, const LargeOperands& operands) {
  kernels::CublasLt& lt = ctx.lt;
  fmt::print(
      "\nCUPTI tracing vs none (target: changes kernel time by <= 2%): per-launch time in batches "
      "of >= 5 ms\n");
  std::vector<Case> probes{
      mem[0], mem[3], {"bf16 GEMM 4096^3", 0, nullptr}, {"add bf16, 1 Mi elements", 0, nullptr}};
  const LargeOperands& o = operands;
  DeviceBuffer x(4096 * 4096 * 2), w(4096 * 4096 * 2), d(4096 * 4096 * 2);
  kernels::GemmShape s;
  s.dims = GemmDims{1, 4096, 4096, 4096};
  kernels::Gemm gemm(lt, s);
  probes[2].run = [&] { gemm.run(x.get(), w.get(), d.get(), nullptr, nullptr); };
  probes[3].run = [&] {
    kernels::elementwise(EwOp::add,
                         {{o.a.get(), DType::bf16, {1 << 20}}, {o.b.get(), DType::bf16, {1 << 20}}},
                         o.c.get(), DType::bf16, {1 << 20}, nullptr);
  };
  for (Case& pr : probes) {
    int n = std::max(1, static_cast<int>(5e-3 / event_median(pr.run)));
    auto per_launch = [&] {
      return event_median(
                 [&] {
                   for (int j = 0; j < n; ++j) pr.run();
                 },
                 5) /
             n;
    };
    std::vector<double> plain, traced, cupti_durations;
    for (int round = 0; round < 9; ++round) {
      plain.push_back(per_launch());
      profiler::CuptiSession cupti;
      if (!cupti.ok()) {
        fmt::print("  CUPTI unavailable: {}\n", cupti.failure());
        return;
      }
      traced.push_back(per_launch());
      cudaDeviceSynchronize();
      profiler::Trace tr = cupti.flush();
      for (const auto& act : tr.activities)
        if (act.kind == profiler::GpuActivity::Kind::kernel)
          cupti_durations.push_back((act.end_ns - act.start_ns) * 1e-9);
      if (tr.dropped) fmt::print("  ({} CUPTI records dropped)\n", tr.dropped);
    }
    std::vector<double> ratio;
    for (size_t r = 0; r < plain.size(); ++r) ratio.push_back(traced[r] / plain[r] - 1);
    std::sort(ratio.begin(), ratio.end());
    double plain_med = summarize_samples(plain).median,
           cupti_med = summarize_samples(cupti_durations).median;
    fmt::print(
        "  {:<28} x{:<5} without {:>9.2f} us | with CUPTI {:>9.2f} us: {:+.2f}% (median of 9 "
        "rounds; {:+.2f}% to {:+.2f}%) | CUPTI kernel duration {:>9.2f} us\n",
        pr.name, n, plain_med * 1e6, summarize_samples(traced).median * 1e6,
        100 * summarize_samples(ratio).median, 100 * ratio.front(), 100 * ratio.back(),
        cupti_med * 1e6);
  }
}

}  // namespace

int main() {
  profiler::prepare_nvtx_injection();
  profiler::CalibrateOptions roofs;
  roofs.quick = true;
  roofs.tables = false;
  Context x;
  x.p = profiler::run_calibrate(roofs);
  x.hbm = x.p.hbm_bandwidth;
  x.sms = profiler::query_gpu().sm_count;
  fmt::print(
      "GPU {} | calibrated HBM {:.0f} GB/s, bf16 tensor {:.0f} TFLOP/s, fp8 {:.0f} TFLOP/s\n",
      x.p.gpu, x.hbm / 1e9, x.p.tensor_flops["bf16"] / 1e12,
      x.p.tensor_flops.count("fp8") ? x.p.tensor_flops["fp8"] / 1e12 : 0.0);
  LargeOperands operands;
  std::vector<Case> mem = memory_cases(operands);
  memory_bound(x, mem);
  fmt::print(
      "\nDecode-step kernels, operands cold (rotated over {} copies), CUPTI durations, vs "
      "calibrated HBM\n",
      kCopies);
  decode_gemvs(x);
  decode_attention_kernels(x);
  large_gemms(x);
  prefill_attention(x);
  small_kernels(x);
  small_gemms(x);
  cupti_overhead(x, mem, operands);
  return 0;
}
