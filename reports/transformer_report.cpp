#include "reports/transformer_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "reports/format.hpp"
#include "reports/sink.hpp"

namespace rooflens::reports {
namespace {

using nlohmann::json;

std::string bytes(const json& b) {
  return human_bytes(b.get<double>());
}

std::string shape_of_work(const json& t) {
  int64_t batch = t.at("batch").get<int64_t>();
  if (t.contains("generation"))
    return fmt::format("generate: batch {}, prompt {}, {} new tokens", batch,
                       t["generation"].at("prompt").get<int64_t>(),
                       t["generation"].at("gen").get<int64_t>());
  if (t.at("workload") == "decode")
    return fmt::format("decode: batch {}, one new token over {} cached", batch,
                       t.at("context").get<int64_t>());
  if (t.at("workload") == "train")
    return fmt::format("train: batch {}, {} tokens each (forward, then the step)", batch,
                       t.at("seq").get<int64_t>());
  return fmt::format("prefill: batch {}, {} tokens each", batch, t.at("seq").get<int64_t>());
}

}  // namespace

void write_transformer_header(std::ostream& out, const json& t, size_t width) {
  out << wrap(
      "config   ",
      fmt::format("{}: {} layers, hidden {}, heads {} (KV {}), head dim {}, vocab {}",
                  fit(t.at("model_type").get<std::string>(), 20), t.at("layers").get<int64_t>(),
                  t.at("hidden").get<int64_t>(), t.at("heads").get<int64_t>(),
                  t.at("mla").get<bool>() ? std::string("latent")
                                          : std::to_string(t.at("kv_heads").get<int64_t>()),
                  t.at("head_dim").get<int64_t>(), t.at("vocab").get<int64_t>()),
      width);
  if (int64_t experts = t.at("experts").get<int64_t>())
    fmt::print(out, "experts  top-{} of {} routed{}\n", t.at("experts_per_token").get<int64_t>(),
               experts,
               t.at("shared_experts").get<int64_t>()
                   ? fmt::format(" + {} shared", t.at("shared_experts").get<int64_t>())
                   : "");
  // The dtypes are on the first screen.
  out << wrap("work     ",
              fmt::format("{}; {} attention", shape_of_work(t),
                          t.at("attention") == "flash" ? "fused (flash)" : "naive"),
              width);
}

void write_transformer_totals(std::ostream& out, const json& t, const json& r, size_t width) {
  int64_t tp = t.at("tp").get<int64_t>();
  fmt::print(out, "\nTransformer\n");
  out << wrap(
      "  params      ",
      fmt::format(
          "{} total, {} active per token{}", with_commas(t.at("params_total").get<int64_t>()),
          with_commas(t.at("params_active").get<int64_t>()),
          tp > 1 ? fmt::format(", {} per GPU", with_commas(t.at("params_per_gpu").get<int64_t>()))
                 : ""),
      width);
  const json& m = t.at("memory");
  if (r.contains("training"))
    return;  // no KV cache in training; the step's memory is its own section
  out << wrap("  KV cache    ",
              fmt::format("{}{} a token, {} a sequence ({} tokens), {} for the batch",
                          tp > 1 ? "per GPU: " : "", bytes(t.at("kv_bytes_per_token")),
                          bytes(t.at("kv_bytes_per_sequence")),
                          m.at("cached_tokens").get<int64_t>(), bytes(t.at("kv_bytes_batch"))),
              width);
  out << wrap("  largest     ",
              fmt::format("batch {} at this context; context {} at this batch",
                          m.at("max_batch").get<int64_t>(),
                          m.at("max_context").is_null()
                              ? std::string(t.at("kv_bytes_per_token").get<int64_t>() == 0
                                                ? "any (no KV cache)"
                                                : "unbounded (the cache stops growing)")
                              : with_commas(m.at("max_context").get<int64_t>())),
              width);
  double total = r.at("totals").at("predicted_s").get<double>();
  if (int64_t n = t.at("allreduces").get<int64_t>())
    out << wrap("  all-reduce  ",
                fmt::format("{} per pass, {} in all ({:.1f}% of predicted time)", n,
                            human_time(t.at("allreduce_s").get<double>()),
                            total > 0 ? 100 * t.at("allreduce_s").get<double>() / total : 0),
                width);
  if (t.contains("generation")) {
    const json& g = t["generation"];
    out << wrap("  generation  ",
                fmt::format("time to first token {}, per output token {} at start -> {} at end",
                            human_time(g.at("ttft_s").get<double>()),
                            human_time(g.at("tpot_first_s").get<double>()),
                            human_time(g.at("tpot_last_s").get<double>())),
                width)
        << wrap("              ",
                fmt::format("total {} for {} tokens x batch {}: {:.1f} tokens/s",
                            human_time(g.at("total_s").get<double>()), g.at("gen").get<int64_t>(),
                            t.at("batch").get<int64_t>(), g.at("tokens_per_s").get<double>()),
                width);
  }
  if (r.contains("runtime")) write_runtime(out, r.at("runtime"), width);
}

namespace {

json runtime_step_json(const RuntimeStep& s) {
  return {{"step_wall_s", s.wall_s},
          {"gpu_busy_s", s.gpu_busy_s},
          {"host_s", s.host_s},
          {"kernels", s.kernels}};
}

}  // namespace

nlohmann::json runtime_json(const RuntimeSummary& r) {
  json j = runtime_step_json(r.step);
  j["mode"] = std::string(runtime_mode_name(r.mode));
  j["workload"] = r.workload;
  j["host_modelled"] = r.host_modelled;
  j["source"] = r.source;
  if (r.prefill) {
    j["prefill"] = runtime_step_json(*r.prefill);
    j["generate_wall_s"] = r.generate_wall_s;
    j["tokens_per_s"] = r.tokens_per_s;
    j["gen"] = r.gen;
  }
  return j;
}

void write_runtime(std::ostream& out, const json& r, size_t width) {
  auto step = [](const json& s) {
    return fmt::format(
        "{} wall, GPU busy {}, host {} for {} kernels",
        human_time(s.at("step_wall_s").get<double>()), human_time(s.at("gpu_busy_s").get<double>()),
        human_time(s.at("host_s").get<double>()), with_commas(s.at("kernels").get<int64_t>()));
  };
  std::string mode = r.at("mode").get<std::string>();
  std::string label = r.contains("prefill") ? "decode step " : "";
  out << wrap("  runtime     ", mode + ": " + label + step(r), width);
  if (r.contains("prefill")) {
    out << wrap("              ", "prefill " + step(r.at("prefill")), width);
    out << wrap("              ",
                fmt::format("generate {} for {} tokens: {:.1f} tokens/s",
                            human_time(r.at("generate_wall_s").get<double>()),
                            r.at("gen").get<int64_t>(), r.at("tokens_per_s").get<double>()),
                width);
  }
  if (!r.at("host_modelled").get<bool>())
    out << wrap("              ", r.at("source").get<std::string>(), width);
}

nlohmann::json transformer_json(const TransformerSummary& t) {
  using nlohmann::json;
  const TransformerConfig& c = t.config;
  const LoweringOptions& l = t.lowering;
  json j{
      {"model_type", c.model_type},
      {"layers", c.layers},
      {"hidden", c.hidden},
      {"heads", c.heads},
      {"kv_heads", c.kv_heads},
      {"head_dim", c.qk_head_dim()},
      {"vocab", c.vocab},
      {"mla", c.mla()},
      {"experts", c.experts},
      {"experts_per_token", c.experts_per_token},
      {"shared_experts", c.shared_experts},
      {"group_size", l.group_size},
      {"workload", t.workload},
      {"batch", l.batch},
      {"seq", l.phase == Phase::prefill ? json(l.seq) : json(nullptr)},
      {"context", l.phase == Phase::decode ? json(l.context) : json(nullptr)},
      {"attention", l.attention == AttentionImpl::flash ? "flash" : "naive"},
      {"weights_dtype", dtype_name(l.weights)},
      {"weights_source", t.weights_source},
      {"quantization", l.quantization ? json(l.quantization->label) : json(nullptr)},
      {"activations_dtype", dtype_name(l.activations)},
      {"kv_dtype", dtype_name(l.kv)},
      {"tp", l.tp},
      {"ep", l.ep},
      {"params_total", t.params_total},
      {"params_active", t.params_active},
      {"params_per_gpu", t.params_per_gpu},
      {"kv_bytes_per_token", t.kv_bytes_per_token},
      {"kv_bytes_per_sequence", t.kv_bytes_per_sequence},
      {"kv_bytes_batch", t.kv_bytes_batch},
      {"allreduces", t.allreduces},
      {"allreduce_s", t.allreduce_s},
      {"memory",
       {{"weight_bytes", t.memory.weight_bytes},
        {"kv_cache_bytes", t.memory.kv_cache_bytes},
        {"activation_bytes", t.memory.activation_bytes},
        {"total_bytes", t.memory.total_bytes},
        {"device_bytes", t.memory.device_bytes},
        {"fits", t.memory.fits},
        {"cached_tokens", t.memory.cached_tokens},
        {"max_batch", t.memory.max_batch},
        {"max_context", t.memory.max_context < 0 ? json(nullptr) : json(t.memory.max_context)}}}};
  if (t.generation) {
    const GenerationSweep& g = *t.generation;
    j["generation"] = {{"prompt", g.prompt},
                       {"gen", g.gen},
                       {"ttft_s", g.ttft_s},
                       {"tpot_first_s", g.tpot_first_s},
                       {"tpot_last_s", g.tpot_last_s},
                       {"total_s", g.total_s},
                       {"tokens_per_s", g.tokens_per_s},
                       {"decode_step_s", g.step_s}};
    if (t.decode_step) {  // the first decode step's blocks, beside the prefill's by_block
      json blocks = json::array();
      for (const BlockRow& b : fold_blocks(*t.decode_step))
        blocks.push_back(
            {{"block", b.block}, {"op", b.op}, {"count", b.count}, {"predicted_s", b.predicted_s}});
      j["generation"]["decode_blocks"] = std::move(blocks);
    }
  }
  return j;
}

}  // namespace rooflens::reports
