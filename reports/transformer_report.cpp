#include "reports/transformer_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "reports/format.hpp"

namespace rooflens::reports {
namespace {

std::string bytes(int64_t b) { return human_bytes(static_cast<double>(b)); }

std::string dtype_short(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f8e4m3fn: return "fp8";
    case DType::i8: return "int8";
    case DType::i4: return "int4";
    default: return std::string(dtype_name(t));
  }
}

std::string shape_of_work(const TransformerSummary& t) {
  const LoweringOptions& l = t.lowering;
  if (t.generation) return fmt::format("generate: batch {}, prompt {}, {} new tokens", l.batch, t.generation->prompt, t.generation->gen);
  if (l.phase == Phase::prefill) return fmt::format("prefill: batch {}, {} tokens each", l.batch, l.seq);
  return fmt::format("decode: batch {}, one new token over {} cached", l.batch, l.context);
}

}  // namespace

void write_transformer_header(std::ostream& out, const TransformerSummary& t) {
  const TransformerConfig& c = t.config;
  const LoweringOptions& l = t.lowering;
  fmt::print(out, "config   {}: {} layers, hidden {}, heads {} (KV {}), head dim {}, vocab {}\n", c.model_type, c.layers,
             c.hidden, c.heads, c.mla() ? std::string("latent") : std::to_string(c.kv_heads), c.qk_head_dim(), c.vocab);
  if (c.experts) fmt::print(out, "experts  top-{} of {} routed{}\n", c.experts_per_token, c.experts,
                            c.shared_experts ? fmt::format(" + {} shared", c.shared_experts) : std::string());
  fmt::print(out, "work     {}; {} attention\n", shape_of_work(t), l.attention == AttentionImpl::flash ? "fused (flash)" : "naive");
  std::string quant = l.weights == DType::i4 ? fmt::format(" (group {})", l.group_size) : "";
  fmt::print(out, "dtypes   weights {}{}, activations {}, KV cache {}{}\n", dtype_short(l.weights), quant,
             dtype_short(l.activations), dtype_short(l.kv), l.tp > 1 ? fmt::format("; tensor parallel over {} GPUs", l.tp) : "");
}

void write_transformer_totals(std::ostream& out, const TransformerSummary& t, const Analysis& a) {
  fmt::print(out, "\nTransformer\n");
  fmt::print(out, "  params      {} total, {} active per token", with_commas(t.params_total), with_commas(t.params_active));
  if (t.lowering.tp > 1) fmt::print(out, ", {} per GPU", with_commas(t.params_per_gpu));
  fmt::print(out, "\n  KV cache    {} per token, {} per sequence ({} tokens), {} for the batch\n", bytes(t.kv_bytes_per_token),
             bytes(t.kv_bytes_per_sequence), t.memory.cached_tokens, bytes(t.kv_bytes_batch));
  const MemoryFit& m = t.memory;
  fmt::print(out, "  memory      weights {} + KV {} + act. {} = {} of {}: {}\n", bytes(m.weight_bytes),
             bytes(m.kv_cache_bytes), bytes(m.activation_bytes), bytes(m.total_bytes), bytes(m.device_bytes),
             m.fits ? "fits" : "too big");
  fmt::print(out, "  largest     batch {} at this context; context {} at this batch\n", m.max_batch,
             m.max_context < 0 ? std::string("unbounded (sliding window)") : with_commas(m.max_context));
  if (t.allreduces)
    fmt::print(out, "  all-reduce  {} per pass, {} in all ({:.1f}% of predicted time)\n", t.allreduces, human_time(t.allreduce_s),
               a.totals.predicted_s > 0 ? 100 * t.allreduce_s / a.totals.predicted_s : 0);
  if (const auto& g = t.generation) {
    fmt::print(out, "  generation  time to first token {}, per output token {} at start -> {} at end\n", human_time(g->ttft_s),
               human_time(g->tpot_first_s), human_time(g->tpot_last_s));
    fmt::print(out, "              total {} for {} tokens x batch {}: {:.1f} tokens/s\n", human_time(g->total_s), g->gen,
               t.lowering.batch, g->tokens_per_s);
  }
}

nlohmann::json transformer_json(const TransformerSummary& t) {
  using nlohmann::json;
  const TransformerConfig& c = t.config;
  const LoweringOptions& l = t.lowering;
  json j{{"model_type", c.model_type},
         {"layers", c.layers},
         {"hidden", c.hidden},
         {"heads", c.heads},
         {"kv_heads", c.kv_heads},
         {"head_dim", c.qk_head_dim()},
         {"vocab", c.vocab},
         {"workload", t.workload},
         {"batch", l.batch},
         {"seq", l.phase == Phase::prefill ? json(l.seq) : json(nullptr)},
         {"context", l.phase == Phase::decode ? json(l.context) : json(nullptr)},
         {"attention", l.attention == AttentionImpl::flash ? "flash" : "naive"},
         {"weights_dtype", dtype_name(l.weights)},
         {"weights_source", t.weights_source},
         {"activations_dtype", dtype_name(l.activations)},
         {"kv_dtype", dtype_name(l.kv)},
         {"tp", l.tp},
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
    j["generation"] = {{"prompt", g.prompt},         {"gen", g.gen},
                       {"ttft_s", g.ttft_s},         {"tpot_first_s", g.tpot_first_s},
                       {"tpot_last_s", g.tpot_last_s}, {"total_s", g.total_s},
                       {"tokens_per_s", g.tokens_per_s}, {"decode_step_s", g.step_s}};
  }
  return j;
}

}  // namespace rooflens::reports
