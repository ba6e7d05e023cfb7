// The trust checks `compare` runs before comparing (profiler/timeline/trust_checks): a trace of
// another model, phase or device is one line and exit 2 unless --force; the precision the kernels
// ran in is stated. The real traces are tests/data/traces/h100 (recorded on the H100 machine by
// scripts/gpu/record_timelines.sh; 2 steps each); every count below is the trace's own, counted
// from its JSON with the one-liner given beside it, and the model's from its config.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "cli_run.hpp"
#include "config_model.hpp"
#include "profiler/timeline/kernel_names.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/timeline/trust_checks.hpp"
#include "profiler/trace/trace_io.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::profiler;
namespace fs = std::filesystem;

namespace {

const std::string kDir = ROOFLENS_SOURCE_DIR "/tests/data/traces/h100/";
// llama.config.json: a Llama-2-7B-shaped model of num_hidden_layers 4, bf16; gpt2.config.json:
// n_layer 12. Each step of a trace is one forward.
const std::string kLlama = kDir + "llama.config.json";

fs::path scratch() {
  static const fs::path dir = test::scratch_dir("trust_checks");
  return dir;
}

test::CliRun rooflens_cli(const std::string& args) {
  return test::run_cli(std::string(ROOFLENS_BIN) + " " + args, scratch());
}

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("kernel classes from real H100 kernel names", "[compare][trust]") {
  CHECK(kernel_class("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_"
                     "64x128x128_4x1x1_cga1x1x1_kernel0_0") == KernelClass::attention);
  CHECK(kernel_class(
            "void cudnn::fusion::lean_reduction_kernel<false, false, false>(void*, float*)") ==
        KernelClass::reduce);
  CHECK(kernel_class("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_"
                     "tilesize64x64x64_warpgroupsize1x1x1_g1_execute_"
                     "segment_k_off_kernel__5x_cudnn") == KernelClass::convolution);
  CHECK(kernel_class("void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 128, 5, 5, 3, 3, "
                     "3, 1, false, false, true>(int)") == KernelClass::convolution);
  CHECK(kernel_class("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT") == KernelClass::gemm);
  CHECK(kernel_class(
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
            "float, false>(int)") == KernelClass::norm);
  CHECK(kernel_class("void at::native::vectorized_elementwise_kernel<8, "
                     "at::native::CUDAFunctor_add<c10::BFloat16> >(int)") ==
        KernelClass::elementwise);
}

TEST_CASE("trust checks: the right model for each real trace still compares, exit 0",
          "[compare][trust]") {
  // The same flags as docs/compare.md's table: Llama at 2,048 tokens, GPT-2 at 512.
  for (const std::string& args :
       {kLlama + " " + kDir + "llama-decode.vanilla.h100.json.gz --phase decode --context 2048",
        kLlama + " " + kDir + "llama-prefill.record.h100.json.gz --phase prefill --seq 2048",
        kDir + "gpt2.config.json " + kDir +
            "gpt2-decode.annotated.h100.json.gz --phase decode --context 512 --device H100-SXM",
        kDir + "gpt2.config.json " + kDir +
            "gpt2-prefill.vanilla.h100.json.gz --phase prefill --seq 512",
        std::string(ROOFLENS_SOURCE_DIR) + "/tests/data/onnx/resnet50-opset18.onnx " + kDir +
            "resnet50-forward.vanilla.h100.json.gz --dtype bf16"}) {
    test::CliRun r = rooflens_cli("compare " + args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("FORCED") == std::string::npos);
    CHECK(r.out.find("precision:") == std::string::npos);  // bf16 predicted, bf16 ran
  }
}

TEST_CASE("trust checks: a trace of another model or phase is one line and exit 2",
          "[compare][trust]") {
  SECTION("Llama config, ResNet-50 trace") {
    // 20 convolution kernels per step: zcat resnet50-forward.vanilla.h100.json.gz | python3 -c
    // "import json,sys; e=json.load(sys.stdin)['traceEvents']; print(sum(1 for x in e if
    // x.get('cat')=='kernel' and any(s in x['name'].lower() for s in ('fprop','convolve')))/2)"
    // -> 20.0 (cuDNN ran ResNet-50's other convolutions as GEMM-named kernels); no attention
    // kernel. The config: 4 layers, one attention each, no convolution.
    test::CliRun r =
        rooflens_cli("compare " + kLlama + " " + kDir +
                     "resnet50-forward.vanilla.h100.json.gz --phase decode --context 2048");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(
        r.err,
        Catch::Contains(
            "the trace has 20 convolution kernels and no attention per step; the model predicts no "
            "convolution and 4 attention layers"));
    CHECK_THAT(r.err, Catch::Contains("--force"));
  }
  SECTION("Llama config, GPT-2 trace") {
    // 12 attention kernels per step: zcat gpt2-decode.vanilla.h100.json.gz | python3 -c "import
    // json,sys; e=json.load(sys.stdin)['traceEvents']; print(sum(1 for x in e if
    // x.get('cat')=='kernel' and 'sdpa' in x['name'])/2)"
    // -> 12.0 (n_layer 12); Llama's config has 4 layers.
    test::CliRun r = rooflens_cli("compare " + kLlama + " " + kDir +
                                  "gpt2-decode.vanilla.h100.json.gz --phase decode --context 2048");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(
        r.err,
        Catch::Contains(
            "the trace has no convolution and 12 attention kernels per step; the model predicts no "
            "convolution and 4 attention layers"));
  }
  SECTION("Llama decode prediction, Llama prefill trace") {
    // Same model, same 4 attention kernels per step: the work tells them apart. The prefill
    // trace's GEMM, convolution and attention kernels per step: zcat
    // llama-prefill.vanilla.h100.json.gz | python3 -c "import json,sys;
    // e=json.load(sys.stdin)['traceEvents']; print(sum(x['dur'] for x in e if
    // x.get('cat')=='kernel' and any(s in x['name'].lower() for s in
    // ('nvjet','gemm','splitkreduce','sdpa')))/2)" -> 5,256.6 us; a decode step's weights alone, 4
    // x (4 x 4096^2 + 3 x 4096 x 11008) + 32000 x 4096 = 940.6M bf16 parameters, read at the
    // H100's 3.35 TB/s take 562 us: over 9x, past the check's 6x (the prediction adds the KV cache
    // reads and launch floors, so the figure printed is a little lower), where the same trace
    // against its prefill prediction passes.
    test::CliRun r =
        rooflens_cli("compare " + kLlama + " " + kDir +
                     "llama-prefill.vanilla.h100.json.gz --phase decode --context 2048");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(
                          "matrix kernels (GEMM, convolution, attention) take 5.26 ms per step") &&
                          Catch::Contains("far more work"));
  }
  SECTION("Llama prefill prediction, Llama decode trace") {
    // The other way round: the decode trace's matrix kernels, by the one-liner above on
    // llama-decode.vanilla.h100.json.gz, -> 842.2 us per step, where a 2,048-token prefill
    // computes 2 x 940.6M x 2048 = 3.85 TFLOP, 3.9 ms at the H100's 989 TFLOP/s (bf16 dense):
    // under a fifth, below the check's one third.
    test::CliRun r = rooflens_cli("compare " + kLlama + " " + kDir +
                                  "llama-decode.vanilla.h100.json.gz --phase prefill --seq 2048");
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err,
               Catch::Contains("take 842.2 us per step") && Catch::Contains("far less work"));
  }
}

TEST_CASE("trust checks: --force compares a refused pair and the report says forced",
          "[compare][trust]") {
  fs::path json = scratch() / "forced.json", html = scratch() / "forced.html";
  test::CliRun r =
      rooflens_cli("compare " + kLlama + " " + kDir +
                   "llama-prefill.vanilla.h100.json.gz --phase decode --context 2048 --force");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("FORCED (--force)") && Catch::Contains("far more work"));
  r = rooflens_cli(
      "compare " + kLlama + " " + kDir +
      "llama-prefill.vanilla.h100.json.gz --phase decode --context 2048 --force --json " +
      json.string() + " --html " + html.string());
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  REQUIRE(j.at("compare").at("forced").is_string());
  CHECK_THAT(j["compare"]["forced"].get<std::string>(), Catch::Contains("far more work"));
  CHECK(j["compare"]["precision_mismatch"].is_null());
  // The page carries the result and draws the headline from it (reports/html/compare.js).
  std::stringstream page;
  page << std::ifstream(html).rdbuf();
  CHECK_THAT(page.str(),
             Catch::Contains("\"forced\":\"matrix kernels") && Catch::Contains("FORCED (--force)"));
}

TEST_CASE("trust checks: --device that is not the trace's GPU is refused", "[compare][trust]") {
  // The trace's deviceProperties name "NVIDIA H100 80GB HBM3" (the H100-SXM).
  test::CliRun r = rooflens_cli("compare " + kLlama + " " + kDir +
                                "llama-decode.vanilla.h100.json.gz --phase decode --context 2048 "
                                "--device A100-SXM-80GB");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err,
             Catch::Contains(
                 "the trace ran on NVIDIA H100 80GB HBM3 (H100-SXM); --device says A100-SXM-80GB"));
}

TEST_CASE("precision: bf16 kernels against an fp16 prediction, stated in the report and the JSON",
          "[compare][trust]") {
  // The Llama decode trace ran in bf16: 90 kernels per step name bf16/bfloat16 and none fp16
  // (cuDNN's fused attention names "..._wmma_f16_..." for either 16-bit type: not counted): zcat
  // llama-decode.vanilla.h100.json.gz | python3 -c "import json,sys;
  // e=json.load(sys.stdin)['traceEvents']; k=[x['name'].lower() for x in e if
  // x.get('cat')=='kernel']; print(sum('bf16' in n or 'bfloat16' in n for n in k)/2, sum(any(s in
  // n.replace('bf16','').replace('bfloat16','') for s in ('f16','half','h1688','h16816','hgemm'))
  // for n in k if not ('cudnn' in n and 'sdpa' in n))/2)" -> 90.0 0.0
  fs::path json = scratch() / "precision.json";
  test::CliRun r = rooflens_cli("compare " + kLlama + " " + kDir +
                                "llama-decode.vanilla.h100.json.gz --phase decode --context 2048 "
                                "--weights fp16 --activations fp16 --json " +
                                json.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::string line =
      "the kernels ran in bf16 (90 name bf16, 0 fp16 per step) where the prediction is fp16: pass "
      "--weights bf16 --activations bf16";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  CHECK(j.at("compare").at("precision_mismatch") == line);
  CHECK(j["compare"]["forced"].is_null());
  r = rooflens_cli("report " + json.string());
  CHECK_THAT(r.out, Catch::Contains("precision: the kernels ran in bf16"));
}

TEST_CASE("precision: TF32 kernels against a strict fp32 prediction (hand-made trace)",
          "[compare][trust]") {
  // No trace of tests/data has a TF32 kernel (all ran in bf16), so two are made here, named as
  // cuBLAS names its TF32 GEMMs on the H100; ResNet-50's ONNX file is fp32, and under --math
  // strict so is its prediction.
  AnalysisOptions strict;
  strict.math = MathMode::strict;
  Analysis fp32 =
      analyze_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/resnet50-opset18.onnx", {}, strict);
  Trace t;
  t.activities.push_back({GpuActivity::Kind::kernel,
                          "sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4", 0,
                          10000});
  t.activities.push_back({GpuActivity::Kind::kernel,
                          "cutlass_80_tensorop_tf32_s1688gemm_tf32_128x128_16x4_nn_align4", 20000,
                          25000});
  t.activities.push_back({GpuActivity::Kind::kernel,
                          "void at::native::vectorized_elementwise_kernel<4, float>(int)", 30000,
                          32000});
  KernelCensus k = kernel_census(t, {}, 0);
  CHECK(k.tf32 == 2);
  CHECK(precision_mismatch(fp32, k) ==
        "2 kernels per step (15.0 us) run in TF32 where the prediction is strict fp32: pass "
        "--math tf32-conv or tf32 to predict what ran");
  // The default math (PyTorch's) predicts the convolutions on TF32, as they ran: nothing to say.
  CHECK(precision_mismatch(
            analyze_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/resnet50-opset18.onnx", {}, {}), k)
            .empty());
  AnalysisOptions bf16;
  bf16.precision = Precision::bf16;
  CHECK(precision_mismatch(
            analyze_onnx(ROOFLENS_SOURCE_DIR "/tests/data/onnx/resnet50-opset18.onnx", {}, bf16), k)
            .empty());
}

TEST_CASE("trust checks: attention queries' Input Dims (record_shapes) against the phase",
          "[compare][trust]") {
  // A hand-made PyTorch trace: what record_shapes=True writes for HF Llama's SDPA call in a
  // 2,048-token prefill: query [batch 1, 32 heads, 2048 tokens, head dim 128].
  std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::scaled_dot_product_attention", "ts": 10, "dur": 5,
     "args": {"Input Dims": [[1, 32, 2048, 128], [1, 32, 2048, 128], [1, 32, 2048, 128], [], []]}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "ts": 12, "dur": 3,
     "args": {"correlation": 1}}]})";
  Trace t = parse_timeline_text(text, "shapes.json");
  REQUIRE(t.op_shapes.size() == 1);
  CHECK(t.op_shapes[0].inputs[0] == std::vector<int64_t>{1, 32, 2048, 128});
  KernelCensus k = kernel_census(t, {}, 0);
  // A decode step at 2,048 context has one query token per sequence; the config 32 heads.
  test::Model decode = test::config_model(kLlama, Workload::decode, 2048);
  TrustFindings f = check_trust(decode.analysis, t, k, {});
  REQUIRE_FALSE(f.mismatches.empty());
  CHECK(f.mismatches[0] ==
        "the trace's attention queries hold 2048 tokens (Input Dims of "
        "aten::scaled_dot_product_attention); the "
        "decode prediction's hold 1");
  test::Model prefill = test::config_model(kLlama, Workload::prefill, 2048);
  for (const auto& m : check_trust(prefill.analysis, t, k, {}).mismatches)
    CHECK(m.find("Input Dims") == std::string::npos);
}

TEST_CASE("trust checks: bad timelines from the issue are one line and exit 2",
          "[compare][trust]") {
  std::string config = kDir + "gpt2.config.json";
  auto write = [](const std::string& name, const std::string& text) {
    fs::path p = scratch() / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  };
  // A Chrome trace from a profiler that is not PyTorch's: events of its own categories, no GPU
  // activity.
  std::string unknown = write(
      "unknown_profiler.json",
      R"({"traceEvents": [{"ph": "X", "cat": "gpu_op", "name": "Fusion", "ts": 1, "dur": 2}]})");
  // A torch.cuda.CUDAGraph captured under the profiler and never replayed: the capture's runtime
  // calls, no kernel ran.
  std::string captured = write("captured_only.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "ts": 1, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 4, "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamEndCapture", "ts": 7, "dur": 2, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphInstantiateWithFlags", "ts": 10, "dur": 2, "args": {"correlation": 4}}]})");
  std::string no_gpu = write(
      "no_gpu.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})");
  std::string truncated =
      write("truncated.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "nvjet)");
  for (const auto& [path, says] :
       std::vector<std::pair<std::string, std::string>>{{unknown, "no GPU activity"},
                                                        {captured, "captured but never replayed"},
                                                        {no_gpu, "no GPU activity"},
                                                        {truncated, "not a readable trace"}}) {
    test::CliRun r =
        rooflens_cli("compare " + config + " " + path + " --phase decode --context 512");
    INFO(path << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
}
