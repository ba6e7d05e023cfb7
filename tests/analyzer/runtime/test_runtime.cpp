// `--runtime eager|graphs` (issue 27, item 5): an inference step as Hugging Face's eager code runs
// it. Kernel counts by hand from transformers 5.17's modeling code; wall times against real eager
// runs on the GPU machine (tests/data/reference/eager_inference/hf-eager-walls.json, written by
// scripts/gpu/eager_inference_wall.py on two H100 machines and an H200: no profiler attached, the
// median of 20 steps, kernels counted under torch.profiler in one more step).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analyzer/runtime/runtime.hpp"
#include "analyzer/transformers/config.hpp"

using namespace rooflens;

namespace {

const std::string kProfile = ROOFLENS_SOURCE_DIR "/data/profiles/h100-sxm.json";

std::shared_ptr<const Device> shipped_h100() {
  static auto d = std::make_shared<const Device>(calibrated_device(read_device_profile(kProfile)));
  return d;
}

TransformerConfig config_with_layers(const nlohmann::json& base, int layers) {
  nlohmann::json c = base;
  c[c.contains("n_layer") ? "n_layer" : "num_hidden_layers"] = layers;
  return parse_transformer_config(c.dump(), "config.json");
}

RuntimeSummary step(const TransformerConfig& c, Workload w, int64_t batch, int64_t tokens,
                    RuntimeMode mode) {
  TransformerOptions o;
  o.workload = w;
  o.calibrated = shipped_h100();
  o.lowering.batch = batch;
  if (w == Workload::prefill)
    o.lowering.seq = tokens;
  else
    o.lowering.context = tokens;
  return *analyze_runtime(c, o, mode).runtime;
}

const nlohmann::json kTinyLlama = {
    {"model_type", "llama"},        {"architectures", {"LlamaForCausalLM"}},
    {"hidden_size", 256},           {"intermediate_size", 688},
    {"num_attention_heads", 4},     {"num_key_value_heads", 4},
    {"vocab_size", 32000},          {"max_position_embeddings", 2048},
    {"rms_norm_eps", 1e-6},         {"hidden_act", "silu"},
    {"tie_word_embeddings", false}, {"dtype", "bfloat16"}};
const nlohmann::json kTinyGpt2 = {{"model_type", "gpt2"},
                                  {"architectures", {"GPT2LMHeadModel"}},
                                  {"n_embd", 256},
                                  {"n_head", 4},
                                  {"vocab_size", 32000},
                                  {"n_positions", 1024},
                                  {"activation_function", "gelu_new"},
                                  {"dtype", "bfloat16"}};

}  // namespace

TEST_CASE("eager decode launches Hugging Face's kernels per decoder layer, counted by hand",
          "[runtime]") {
  // LlamaDecoderLayer, bf16, one decode step with a DynamicCache: LlamaRMSNorm twice (to(fp32),
  // pow, mean, add eps, rsqrt, mul, to(bf16), mul by the weight: 8 each), q/k/v/o projections 4,
  // apply_rotary_pos_emb on q and k (q*cos, -x2, cat, rotate_half*sin, add: 5 each), the cache's
  // torch.cat of K and V 2, SDPA 1, the two residual adds 2, the MLP's gate, act_fn, up, mul,
  // down 5: 40. The H100 and H200 runs measured 40 per layer too ((262 - 102) / 4 between the
  // tiny 6- and 2-layer models).
  auto kernels = [](const nlohmann::json& base, int layers, Workload w) {
    return step(config_with_layers(base, layers), w, 1, w == Workload::decode ? 64 : 16,
                RuntimeMode::eager)
        .step.kernels;
  };
  CHECK(kernels(kTinyLlama, 3, Workload::decode) - kernels(kTinyLlama, 2, Workload::decode) == 40);
  // Prefill without a cache: no torch.cat of K and V, 38.
  CHECK(kernels(kTinyLlama, 3, Workload::prefill) - kernels(kTinyLlama, 2, Workload::prefill) ==
        38);
  // GPT2Block: ln_1, c_attn (addmm), the cache's two cats, SDPA, c_proj, the residual add, ln_2,
  // c_fc, NewGELUActivation written out (pow, 0.044715*, add, sqrt(2/pi)*, tanh, 1+, 0.5*x, mul:
  // 8), c_proj, the residual add: 19 (the runs measured (122 - 46) / 4 = 19).
  CHECK(kernels(kTinyGpt2, 3, Workload::decode) - kernels(kTinyGpt2, 2, Workload::decode) == 19);
}

TEST_CASE(
    "a replayed CUDA graph runs the same kernels with no host between them and eager queues "
    "them behind the host",
    "[runtime]") {
  TransformerConfig c = config_with_layers(kTinyLlama, 4);
  RuntimeSummary graphs = step(c, Workload::decode, 1, 64, RuntimeMode::graphs);
  RuntimeSummary eager = step(c, Workload::decode, 1, 64, RuntimeMode::eager);
  CHECK(graphs.step.host_s == 0);
  CHECK(graphs.step.wall_s == Approx(graphs.step.gpu_busy_s));
  CHECK(graphs.step.kernels == eager.step.kernels);
  // DynamicCache appends by copying the whole cache; a StaticCache writes one token.
  CHECK(eager.step.gpu_busy_s > graphs.step.gpu_busy_s);
  // The queue's bounds: no faster than the host or the GPU alone, no slower than both in turn.
  const EagerHostCosts& h = *shipped_h100()->eager_host;
  double host = h.inference_decode_fixed_s +
                h.inference_decode_kernel_s * static_cast<double>(eager.step.kernels);
  CHECK(eager.step.host_s == Approx(host));
  CHECK(eager.step.wall_s >= std::max(host, eager.step.gpu_busy_s));
  CHECK(eager.step.wall_s <= host + eager.step.gpu_busy_s);
  CHECK(eager.host_modelled);
}

TEST_CASE("eager inference wall time against Hugging Face runs on the GPU machine", "[runtime]") {
  std::ifstream in(ROOFLENS_SOURCE_DIR "/tests/data/reference/eager_inference/hf-eager-walls.json");
  nlohmann::json runs = nlohmann::json::parse(in);
  std::vector<double> errors;
  for (const auto& c : runs.at("cases")) {
    std::string name = c.at("case");
    if (name.rfind("tiny-", 0) == 0) continue;  // the calibration's own cases
    INFO(name << " on " << c.at("run").get<std::string>());
    TransformerConfig config = parse_transformer_config(c.at("config").dump(), name);
    bool decode = c.at("phase") == "decode";
    RuntimeSummary r =
        step(config, decode ? Workload::decode : Workload::prefill, c.at("batch").get<int64_t>(),
             c.at("tokens").get<int64_t>(), RuntimeMode::eager);
    // Kernels the host launched: the profiler's count less what one library call launches
    // itself (cuBLASLt's split-K reduction, cuDNN's attention reduction and workspace memsets).
    int64_t launched = c.at("kernels").get<int64_t>();
    for (const auto& [kernel, count] : c.at("kernel_names").items())
      if (kernel.find("splitKreduce") != std::string::npos ||
          kernel.find("lean_reduction") != std::string::npos || kernel.rfind("Memset", 0) == 0)
        launched -= count.get<int64_t>();
    CHECK(static_cast<double>(r.step.kernels) ==
          Approx(static_cast<double>(launched)).epsilon(decode ? 0.03 : 0.06));
    errors.push_back(std::abs(r.step.wall_s / c.at("wall_s").get<double>() - 1));
  }
  REQUIRE(errors.size() == 31);
  // The 20%: the median over the measurements, and half of them. Not each one: the host is
  // not stable. The same case differs by up to 74% between two runs (GPT-2 decode at batch 1:
  // 10.8 ms and 6.2 ms), and Llama-3.1-8B decode at batch 1 took 38.3 ms, 34.0 ms and 21.8-25.6 ms
  // on three machines: no per-kernel cost is within 20% of all of them.
  std::sort(errors.begin(), errors.end());
  CHECK(errors[errors.size() / 2] <= 0.20);
  CHECK(std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.20; }) * 2 >=
        static_cast<long>(errors.size()));
}
