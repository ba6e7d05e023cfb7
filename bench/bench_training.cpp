// --phase train against the real PyTorch steps of tests/data/reference/training/h100-train.json
// (scripts/gpu/training_references.py on an H100), with the H100's calibrated profile: per case the
// predicted and measured peak memory, matrix FLOPs and step time (kernels, and the GPU's wait on
// the host), and how long the analysis took; then the held-out steps (h100-train-held-out.json,
// measured after the step-time model was built), and the ONNX ResNet-50 steps. The issue's
// targets: peak within 5%, matrix FLOPs within 2%, step time within 15% (test_training holds them
// on the first and the ONNX set). Asserts nothing.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/training/training.hpp"

using namespace rooflens;

int run(const std::string& root, const std::string& file,
        const std::shared_ptr<const Device>& device) {
  std::ifstream in(root + "/tests/data/reference/training/" + file);
  nlohmann::json refs = nlohmann::json::parse(in);
  std::printf("\n%s\n%-34s %21s %9s %24s %11s %9s\n", file.c_str(), "case", "peak GB (pred/meas)",
              "matrix", "step ms (pred/meas)", "GPU waits", "analysis");
  int within = 0, cases = 0;
  for (const auto& c : refs.at("cases")) {
    TransformerOptions o;
    o.lowering.batch = c.at("batch");
    o.lowering.seq = c.at("seq");
    o.calibrated = device;
    TrainingOptions t;
    t.precision = parse_train_precision(c.at("precision"));
    t.optimizer = parse_optimizer(c.at("optimizer"));
    t.recompute = c.at("gradient_checkpointing").get<bool>() ? Recompute::full : Recompute::none;
    TransformerConfig config =
        load_transformer_config(root + "/tests/data/reference/training/configs/" +
                                c.at("model").get<std::string>() + ".json");
    auto t0 = std::chrono::steady_clock::now();
    Analysis a = analyze_training(config, o, t);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const TrainingSummary& s = *a.training;
    double peak = c.at("peak_bytes").get<double>(), step = c.at("step_time_s").get<double>();
    double gemm = c.at("gemm_dense_flops").get<double>();
    double step_err = (s.step_time_s - step) / step;
    within += std::fabs(step_err) <= 0.15;
    ++cases;
    std::printf("%-34s %6.2f/%6.2f %+6.1f%% %+8.2f%% %7.1f/%7.1f %+6.1f%% %8.1f ms %6.0f ms\n",
                c.at("case").get<std::string>().c_str(), s.peak_memory_bytes / 1e9, peak / 1e9,
                100 * (s.peak_memory_bytes - peak) / peak, 100 * (s.gemm_dense_flops - gemm) / gemm,
                1e3 * s.step_time_s, 1e3 * step, 100 * step_err, 1e3 * s.gpu_wait_s, ms);
  }
  std::printf("step time within 15%%: %d of %d cases\n", within, cases);
  return within;
}

// The ONNX ResNet-50 steps (scripts/gpu/training_references_onnx.py).
void run_onnx(const std::string& root, const std::shared_ptr<const Device>& device) {
  std::ifstream in(root + "/tests/data/reference/training/h100-train-onnx.json");
  nlohmann::json refs = nlohmann::json::parse(in);
  std::printf("\nh100-train-onnx.json\n%-34s %21s %9s %24s %11s\n", "case", "peak GB (pred/meas)",
              "matrix", "step ms (pred/meas)", "GPU waits");
  AnalysisOptions options;
  options.calibrated = device;
  for (const auto& c : refs.at("cases")) {
    LoadOptions load;
    load.batch = c.at("batch").get<int64_t>();
    TrainingOptions t;
    t.precision = parse_train_precision(c.at("precision"));
    t.optimizer = parse_optimizer(c.at("optimizer"));
    Analysis a = analyze_training_onnx(
        root + "/tests/data/onnx/" + c.at("onnx").get<std::string>() + ".onnx", load, options, t);
    const TrainingSummary& s = *a.training;
    double peak = c.at("peak_bytes").get<double>(), step = c.at("step_time_s").get<double>();
    double gemm = c.at("gemm_dense_flops").get<double>();
    std::printf("%-34s %6.2f/%6.2f %+6.1f%% %+8.2f%% %7.1f/%7.1f %+6.1f%% %8.1f ms\n",
                c.at("case").get<std::string>().c_str(), s.peak_memory_bytes / 1e9, peak / 1e9,
                100 * (s.peak_memory_bytes - peak) / peak, 100 * (s.gemm_dense_flops - gemm) / gemm,
                1e3 * s.step_time_s, 1e3 * step, 100 * (s.step_time_s - step) / step,
                1e3 * s.gpu_wait_s);
  }
}

int main() {
  std::string root = ROOFLENS_SOURCE_DIR;
  auto device = std::make_shared<const Device>(
      calibrated_device(read_device_profile(root + "/data/profiles/h100-sxm.json")));
  run(root, "h100-train.json", device);
  run(root, "h100-train-held-out.json", device);
  run_onnx(root, device);
  return 0;
}
