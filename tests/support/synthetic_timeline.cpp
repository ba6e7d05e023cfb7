#include "tests/support/synthetic_timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace rooflens::bench {

using nlohmann::json;
using profiler::GpuActivity;

namespace {
constexpr uint64_t kBaseNs = 1'750'000'000'000'000'000ull;  // an epoch-scale clock, as CUPTI's
constexpr uint64_t kStartOffsetNs = 123'456'789;
uint64_t ns(double us) {
  return static_cast<uint64_t>(std::llround(us * 1e3));
}
}  // namespace

SyntheticTimeline::SyntheticTimeline(uint64_t pid, uint64_t tid)
    : pid_(pid),
      tid_(tid),
      host_ns_(kBaseNs + kStartOffsetNs),
      gpu_free_ns_(kBaseNs + kStartOffsetNs) {
  trace_.gpu = "NVIDIA H100 80GB HBM3";
  trace_.devices = {{0, trace_.gpu}};
  trace_.source = "rooflens record";
}

void SyntheticTimeline::enter(const std::string& name, const std::string& domain, double host_us) {
  open_.push_back(trace_.ranges.size());
  trace_.ranges.push_back({domain, name, host_ns_, 0, pid_, tid_});
  host_ns_ += ns(host_us);
}

void SyntheticTimeline::exit(double host_us) {
  host_ns_ += ns(host_us);
  trace_.ranges[open_.back()].end_ns = host_ns_;
  open_.pop_back();
  host_ns_ += 1;  // the next range starts after this one ends
}

void SyntheticTimeline::host(double us) {
  host_ns_ += ns(us);
}

uint32_t SyntheticTimeline::launch(const std::string& kernel, double gpu_us, double host_us,
                                   GpuActivity::Kind kind, uint64_t bytes, const std::string& api) {
  uint32_t corr = next_correlation_++;
  uint64_t call_start = host_ns_, call_end = host_ns_ + ns(host_us);
  trace_.api_calls.push_back({api, call_start, call_end, corr, pid_, tid_});
  host_ns_ = call_end + 200;
  uint64_t start = std::max(gpu_free_ns_, call_end + 1000);  // 1 us from launch to start
  GpuActivity a{kind, kernel, start, start + ns(gpu_us), corr, 7, bytes};
  trace_.activities.push_back(a);
  gpu_free_ns_ = a.end_ns;
  return corr;
}

void SyntheticTimeline::graph_launch(const std::vector<std::pair<std::string, double>>& kernels,
                                     double host_us) {
  uint32_t corr = next_correlation_++;
  uint32_t graph = next_graph_++;
  uint64_t call_end = host_ns_ + ns(host_us);
  trace_.api_calls.push_back({"cudaGraphLaunch", host_ns_, call_end, corr, pid_, tid_});
  host_ns_ = call_end + 200;
  uint64_t start = std::max(gpu_free_ns_, call_end + 1000);
  for (const auto& [name, us] : kernels) {
    GpuActivity a{GpuActivity::Kind::kernel, name, start, start + ns(us), corr, 7, 0};
    a.graph_id = graph;
    trace_.activities.push_back(a);
    start = a.end_ns;
  }
  gpu_free_ns_ = start;
}

void SyntheticTimeline::orphan_kernel(const std::string& kernel, double gpu_us) {
  uint64_t start = std::max(gpu_free_ns_, host_ns_);
  trace_.activities.push_back(
      {GpuActivity::Kind::kernel, kernel, start, start + ns(gpu_us), 0, 7, 0});
  gpu_free_ns_ = start + ns(gpu_us);
}

std::string SyntheticTimeline::instance_name(const std::string& path, const std::string& cls) {
  auto it = instance_of_path_.find(path);
  if (it != instance_of_path_.end()) return it->second;
  return instance_of_path_[path] = fmt::format("{}_{}", cls, next_instance_[cls]++);
}

std::string SyntheticTimeline::chrome_trace_json() const {
  auto ts = [](uint64_t t) {
    uint64_t rel = t - kBaseNs;
    return fmt::format("{}.{:03d}", rel / 1000, static_cast<int>(rel % 1000));
  };
  auto dur = [](uint64_t a, uint64_t b) {
    uint64_t d = b - a;
    return fmt::format("{}.{:03d}", d / 1000, static_cast<int>(d % 1000));
  };
  // Written as text: the digits of ts are what the reader must keep exact.
  std::string out = fmt::format(
      "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": 0, \"name\": \"{}\", "
      "\"computeMajor\": 9, \"numSms\": 132}}],\n"
      "  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [\n",
      trace_.gpu, kBaseNs);
  bool first = true;
  auto emit = [&](const std::string& e) {
    out += first ? "  " : ",\n  ";
    out += e;
    first = false;
  };
  emit(
      fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": "
                  "\"python\"}}}}",
                  pid_));
  int python_id = 0;
  for (const auto& r : trace_.ranges) {
    bool module = r.domain == "nn.Module";
    std::string cat = module ? "python_function" : "user_annotation";
    std::string name = module ? "nn.Module: " + r.name : r.name;
    std::string args =
        module ? fmt::format(", \"args\": {{\"Python id\": {}, \"Python thread\": 0}}", ++python_id)
               : "";
    emit(fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
        "\"dur\": {}{}}}",
        cat, json(name).dump(), r.pid, r.tid, ts(r.start_ns), dur(r.start_ns, r.end_ns), args));
  }
  for (const auto& c : trace_.api_calls)
    emit(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
                    "\"tid\": {}, \"ts\": {}, \"dur\": {}, "
                    "\"args\": {{\"External id\": {}, \"cbid\": 211, \"correlation\": {}}}}}",
                    c.name, c.pid, c.tid, ts(c.start_ns), dur(c.start_ns, c.end_ns),
                    c.correlation_id, c.correlation_id));
  for (const auto& a : trace_.activities) {
    const char* cat = a.kind == GpuActivity::Kind::kernel   ? "kernel"
                      : a.kind == GpuActivity::Kind::memcpy ? "gpu_memcpy"
                                                            : "gpu_memset";
    emit(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": 0, \"tid\": {}, "
                    "\"ts\": {}, \"dur\": {}, \"args\": "
                    "{{\"External id\": {}, \"device\": 0, \"context\": 1, \"stream\": {}, "
                    "\"correlation\": {}, \"bytes\": {}, "
                    "\"grid\": [132, 1, 1], \"block\": [128, 1, 1]}}}}",
                    cat, json(a.name).dump(), a.stream, ts(a.start_ns), dur(a.start_ns, a.end_ns),
                    a.correlation_id, a.stream, a.correlation_id, a.bytes));
    if (a.correlation_id)
      emit(
          fmt::format("{{\"ph\": \"f\", \"id\": {}, \"pid\": 0, \"tid\": {}, \"ts\": {}, \"cat\": "
                      "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                      a.correlation_id, a.stream, ts(a.start_ns)));
  }
  out += "\n  ],\n  \"traceName\": \"synthetic\"\n}\n";
  return out;
}

namespace {

constexpr const char* kGemm =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";
constexpr const char* kLayerNorm =
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
    "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*)";
constexpr const char* kElementwise =
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)";
constexpr const char* kGather =
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
    "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<long, "
    "unsigned int>, int, int, unsigned int, unsigned int, long)";
constexpr const char* kFlash =
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
    "true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)";

}  // namespace

void gpt2_forward(SyntheticTimeline& t, int layers, bool vanilla) {
  auto open = [&](const std::string& path, const std::string& cls) {
    if (vanilla)
      t.enter(t.instance_name(path, cls));
    else
      t.enter(path.empty() ? cls : path, "");
  };
  auto close = [&] { t.exit(); };
  auto linear = [&](const std::string& path, double us) {
    open(path, "Conv1D");
    t.launch(kGemm, us);
    close();
  };
  open("", "GPT2LMHeadModel");
  open("transformer", "GPT2Model");
  open("transformer.wte", "Embedding");
  t.launch(kGather, 3.0);
  close();
  open("transformer.wpe", "Embedding");
  t.launch(kGather, 2.0);
  close();
  t.launch(kElementwise, 2.5);  // wte + wpe, in GPT2Model.forward
  open("transformer.drop", "Dropout");
  close();
  for (int i = 0; i < layers; ++i) {
    std::string p = fmt::format("transformer.h.{}", i);
    open(p, "GPT2Block");
    open(p + ".ln_1", "LayerNorm");
    t.launch(kLayerNorm, 4.0);
    close();
    open(p + ".attn", "GPT2Attention");
    linear(p + ".attn.c_attn", 20.0);
    t.launch(kFlash, 30.0);  // sdpa, in GPT2Attention.forward
    linear(p + ".attn.c_proj", 8.0);
    open(p + ".attn.resid_dropout", "Dropout");
    close();
    close();
    t.launch(kElementwise, 2.5);  // residual add, in GPT2Block.forward
    open(p + ".ln_2", "LayerNorm");
    t.launch(kLayerNorm, 4.0);
    close();
    open(p + ".mlp", "GPT2MLP");
    linear(p + ".mlp.c_fc", 30.0);
    open(p + ".mlp.act", "NewGELUActivation");
    for (int k = 0; k < 8; ++k)
      t.launch(kElementwise, 3.0);  // 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))
    close();
    linear(p + ".mlp.c_proj", 30.0);
    open(p + ".mlp.dropout", "Dropout");
    close();
    close();
    t.launch(kElementwise, 2.5);  // residual add
    close();
  }
  open("transformer.ln_f", "LayerNorm");
  t.launch(kLayerNorm, 4.0);
  close();
  close();
  open("lm_head", "Linear");
  t.launch(kGemm, 120.0);
  close();
  close();
}

}  // namespace rooflens::bench
