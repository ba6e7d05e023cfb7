// --phase train against real PyTorch training steps (an H100: scripts/gpu/training_references.py,
// tests/data/reference/training/h100-train.json) and what autograd saved on a CPU
// (scripts/gpu/training_saved_tensors.py); the training formulas by hand; bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/training/training.hpp"
#include "cli_run.hpp"
#include "json_schema_check.hpp"
#include "model_builder.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
using nlohmann::json;

namespace {

json read_json(const std::string& relative) {
  std::ifstream in(data_path(relative));
  REQUIRE(in.good());
  return json::parse(in);
}

TransformerConfig training_config(const std::string& model) {
  return load_transformer_config(
      data_path("tests/data/reference/training/configs/" + model + ".json"));
}

Analysis train(const std::string& model, int64_t batch, int64_t seq, const std::string& precision,
               bool checkpointing, const std::string& optimizer) {
  TransformerOptions o;
  o.lowering.batch = batch;
  o.lowering.seq = seq;
  o.calibrated = std::make_shared<const Device>(
      calibrated_device(read_device_profile(data_path("data/profiles/h100-sxm.json"))));
  TrainingOptions t;
  t.precision = parse_train_precision(precision);
  t.optimizer = parse_optimizer(optimizer);
  t.recompute = checkpointing ? Recompute::full : Recompute::none;
  return analyze_training(training_config(model), o, t);
}

double relative(double predicted, double measured) {
  return std::fabs(predicted - measured) / measured;
}

// The memory and FLOP targets on one reference step; returns the analysis.
Analysis check_memory_and_flops(const json& c) {
  Analysis a = train(c.at("model"), c.at("batch"), c.at("seq"), c.at("precision"),
                     c.at("gradient_checkpointing"), c.at("optimizer"));
  const TrainingSummary& t = *a.training;
  INFO(c.at("case").get<std::string>()
       << ": peak " << t.peak_memory_bytes << " vs " << c.at("peak_bytes").get<int64_t>()
       << ", matrix FLOPs " << t.gemm_dense_flops << " vs "
       << c.at("gemm_dense_flops").get<int64_t>());
  CHECK(t.params == c.at("params").get<int64_t>());
  CHECK(relative(static_cast<double>(t.peak_memory_bytes), c.at("peak_bytes").get<double>()) <
        0.05);
  CHECK(relative(static_cast<double>(t.gemm_dense_flops), c.at("gemm_dense_flops").get<double>()) <
        0.02);
  return a;
}

}  // namespace

TEST_CASE(
    "training: peak memory within 5% and matrix FLOPs within 2% of real PyTorch steps on an H100",
    "[training]") {
  json refs = read_json("tests/data/reference/training/h100-train.json");
  REQUIRE(refs.at("cases").size() == 13);
  for (const json& c : refs.at("cases")) {
    Analysis a = check_memory_and_flops(c);
    const TrainingSummary& t = *a.training;
    INFO(c.at("case").get<std::string>());
    // At rest between steps PyTorch holds the weights, the optimizer's states (gradients are freed
    // by zero_grad(set_to_none=True)) and cuBLAS's workspaces.
    double at_rest = static_cast<double>(t.timeline.front().total());
    CHECK(relative(at_rest, c.at("at_rest_bytes").get<double>()) < 0.05);
  }
}

TEST_CASE("training: held-out steps (other batches and lengths) meet the memory and FLOP targets",
          "[training]") {
  // Measured after the step-time model was built; their step times are printed by
  // bench/rooflens_bench_training (5 of 6 within 15%).
  json refs = read_json("tests/data/reference/training/h100-train-held-out.json");
  REQUIRE(refs.at("cases").size() == 6);
  for (const json& c : refs.at("cases")) check_memory_and_flops(c);
}

TEST_CASE("training: saved activations per layer as autograd saved them (CPU, outside attention)",
          "[training]") {
  json refs = read_json("tests/data/reference/training/cpu-saved-tensors.json");
  int checked = 0;
  for (const json& c : refs.at("cases")) {
    std::string precision = c.at("precision");
    std::string model = c.at("model");
    // GPT-2's dropout runs as a float multiply on the CPU (a 1-byte mask on CUDA), and autocast's
    // weight copies are not per layer in the summary: the plain fp32 and bf16 Llama and Mixtral.
    if (model == "gpt2" || precision == "bf16-mixed") continue;
    Analysis a = train(model, c.at("batch"), c.at("seq"), precision, false, "adamw");
    // Attention's tensors are left out on both sides; the CPU's kernel saved its output, which
    // o_proj saves on the GPU's math path (fp32 with grouped-query attention).
    int64_t ours = 0;
    for (const TrainingRow& r : a.training->rows) {
      const std::string& name = a.nodes[static_cast<size_t>(r.node)].name;
      if (r.layer == 1 && a.nodes[static_cast<size_t>(r.node)].op != "Attention" &&
          name.find(".o_proj") == std::string::npos)
        ours += r.saved_bytes;
    }
    int64_t theirs = c.at("saved_bytes_by_layer").at("1").get<int64_t>();
    INFO(model << " " << precision << ": " << ours << " vs " << theirs);
    CHECK(relative(static_cast<double>(ours), static_cast<double>(theirs)) < 0.01);
    ++checked;
  }
  CHECK(checked == 4);
}

TEST_CASE("training: optimizer, ZeRO and Korthikanti formulas by hand", "[training]") {
  // foreach AdamW on fp32: 6 passes over params and grads, 14 over states (docs/training.md).
  OptimizerWork adam = optimizer_work(OptimizerKind::adamw, 1000, 10, 100, 4, 4);
  CHECK(adam.bytes == 1000 * (6 * 4 + 14 * 4));
  CHECK(adam.state_bytes == 8000);
  CHECK(adam.temporary_bytes == 4000);
  CHECK(optimizer_work(OptimizerKind::sgd, 1000, 10, 100, 2, 2).state_bytes == 0);
  // Adafactor: a 10 x 100 matrix keeps 10 + 100 second-moment values.
  CHECK(optimizer_work(OptimizerKind::adafactor, 1000, 10, 100, 4, 4).state_bytes == 110 * 4);
  // ZeRO's 2/2/K: 7.5B params with Adam in mixed precision on 64 GPUs (Rajbhandari et al. 2020,
  // Figure 1: 120 GB; stage 1 31.4 GB; stage 2 16.6 GB; stage 3 1.9 GB).
  ModelState whole{15'000'000'000, 15'000'000'000, 90'000'000'000};
  CHECK(zero_partition(whole, 1, 64).total() == 30'000'000'000 + 1'406'250'000);
  CHECK(zero_partition(whole, 2, 64).total() == 15'000'000'000 + 234'375'000 + 1'406'250'000);
  CHECK(zero_partition(whole, 3, 64).total() == 1'875'000'000);
  // Korthikanti et al. 2022, Table 2: s*b*h*(34 + 5*a*s/h) without parallelism.
  CHECK(korthikanti_layer_bytes(2048, 1, 4096, 32, 1, false, false) ==
        34LL * 2048 * 4096 + 5LL * 32 * 2048 * 2048);
  CHECK(korthikanti_layer_bytes(2048, 1, 4096, 32, 8, true, true) == 34LL * 2048 * 4096 / 8);
}

TEST_CASE("training: grad accumulation, ZeRO and recomputation move memory and time the right way",
          "[training]") {
  TransformerConfig c = training_config("llama-4l");
  TransformerOptions o;
  o.lowering.batch = 4;
  o.lowering.seq = 1024;
  TrainingOptions base;
  Analysis one = analyze_training(c, o, base);
  TrainingOptions accum = base;
  accum.grad_accum = 4;
  Analysis four = analyze_training(c, o, accum);
  // Four micro-batches: four forwards and backwards, one optimizer step; the gradients live
  // across micro-batches.
  CHECK(four.training->gemm_dense_flops == 4 * one.training->gemm_dense_flops);
  CHECK(four.training->step_time_s - four.training->optimizer_s ==
        Approx(4 * (one.training->step_time_s - one.training->optimizer_s)).epsilon(1e-9));
  CHECK(four.training->peak_memory_bytes >= one.training->peak_memory_bytes);
  TrainingOptions zero = base;
  zero.zero = 3;
  zero.dp = 8;
  Analysis sharded = analyze_training(c, o, zero);
  CHECK(sharded.training->model_state.optimizer == (one.training->model_state.optimizer + 7) / 8);
  CHECK(sharded.training->model_state.weights == (one.training->model_state.weights + 7) / 8);
  CHECK(sharded.training->peak_memory_bytes < one.training->peak_memory_bytes);
  TrainingOptions full = base;
  full.recompute = Recompute::full;
  Analysis ckpt = analyze_training(c, o, full);
  CHECK(ckpt.training->peak_memory_bytes < one.training->peak_memory_bytes);
  CHECK(ckpt.training->recompute_s > 0);
  // Tensor parallelism shards the weights (embeddings and norms aside); sequence parallelism also
  // the [.., hidden] activations every rank would hold whole.
  TransformerOptions tp = o;
  tp.lowering.tp = 2;
  Analysis sharded_tp = analyze_training(c, tp, base);
  CHECK(sharded_tp.training->params < one.training->params * 6 / 10);
  TrainingOptions sp = base;
  sp.sp = true;
  Analysis with_sp = analyze_training(c, tp, sp);
  CHECK(with_sp.training->saved_activation_bytes < sharded_tp.training->saved_activation_bytes);
  // The largest batch that fits is the one whose peak reaches the device's memory.
  int64_t most = one.training->max_batch;
  REQUIRE(most > 4);
  o.lowering.batch = most;
  CHECK(analyze_training(c, o, base).training->fits);
  o.lowering.batch = most + 4;
  CHECK_FALSE(analyze_training(c, o, base).training->fits);
}

TEST_CASE("training: the CLI's JSON, a step that does not fit, and bad input", "[training][cli]") {
  std::filesystem::path dir = scratch_dir("training");
  std::string bin = ROOFLENS_BIN;
  std::string gpt2 = data_path("tests/data/reference/training/configs/gpt2.json");
  auto run = [&](const std::string& args) {
    return run_cli(bin + " analyze " + gpt2 + " --phase train " + args, dir);
  };
  std::string out = (dir / "t.json").string();
  // The spec sheet's roofs (--device-profile spec): no eager host costs.
  CliRun ok =
      run("--batch 8 --seq 1024 --precision bf16-mixed --device-profile spec --json " + out);
  REQUIRE(ok.code == 0);
  std::ifstream written(out);
  json j = json::parse(written);
  for (const char* key : {"peak_memory_bytes", "model_state_bytes", "activation_peak_bytes",
                          "flops", "gemm_dense_flops", "step_time_s"})
    CHECK(j.at("training").contains(key));
  CHECK(SchemaCheck(read_json("docs/result.schema.json")).check(j).empty());
  // No measured profile, no eager host costs: the host's time and the GPU's wait are not figures.
  CHECK_FALSE(j.at("training").at("host_modelled").get<bool>());
  CHECK(j.at("training").at("host_s").is_null());
  CHECK(j.at("training").at("gpu_wait_s").is_null());
  CHECK(ok.out.find("the kernels back to back (the host not modelled)") != std::string::npos);
  CHECK(ok.out.find("Training step (bf16-mixed, adamw, recompute none)") != std::string::npos);
  // The terminal report fits 100 columns.
  std::istringstream lines(ok.out);
  for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
  for (const std::string& line : {std::string("Memory through the step")})
    CHECK(ok.out.find(line) != std::string::npos);
  CliRun prefill = run_cli(bin + " analyze " + gpt2 + " --phase prefill --precision fp32", dir);
  CHECK(prefill.code == 2);
  CHECK(prefill.err.find("--precision applies to --phase train") != std::string::npos);
  CliRun big = run_cli(bin + " analyze " + data_path("samples/configs/llama-2-70b/config.json") +
                           " --phase train --batch 8 --seq 4096 --precision bf16-mixed",
                       dir);
  CHECK(big.code == 0);
  CHECK(big.out.find("does not fit: the step peaks at") != std::string::npos);
  for (const std::string& bad :
       {std::string("--optimizer lion"), std::string("--precision fp4"),
        std::string("--recompute some"), std::string("--tp 5"), std::string("--grad-accum 0"),
        std::string("--zero 4"), std::string("--sp")}) {
    CliRun r = run("--batch 2 --seq 128 " + bad);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("training: attention's backward and dropout time ratios are the medians PyTorch measured",
          "[training]") {
  // scripts/gpu/training_attention.py on the H100 machine: five causal shapes per dtype.
  json j = read_json("tests/data/reference/training/h100-attention.json");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (auto [dtype, ratios] : {std::pair{"bfloat16", kFusedAttention16Time},
                               std::pair{"float32", kEfficientAttention32Time}}) {
    INFO(dtype);
    auto shape_of = [](const json& r) {
      return r.at("batch").dump() + "x" + r.at("heads").dump() + "/" + r.at("kv_heads").dump() +
             "x" + r.at("seq").dump() + "x" + r.at("head_dim").dump();
    };
    std::vector<double> backward, dropout_fwd, dropout_bwd;
    std::map<std::string, json> plain;  // the rows without dropout, by shape
    for (const json& r : j.at("rows"))
      if (r.at("dtype") == dtype && r.at("dropout").get<double>() == 0) plain[shape_of(r)] = r;
    for (const json& r : j.at("rows")) {
      if (r.at("dtype") != dtype || r.at("dropout").get<double>() == 0) continue;
      const json& p = plain.at(shape_of(r));
      double pf = p.at("forward_s"), pb = p.at("forward_backward_s").get<double>() - pf;
      double df = r.at("forward_s"), db = r.at("forward_backward_s").get<double>() - df;
      backward.push_back(pb / pf);
      dropout_fwd.push_back(df / pf);
      dropout_bwd.push_back(db / pb);
    }
    REQUIRE(backward.size() == 5);
    CHECK(ratios.backward_over_forward == Approx(median(backward)).epsilon(0.01));
    CHECK(ratios.dropout_forward == Approx(median(dropout_fwd)).epsilon(0.01));
    CHECK(ratios.dropout_backward == Approx(median(dropout_bwd)).epsilon(0.02));
  }
}

TEST_CASE("training: step time within 15% of real PyTorch steps on an H100, the host modelled",
          "[training]") {
  json refs = read_json("tests/data/reference/training/h100-train.json");
  for (const json& c : refs.at("cases")) {
    Analysis a = train(c.at("model"), c.at("batch"), c.at("seq"), c.at("precision"),
                       c.at("gradient_checkpointing"), c.at("optimizer"));
    const TrainingSummary& t = *a.training;
    INFO(c.at("case").get<std::string>()
         << ": step " << t.step_time_s << " s (kernels " << t.gpu_busy_s << ", waiting "
         << t.gpu_wait_s << ") vs " << c.at("step_time_s").get<double>());
    CHECK(t.host_modelled);
    CHECK(relative(t.step_time_s, c.at("step_time_s").get<double>()) <= 0.15);
    // The GPU's time is the phases' kernels; the step adds only where it waits.
    CHECK(t.gpu_busy_s == Approx(t.forward_s + t.backward_s + t.recompute_s + t.loss_s +
                                 t.optimizer_s + t.communication_s)
                              .epsilon(1e-9));
    CHECK(t.gpu_wait_s >= 0);
  }
}

TEST_CASE("training: the launches the step's queue counts are PyTorch's (H100 profiler counts)",
          "[training]") {
  // scripts/gpu/training_kernel_breakdown.py: every kernel, memcpy and memset of one profiled step;
  // scripts/gpu/eager_host_per_kernel.py: the optimizer step's alone, at 16 tokens.
  json whole = read_json("tests/data/reference/training/h100-step-breakdown.json");
  json host = read_json("tests/data/reference/training/h100-eager-per-kernel.json");
  std::map<std::string, int64_t> optimizer_kernels;
  for (const json& c : host.at("cases"))
    optimizer_kernels[c.at("case")] = c.at("optimizer").at("kernels");
  json refs = read_json("tests/data/reference/training/h100-train.json");
  REQUIRE(whole.at("cases").size() == 13);
  for (const json& m : whole.at("cases")) {
    std::string name = m.at("case");
    const json* c = nullptr;
    for (const json& r : refs.at("cases"))
      if (r.at("case") == name) c = &r;
    REQUIRE(c);
    Analysis a = train(c->at("model"), c->at("batch"), c->at("seq"), c->at("precision"),
                       c->at("gradient_checkpointing"), c->at("optimizer"));
    const TrainingSummary& t = *a.training;
    INFO(name << ": " << t.kernels << " kernels vs " << m.at("kernels").get<int64_t>());
    // foreach's launches per list op follow multi_tensor_apply's limits exactly.
    for (const StepRow& s : t.steps)
      if (s.phase == "optimizer") CHECK(s.launches == optimizer_kernels.at(name));
    // The whole step: HF's small index and mask kernels are not all listed one by one.
    CHECK(relative(static_cast<double>(t.kernels), m.at("kernels").get<double>()) < 0.2);
  }
}

TEST_CASE("training: the GPU queues behind the host, by hand", "[training]") {
  TransformerOptions o;
  o.lowering.batch = 2;
  o.lowering.seq = 128;
  Device d = calibrated_device(read_device_profile(data_path("data/profiles/h100-sxm.json")));
  TrainingOptions t;
  t.precision = TrainPrecision::bf16;
  auto run = [&](const EagerHostCosts& e) {
    d.eager_host = e;
    o.calibrated = std::make_shared<const Device>(d);
    return *analyze_training(training_config("llama-4l"), o, t).training;
  };
  // A free host: the kernels back to back.
  TrainingSummary free_host = run(EagerHostCosts{});
  CHECK(free_host.gpu_wait_s == Approx(0).margin(1e-12));
  CHECK(free_host.step_time_s == Approx(free_host.gpu_busy_s).epsilon(1e-12));
  // A second per kernel in the forward and backward, nothing for the optimizer: every kernel
  // but the optimizer's is issued long after the one before it ended, so the step is the host's
  // time plus the optimizer's kernels, run back to back once the last backward kernel is done.
  EagerHostCosts slow;
  slow.forward_kernel_s = slow.backward_kernel_s = 1;
  TrainingSummary bound = run(slow);
  int64_t optimizer_launches = bound.steps.back().launches;
  REQUIRE(bound.steps.back().phase == "optimizer");
  CHECK(bound.host_s == Approx(static_cast<double>(bound.kernels - optimizer_launches)));
  double last_backward_kernel = bound.step_time_s - bound.host_s - bound.optimizer_s;
  CHECK(last_backward_kernel > 0);
  CHECK(last_backward_kernel < 1e-3);
  CHECK(bound.gpu_wait_s == Approx(bound.step_time_s - bound.gpu_busy_s));
  // Mixtral's experts in fp32 go through torch._grouped_mm's fallback, which reads its group
  // offsets on the host: 2 syncs per layer forward, 4 backward (8 and 16 in the H100 trace of
  // the 4-layer case); in bf16 grouped_mm has a kernel and nothing syncs.
  t.precision = TrainPrecision::fp32;
  CHECK(analyze_training(training_config("mixtral-4l"), o, t).training->host_syncs == 24);
  t.precision = TrainPrecision::bf16;
  CHECK(analyze_training(training_config("mixtral-4l"), o, t).training->host_syncs == 0);
}

TEST_CASE(
    "training: an ONNX ResNet-50 (BatchNorm kept) meets all three targets against real H100 steps",
    "[training][onnx]") {
  // scripts/gpu/training_references_onnx.py: torchvision's ResNet-50 in train mode, the model the
  // graph was exported from (scripts/gpu/export_samples.py).
  json refs = read_json("tests/data/reference/training/h100-train-onnx.json");
  REQUIRE(refs.at("cases").size() == 4);
  AnalysisOptions options;
  options.calibrated = std::make_shared<const Device>(
      calibrated_device(read_device_profile(data_path("data/profiles/h100-sxm.json"))));
  for (const json& c : refs.at("cases")) {
    LoadOptions load;
    load.batch = c.at("batch").get<int64_t>();
    TrainingOptions t;
    t.precision = parse_train_precision(c.at("precision"));
    t.optimizer = parse_optimizer(c.at("optimizer"));
    Analysis a = analyze_training_onnx(
        data_path("tests/data/onnx/" + c.at("onnx").get<std::string>() + ".onnx"), load, options,
        t);
    const TrainingSummary& s = *a.training;
    INFO(c.at("case").get<std::string>()
         << ": peak " << s.peak_memory_bytes << " vs " << c.at("peak_bytes").get<int64_t>());
    // Batch norm's running statistics are buffers: no gradient, no optimizer state.
    CHECK(s.params == c.at("params").get<int64_t>());
    CHECK(relative(static_cast<double>(s.peak_memory_bytes), c.at("peak_bytes").get<double>()) <
          0.05);
    // FlopCounterMode: every convolution's forward, weight gradient and data gradient (none for
    // the first, whose input is the image), and the classifier's three GEMMs.
    CHECK(relative(static_cast<double>(s.gemm_dense_flops),
                   c.at("gemm_dense_flops").get<double>()) < 0.02);
    CHECK(s.peak_moment.rfind("backward, ", 0) == 0);
    // With the profile's batch-norm tables (scripts/gpu/batch_norm_training.py) and cuDNN's NCHW
    // conversions, the step's time too.
    INFO("step " << s.step_time_s << " vs " << c.at("step_time_s").get<double>());
    CHECK(relative(s.step_time_s, c.at("step_time_s").get<double>()) <= 0.15);
  }
}

TEST_CASE("training: an ONNX graph's bad training flags are one line and exit 2",
          "[training][cli]") {
  std::filesystem::path dir = scratch_dir("training-onnx");
  std::string bin = ROOFLENS_BIN;
  std::string resnet = data_path("samples/resnet50-opset17.onnx");
  CliRun ok =
      run_cli(bin + " analyze " + resnet + " --phase train --batch 8 --precision bf16-mixed", dir);
  CHECK(ok.code == 0);
  CHECK(ok.out.find("Training step (bf16-mixed, adamw, recompute none)") != std::string::npos);
  // The sample is an inference export (scripts/gpu/export_samples.py: BatchNorm folded into the 53
  // convolutions, each left with a bias): the step says so. The export with BatchNorm kept does
  // not.
  std::string flat = std::regex_replace(ok.out, std::regex("\\s+"), " ");
  CHECK(flat.find("this is an inference export with BatchNorm folded") != std::string::npos);
  CliRun kept = run_cli(bin + " analyze " + data_path("tests/data/onnx/resnet50-bn-unfolded.onnx") +
                            " --phase train --batch 8",
                        dir);
  CHECK(kept.code == 0);
  CHECK(kept.out.find("BatchNorm folded") == std::string::npos);
  std::istringstream lines(ok.out);
  for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
  for (const std::string& bad :
       {std::string("--phase train --precision bf16"),
        std::string("--phase train --recompute full"), std::string("--phase train --seq 128"),
        std::string("--phase train --dtype bf16"), std::string("--phase decode"),
        std::string("--optimizer sgd"), std::string("--phase train --optimizer lion")}) {
    CliRun r = run_cli(bin + " analyze " + resnet + " " + bad, dir);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // A flag's error stays the flag's with --batch too (not blamed on the batch rewrite).
  CliRun flag =
      run_cli(bin + " analyze " + resnet + " --batch 8 --phase train --precision bf16", dir);
  CHECK(flag.code == 2);
  CHECK(flag.err.find("--precision bf16: an ONNX graph trains in its own dtypes") !=
        std::string::npos);
  CHECK(flag.err.find("rewrote the inputs") == std::string::npos);
  // A graph without weights has nothing to train.
  ModelBuilder b;
  b.input("x", DType::f32, {4, 8}).node("Relu", {"x"}, {"y"}).output("y");
  CliRun none = run_cli(bin + " analyze " + b.save() + " --phase train", dir);
  CHECK(none.code == 2);
  CHECK(none.err.find("no float parameters to train") != std::string::npos);
}
