// The replay on the shapes of the vendor-kernel table (docs/profile.md): each layer planned as
// `rooflens profile` plans it, run by LayerReplay (cuBLASLt's fastest algorithm, cuDNN's fastest
// engine or our kernel, as measured), and timed as the harness times a layer: CUPTI kernel time,
// L2 flushed before each sample, the median ("cold"); and back to back ("hot").
// scripts/gpu/torch_kernel_reference.py times PyTorch's kernels on the same shapes;
// scripts/gpu/compare_vendor.py puts the two side by side.
//
//   rooflens_bench_vendor [--out FILE.json] [--cudnn DIR] [--only gemm,attention,conv]
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/cuda_check.hpp"
#include "profiler/gpu/layer_timer.hpp"

using namespace rooflens;
using namespace rooflens::replay;
using json = nlohmann::json;

namespace {

BufferSpec buffer(DType d, Shape s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return BufferSpec{d, std::move(s), storage_bytes(d, n), 0};
}

struct Bench {
  profiler::LayerTimer timer;
  json rows = json::array();

  explicit Bench(const std::string& cudnn_dir) : timer(cudnn_dir) {
    fmt::print("GPU {} | {} | CUPTI {}\n", timer.gpu().name, timer.cudnn_status(),
               timer.cupti_ok() ? "on" : "off");
  }

  // Seconds per sample, L2 cold; the hot figure goes to the JSON beside it.
  double run(const std::string& group, const std::string& name, const ReplayPlan& plan,
             json params) {
    try {
      profiler::LayerTimer::Result r = timer.time(plan, 20, true);
      fmt::print("{:<10} {:<44} {:>10.2f} us cold {:>10.2f} us hot  {}\n", group, name,
                 r.cold_s * 1e6, r.hot_s * 1e6, r.label.text());
      params.update({{"group", group},
                     {"name", name},
                     {"time_s", r.cold_s},
                     {"hot_s", r.hot_s},
                     {"library", r.label.library},
                     {"algorithm", r.label.detail},
                     {"choice", r.label.note}});
      rows.push_back(params);
      return r.cold_s;
    } catch (const kernels::CudaError& e) {
      cudaGetLastError();
      fmt::print("{:<10} {:<44} not run: {}\n", group, name, e.what());
      params.update({{"group", group}, {"name", name}, {"error", e.what()}});
      rows.push_back(params);
      return 0;
    }
  }
};

void gemms(Bench& b) {
  const int64_t shapes[][3] = {{8, 11008, 4096},    {8, 4096, 11008},    {8, 4096, 4096},
                               {1, 4096, 4096},     {16, 4096, 4096},    {1000, 2304, 768},
                               {1000, 768, 768},    {1000, 3072, 768},   {1000, 768, 3072},
                               {1000, 50257, 768},  {1000, 50264, 768},  {1, 50257, 768},
                               {2048, 4096, 4096},  {2048, 11008, 4096}, {2048, 4096, 11008},
                               {2048, 32000, 4096}, {8, 32000, 4096},    {4096, 4096, 4096}};
  for (const auto& s : shapes) {
    int64_t m = s[0], n = s[1], k = s[2];
    ReplayPlan p;
    p.precision = Precision::bf16;
    p.inputs = {buffer(DType::bf16, {m, k}), buffer(DType::bf16, {n, k})};
    p.outputs = {buffer(DType::bf16, {m, n})};
    p.kernel = GemmPlan{GemmDims{1, m, n, k}, false, true, false, false};
    b.run("gemm", fmt::format("{}x{}x{}", m, n, k), p, {{"m", m}, {"n", n}, {"k", k}});
  }
}

void attention(Bench& b) {
  struct A {
    int64_t batch, hq, hkv, sq, skv, d;
    bool causal;
    int64_t window = 0;
  };
  // Mistral-7B v0.1's decode at context 4096: its 4096-key sliding window holds the whole cache;
  // then the same window over a cache of 8192 keys (an ONNX GQA's full-length buffer).
  const A cases[] = {{1, 12, 12, 1000, 1000, 64, true},     {1, 12, 12, 1024, 1024, 64, true},
                     {1, 32, 32, 2048, 2048, 128, true},    {1, 32, 8, 2048, 2048, 128, true},
                     {1, 32, 8, 1, 8193, 128, false},       {16, 32, 8, 1, 8193, 128, false},
                     {1, 32, 32, 1, 2049, 128, false},      {8, 32, 32, 1, 513, 128, false},
                     {1, 12, 12, 1, 1001, 64, false},       {1, 12, 12, 1, 1025, 64, false},
                     {16, 32, 8, 1, 4096, 128, true, 4096}, {16, 32, 8, 1, 8192, 128, true, 4096}};
  for (const A& c : cases) {
    AttentionDims d{c.batch, c.hq, c.hkv, c.sq, c.skv, c.d, c.d, c.causal, c.window};
    ReplayPlan p;
    p.precision = Precision::bf16;
    p.inputs = {buffer(DType::bf16, {d.batch, d.q_len, d.q_heads, d.head_dim_qk}),
                buffer(DType::bf16, {d.batch, d.kv_heads, d.kv_len, d.head_dim_qk}),
                buffer(DType::bf16, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v})};
    p.outputs = {buffer(DType::bf16, {d.batch, d.q_len, d.q_heads, d.head_dim_v})};
    p.kernel = AttentionPlan{d, false};
    std::string window = c.window ? fmt::format(" w{}", c.window) : "";
    b.run("attention",
          fmt::format("b{} h{}/{} {}x{} d{}{}{}", c.batch, c.hq, c.hkv, c.sq, c.skv, c.d,
                      c.causal ? " causal" : "", window),
          p,
          {{"batch", c.batch},
           {"q_heads", c.hq},
           {"kv_heads", c.hkv},
           {"q_len", c.sq},
           {"kv_len", c.skv},
           {"head_dim", c.d},
           {"causal", c.causal},
           {"window", c.window}});
  }
}

// torchvision's ResNet-50: every convolution (input channels, output channels, input size,
// kernel, stride, padding), in forward order; bias-free as torchvision builds them.
std::vector<ConvDims> resnet50_convs(int64_t batch) {
  std::vector<ConvDims> out;
  auto conv = [&](int64_t ci, int64_t co, int64_t hw, int64_t k, int64_t s) {
    int64_t p = k / 2, o = (hw + 2 * p - k) / s + 1;
    out.push_back(
        ConvDims{batch, ci, co, 1, {hw, hw}, {k, k}, {o, o}, {s, s}, {p, p, p, p}, {1, 1}, false});
    return o;
  };
  int64_t hw = conv(3, 64, 224, 7, 2);  // stem, then the 3x3/2 max pool
  hw = (hw + 2 - 3) / 2 + 1;
  int64_t in = 64;
  const int64_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage)
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      int64_t w = widths[stage], s = (stage > 0 && i == 0) ? 2 : 1;
      conv(in, w, hw, 1, 1);
      int64_t o = conv(w, w, hw, 3, s);  // torchvision puts the stride on the 3x3
      conv(w, 4 * w, o, 1, 1);
      if (i == 0) conv(in, 4 * w, hw, 1, s);  // the projection shortcut
      in = 4 * w;
      hw = o;
    }
  return out;
}

void convs(Bench& b) {
  for (int64_t batch : {1, 32})
    for (auto [dt, prec] :
         {std::pair{DType::bf16, Precision::bf16}, std::pair{DType::f32, Precision::fp32},
          std::pair{DType::f32, Precision::tf32}}) {
      double total = 0;
      size_t first = b.rows.size();
      int i = 0;
      for (const ConvDims& c : resnet50_convs(batch)) {
        ReplayPlan p;
        p.precision = prec;
        p.inputs = {buffer(dt, {c.batch, c.in_channels, c.in_spatial[0], c.in_spatial[1]}),
                    buffer(dt, {c.out_channels, c.in_channels, c.kernel[0], c.kernel[1]})};
        p.outputs = {buffer(dt, {c.batch, c.out_channels, c.out_spatial[0], c.out_spatial[1]})};
        bool pointwise = c.kernel[0] == 1 && c.strides[0] == 1;
        p.kernel = ConvPlan{c, pointwise, false};
        std::string name = fmt::format("rn50 b{} {} #{} {}->{} {}x{} s{} @{}", batch,
                                       precision_name(prec), i++, c.in_channels, c.out_channels,
                                       c.kernel[0], c.kernel[1], c.strides[0], c.in_spatial[0]);
        total += b.run("conv", name, p,
                       {{"batch", batch}, {"precision", precision_name(prec)}, {"index", i - 1}});
      }
      double hot = 0;
      for (size_t r = first; r < b.rows.size(); ++r) hot += b.rows[r].value("hot_s", 0.0);
      fmt::print(
          "conv       ResNet-50 batch {} {}: 53 convolutions {:.1f} us cold, {:.1f} us hot\n",
          batch, precision_name(prec), total * 1e6, hot * 1e6);
    }
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, cudnn_dir, only = "gemm,attention,conv";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--out")
      out = argv[i + 1];
    else if (a == "--cudnn")
      cudnn_dir = argv[i + 1];
    else if (a == "--only")
      only = argv[i + 1];
  }
  try {
    profiler::prepare_nvtx_injection();
    Bench b(cudnn_dir);
    if (only.find("gemm") != std::string::npos) gemms(b);
    if (only.find("attention") != std::string::npos) attention(b);
    if (only.find("conv") != std::string::npos) convs(b);
    if (!out.empty())
      std::ofstream(out) << json{{"gpu", b.timer.gpu().name}, {"rows", b.rows}}.dump(1);
  } catch (const std::exception& e) {
    std::cerr << "rooflens_bench_vendor: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
