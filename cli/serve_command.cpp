// `rooflens serve`: flags to ServeOptions, the simulation, the JSON `serving` object and the
// one-screen terminal summary.
#include "cli/serve_command.hpp"

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/serving/serving.hpp"
#include "cli/model_args.hpp"
#include "reports/atomic_file.hpp"
#include "reports/format.hpp"
#include "reports/saved_result.hpp"

namespace rooflens::cli {
namespace {

bool on_off(const std::string& flag, const std::string& v) {
  if (v == "on") return true;
  if (v == "off") return false;
  throw InputError(fmt::format("{} {}: expected on or off", flag, v));
}

nlohmann::json stats_json(const ServingStats& s) {
  return {{"concurrency", s.concurrency},
          {"rate", s.rate},
          {"requests", s.requests},
          {"ttft_mean_s", s.ttft_mean_s},
          {"ttft_p50_s", s.ttft_p50_s},
          {"ttft_p99_s", s.ttft_p99_s},
          {"tpot_mean_s", s.tpot_mean_s},
          {"tpot_p50_s", s.tpot_p50_s},
          {"tpot_p99_s", s.tpot_p99_s},
          {"e2e_latency_mean_s", s.e2e_latency_mean_s},
          {"throughput_tokens_per_s", s.throughput_tokens_per_s},
          {"throughput_tokens_per_s_per_gpu", s.throughput_tokens_per_s_per_gpu},
          {"requests_per_s", s.requests_per_s},
          {"preemptions", s.preemptions},
          {"sustainable", s.sustainable},
          {"wait_growth", s.wait_growth},
          {"step_mix",
           {{"mixed", s.mixed_steps},
            {"prefill_only", s.prefill_only_steps},
            {"decode_only", s.decode_only_steps},
            {"mean_step_s", s.mean_step_s},
            {"mean_decode_batch", s.mean_decode_batch}}}};
}

nlohmann::json result_json(const ServeResult& r, const ServeOptions& o, const std::string& device) {
  nlohmann::json j;
  j["schema"] = "rooflens-serve";
  j["schema_version"] = 1;
  j["model"] = r.model;
  j["device"] = device;
  j["engine"] = {{"name", o.engine.name},
                 {"max_batched_tokens", r.knobs.max_batched_tokens},
                 {"max_seqs_per_scheduler", r.knobs.max_seqs},
                 {"block_size", r.knobs.block_size},
                 {"memory_fraction", o.engine.memory_fraction},
                 {"chunked_prefill", r.knobs.chunked_prefill},
                 {"reserve_full_output", r.knobs.reserve_full_output},
                 {"cuda_graphs", o.cuda_graphs},
                 {"graph_max_tokens", o.engine.graph_max_tokens},
                 {"moe_kernel", expert_kernel_name(o.engine.expert_kernel)},
                 {"moe_kernel_priced", expert_kernel_name(r.expert_kernel_priced)},
                 {"step_overhead_s", o.step_overhead_s},
                 {"sources", o.engine.sources}};
  j["plan"] = {{"tp", o.lowering.tp},
               {"pp", o.pp},
               {"dp", o.dp},
               {"ep", o.ep},
               {"attention_dp", o.attention_dp()},
               {"sp", o.sp},
               {"gpus", r.gpus},
               {"schedulers", o.pp * o.dp * o.lockstep_ranks()}};
  j["memory_per_gpu"] = {{"device_bytes", r.memory.device_bytes},
                         {"weight_bytes", r.memory.weight_bytes},
                         {"activation_bytes", r.memory.activation_bytes},
                         {"kv_cache_bytes", r.memory.kv_bytes},
                         {"kv_bytes_per_token", r.memory.kv_bytes_per_token}};
  nlohmann::json s =
      (o.concurrency > 0 || o.rate > 0) ? stats_json(r.stats) : nlohmann::json::object();
  s["kv_capacity_tokens"] = r.kv_capacity_tokens;
  s["kv_blocks_per_scheduler"] = r.kv_blocks;
  s["max_concurrency_without_preemption"] = r.max_concurrency_without_preemption;
  s["isl"] = {{"lo", o.isl.lo}, {"hi", o.isl.hi}};
  s["osl"] = {{"lo", o.osl.lo}, {"hi", o.osl.hi}};
  if (o.ep > 1) s["moe_imbalance"] = r.moe_imbalance;
  j["serving"] = s;
  j["sweep"] = nlohmann::json::array();
  for (const ServingStats& p : r.sweep) j["sweep"].push_back(stats_json(p));
  nlohmann::json tl = nlohmann::json::array();
  for (const StepRecord& st : r.timeline)
    tl.push_back({st.start_s, st.seconds, st.prefill_tokens, st.decode_seqs, st.waiting});
  j["timeline"] = {{"columns", {"start_s", "seconds", "prefill_tokens", "decode_seqs", "waiting"}},
                   {"steps", tl}};
  j["cost_grid_points"] = r.cost_grid_points;
  j["notes"] = r.notes;
  return j;
}

std::string ms(double s) {
  return fmt::format("{:.1f} ms", s * 1e3);
}

void write_terminal(std::ostream& out, const ServeResult& r, const ServeOptions& o,
                    const std::string& device) {
  // Lines wrap at 100 columns, the continuation indented under the label.
  out << reports::wrap(
      "rooflens serve: ",
      fmt::format("{} on {} x {} (tp {}, pp {}, dp {}{}), engine {}", r.model, r.gpus, device,
                  o.lowering.tp, o.pp, o.dp,
                  o.attention_dp() ? fmt::format(", ep {} with data-parallel attention", o.ep)
                  : o.ep > 1       ? fmt::format(", ep {}", o.ep)
                                   : "",
                  o.engine.name));
  out << reports::wrap_list(
      "  knobs: ",
      {fmt::format("{} tokens/step", r.knobs.max_batched_tokens),
       fmt::format("{} seqs", r.knobs.max_seqs), fmt::format("block {}", r.knobs.block_size),
       fmt::format("cache fraction {:.2f}", o.engine.memory_fraction),
       fmt::format("chunked prefill {}", r.knobs.chunked_prefill ? "on" : "off"),
       fmt::format("CUDA graphs {}", o.cuda_graphs ? "on" : "off")});
  out << reports::wrap_list(
      "  memory per GPU: ",
      {fmt::format("weights {:.1f} GB", r.memory.weight_bytes / 1e9),
       fmt::format("activations {:.1f} GB", r.memory.activation_bytes / 1e9),
       fmt::format("KV cache {:.1f} GB = {} tokens ({} B/token)", r.memory.kv_bytes / 1e9,
                   r.kv_capacity_tokens, r.memory.kv_bytes_per_token)});
  out << fmt::format("  largest concurrency without preemption at {:.0f} + {:.0f} tokens: {}\n",
                     o.isl.mean(), o.osl.mean(), r.max_concurrency_without_preemption);
  if (o.concurrency > 0 || o.rate > 0) {
    const ServingStats& s = r.stats;
    out << (o.rate > 0
                ? fmt::format("  open loop, {:.2f} requests/s, {} requests\n", o.rate, s.requests)
                : fmt::format("  closed loop, concurrency {}, {} requests\n", o.concurrency,
                              s.requests));
    out << fmt::format("  TTFT  mean {:>10}  p50 {:>10}  p99 {:>10}\n", ms(s.ttft_mean_s),
                       ms(s.ttft_p50_s), ms(s.ttft_p99_s));
    out << fmt::format("  TPOT  mean {:>10}  p50 {:>10}  p99 {:>10}\n", ms(s.tpot_mean_s),
                       ms(s.tpot_p50_s), ms(s.tpot_p99_s));
    out << fmt::format("  E2E   mean {:>10}\n", ms(s.e2e_latency_mean_s));
    out << fmt::format("  throughput {:.0f} output tokens/s ({:.0f} per GPU), {:.2f} requests/s\n",
                       s.throughput_tokens_per_s, s.throughput_tokens_per_s_per_gpu,
                       s.requests_per_s);
    out << reports::wrap_list("  steps: ",
                              {fmt::format("{} mixed", s.mixed_steps),
                               fmt::format("{} prefill only", s.prefill_only_steps),
                               fmt::format("{} decode only", s.decode_only_steps),
                               fmt::format("mean step {}", ms(s.mean_step_s)),
                               fmt::format("mean decode batch {:.1f}", s.mean_decode_batch),
                               fmt::format("{} preemptions", s.preemptions)});
  }
  if (!r.sweep.empty()) {
    out << fmt::format("  {:>11} {:>11} {:>11} {:>13} {:>13} {:>12}\n", "concurrency", "TTFT mean",
                       "TPOT mean", "tokens/s", "tokens/s/GPU", "preemptions");
    for (const ServingStats& s : r.sweep)
      out << fmt::format("  {:>11} {:>11} {:>11} {:>13.0f} {:>13.0f} {:>12}\n", s.concurrency,
                         ms(s.ttft_mean_s), ms(s.tpot_mean_s), s.throughput_tokens_per_s,
                         s.throughput_tokens_per_s_per_gpu, s.preemptions);
  }
  for (const std::string& n : r.notes) out << reports::wrap("  note: ", n);
}

}  // namespace

void add_serve_options(CLI::App& cmd, ServeArgs& a) {
  cmd.add_option("model", a.model, "config.json or a Hugging Face model directory")->required();
  cmd.add_option("--device", a.device, "device id from `rooflens devices`")->capture_default_str();
  cmd.add_option("--device-profile", a.device_profile,
                 "calibrated roofs and measured tables (replaces --device)");
  cmd.add_option("--engine", a.engine,
                 "vllm | sglang | trtllm: the engine's documented scheduling defaults")
      ->capture_default_str();
  cmd.add_option("--tp", a.tp, "tensor-parallel GPUs per replica")->capture_default_str();
  cmd.add_option("--pp", a.pp, "pipeline stages per replica")->capture_default_str();
  cmd.add_option("--dp", a.dp, "data-parallel replicas")->capture_default_str();
  cmd.add_option("--ep", a.ep,
                 "expert-parallel GPUs (MoE): equal to --tp, or with --tp 1 attention "
                 "data-parallel ranks exchanging tokens by all-to-all")
      ->capture_default_str();
  cmd.add_flag("--sp", a.sp, "sequence parallelism: TP all-reduces as reduce-scatter + all-gather");
  cmd.add_option("--weights", a.weights, "fp32|bf16|fp16|fp8|int8|int4 (default: the config's)");
  cmd.add_option("--activations", a.activations, "fp32|bf16|fp16|fp8|int8");
  cmd.add_option("--kv-dtype", a.kv_dtype, "KV cache dtype");
  cmd.add_option("--isl", a.isl, "input tokens: N or uniform:LO:HI")->capture_default_str();
  cmd.add_option("--osl", a.osl, "output tokens: N or uniform:LO:HI")->capture_default_str();
  cmd.add_option("--concurrency", a.concurrency, "closed loop: requests in flight");
  cmd.add_option("--rate", a.rate, "open loop: Poisson arrivals, requests per second");
  cmd.add_option("--num-requests", a.num_requests,
                 "requests (default 8 x concurrency, at least 32; 256 for --rate)");
  cmd.add_option("--seed", a.seed, "seed of the arrivals and lengths")->capture_default_str();
  cmd.add_option("--max-batched-tokens", a.max_batched_tokens,
                 "token budget per step (default: the engine's)");
  cmd.add_option("--max-seqs", a.max_seqs, "sequences running at once (default: the engine's)");
  cmd.add_option("--block-size", a.block_size, "KV-cache tokens per block (default: the engine's)");
  cmd.add_option("--memory-fraction", a.memory_fraction,
                 "the engine's cache memory fraction (default: the engine's)");
  cmd.add_option("--chunked-prefill", a.chunked_prefill, "on | off (default: the engine's)");
  cmd.add_option("--moe-kernel", a.moe_kernel,
                 "fused | grouped | batched: what MoE experts run on (default: the engine's; "
                 "vLLM's and SGLang's Triton fused MoE, TensorRT-LLM's CUTLASS grouped GEMMs)");
  cmd.add_option("--cuda-graphs", a.cuda_graphs,
                 "on | off: decode (and small) steps replayed as CUDA graphs")
      ->capture_default_str();
  cmd.add_option("--step-overhead-us", a.step_overhead_us,
                 "host/scheduler time per step beside the kernels")
      ->capture_default_str();
  cmd.add_option("--sweep-concurrency", a.sweep,
                 "closed-loop concurrencies for a latency-throughput table, e.g. 1,2,4,8")
      ->delimiter(',');
  cmd.add_option("--json", a.json_path, "write the result as JSON");
  cmd.add_option("--html", a.html_path,
                 "write a self-contained HTML page: the latency-throughput curve of the sweep and "
                 "the simulated steps");
}

ServeReport serve_run(const ServeArgs& a, const CLI::App& cmd) {
  std::shared_ptr<const Device> device = device_from_flags(a.device, a.device_profile, cmd);
  if (!device) device = std::make_shared<const Device>(find_device(a.device));
  if (a.tp < 1) throw InputError(fmt::format("--tp {}: must be at least 1", a.tp));
  TransformerConfig c = load_transformer_config(a.model);
  ServeOptions o;
  ModelArgs dtypes;
  dtypes.weights = a.weights, dtypes.activations = a.activations, dtypes.kv_dtype = a.kv_dtype;
  choose_dtypes(dtypes, c, o.lowering);
  o.lowering.tp = a.tp;
  o.pp = a.pp, o.dp = a.dp, o.ep = a.ep, o.sp = a.sp;
  o.engine = engine_defaults(a.engine, a.tp, device->memory_bytes);
  for (auto [flag, value] :
       {std::pair<const char*, int64_t>{"--max-batched-tokens", a.max_batched_tokens},
        {"--max-seqs", a.max_seqs},
        {"--block-size", a.block_size}})
    if (cmd.count(flag) && value <= 0)
      throw InputError(fmt::format("{} {}: must be positive", flag, value));
  if (cmd.count("--max-batched-tokens")) o.engine.max_batched_tokens = a.max_batched_tokens;
  if (cmd.count("--max-seqs")) o.engine.max_seqs = a.max_seqs;
  if (cmd.count("--block-size")) o.engine.block_size = a.block_size;
  if (cmd.count("--memory-fraction")) {
    if (!(a.memory_fraction > 0 && a.memory_fraction <= 1))
      throw InputError(fmt::format("--memory-fraction {}: expected (0, 1]", a.memory_fraction));
    o.engine.memory_fraction = a.memory_fraction;
  }
  if (!a.chunked_prefill.empty())
    o.engine.chunked_prefill = on_off("--chunked-prefill", a.chunked_prefill);
  if (!a.moe_kernel.empty()) {
    auto k = expert_kernel_from_name(a.moe_kernel);
    if (!k)
      throw InputError(
          fmt::format("--moe-kernel {}: expected fused, grouped or batched", a.moe_kernel));
    o.engine.expert_kernel = *k;
  }
  o.cuda_graphs = on_off("--cuda-graphs", a.cuda_graphs);
  if (!(a.step_overhead_us >= 0 && a.step_overhead_us <= 1e9))
    throw InputError(fmt::format("--step-overhead-us {}: expected 0 to 1e9", a.step_overhead_us));
  o.step_overhead_s = a.step_overhead_us * 1e-6;
  o.isl = parse_length("--isl", a.isl);
  o.osl = parse_length("--osl", a.osl);
  o.concurrency = a.concurrency;
  o.rate = a.rate;
  o.num_requests = a.num_requests;
  o.seed = a.seed;
  o.sweep = a.sweep;
  if (a.concurrency > 0 && a.rate > 0)
    throw InputError(
        "serve: --concurrency (closed loop) and --rate (open loop) exclude each other");
  ServeResult r = run_serve(c, o, device);
  // Which roofs priced the steps: the measured or derived profile, or the spec sheet.
  std::string device_name =
      fmt::format("{} ({})", device->id,
                  device->profile_source.empty() ? "spec roofs" : device->profile_source);
  std::ostringstream text;
  write_terminal(text, r, o, device_name);
  return {result_json(r, o, device_name), text.str()};
}

int run_serve_command(const ServeArgs& a, const CLI::App& cmd) {
  ServeReport report = serve_run(a, cmd);
  if (!a.json_path.empty())
    reports::write_atomically(a.json_path,
                              [&](std::ostream& f) { f << report.result.dump(1) << '\n'; });
  if (!a.html_path.empty())
    reports::write_atomically(a.html_path,
                              [&](std::ostream& f) { reports::write_html(f, report.result); });
  std::cout << report.text;
  return 0;
}

}  // namespace rooflens::cli
