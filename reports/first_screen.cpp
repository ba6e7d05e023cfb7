#include "reports/first_screen.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>

#include "reports/format.hpp"

namespace rooflens::reports {
namespace {

using nlohmann::json;

std::string bytes(const json& v) {
  return human_bytes(v.get<double>());
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "bfloat16" -> "bf16": the names the flags take.
std::string dtype_short(const json& name) {
  std::string n = name.get<std::string>();
  if (n == "float32") return "fp32";
  if (n == "bfloat16") return "bf16";
  if (n == "float16") return "fp16";
  if (n == "float8e4m3fn") return "fp8";
  return n;
}

// "H100-SXM: NVIDIA H100 SXM5 80GB (spec roofs)": which roofs the times come from.
std::string device_text(const json& r) {
  const json& d = r.at("device");
  std::string requested =
      d.value("requested", json(nullptr)).is_string() ? d["requested"].get<std::string>() : "";
  std::string picked =
      !requested.empty() && lower(requested) != lower(d.at("id").get<std::string>())
          ? fmt::format("; --device {} picked {}", requested, d.at("id").get<std::string>())
          : "";
  // Which roofs: a measured profile (its file; the shipped one is the default) or the spec sheet.
  std::string roofs =
      d.contains("profile") && d["profile"].is_string() && !d["profile"].get<std::string>().empty()
          ? fit(d["profile"].get<std::string>(), 70)
          : d.at("roofs").get<std::string>() + " roofs";
  return fmt::format("{}: {} ({}{})", d.at("id").get<std::string>(),
                     fit(d.at("name").get<std::string>(), 40), roofs, picked);
}

std::string precision_text(const json& r) {
  if (r.contains("training")) {
    const json& t = r["training"];
    return fmt::format("{}, optimizer {}, recompute {}", t.at("precision").get<std::string>(),
                       t.at("optimizer").get<std::string>(), t.at("recompute").get<std::string>());
  }
  if (r.contains("transformer")) {
    const json& t = r["transformer"];
    // A checkpoint's format by its own name (bitsandbytes nf4, hqq, ...), else --weights int4's
    // group.
    std::string quant = t.contains("quantization") && t["quantization"].is_string()
                            ? fmt::format(" ({})", t["quantization"].get<std::string>())
                        : t.at("weights_dtype") == "int4"
                            ? fmt::format(" (group {})", t.at("group_size").get<int64_t>())
                            : "";
    int64_t tp = t.at("tp").get<int64_t>(), ep = t.value("ep", int64_t{1});
    std::string plan = tp > 1   ? fmt::format("; tensor parallel over {} GPUs", tp)
                       : ep > 1 ? fmt::format("; experts over {} GPUs, attention data-parallel", ep)
                                : "";
    return fmt::format("weights {}{}, activations {}, KV cache {}{}",
                       dtype_short(t.at("weights_dtype")), quant,
                       dtype_short(t.at("activations_dtype")), dtype_short(t.at("kv_dtype")), plan);
  }
  return r.at("dtype").get<std::string>();
}

std::string memory_text(const json& r) {
  if (r.contains("training")) {
    const json& t = r["training"];
    return fmt::format("peak {} at \"{}\" of {}: {}", bytes(t.at("peak_memory_bytes")),
                       t.at("peak_moment").get<std::string>(), bytes(t.at("device_memory_bytes")),
                       t.at("fits").get<bool>() ? "fits" : "does NOT fit");
  }
  const json& m = r.at("memory");
  bool tp = r.contains("transformer") && r["transformer"].at("tp").get<int64_t>() > 1;
  std::string kv = m.at("kv_cache_bytes").get<int64_t>()
                       ? fmt::format(" + KV {}", bytes(m.at("kv_cache_bytes")))
                       : "";
  return fmt::format("weights {}{} + act. {} = {} of {}{}: {}", bytes(m.at("weight_bytes")), kv,
                     bytes(m.at("activation_bytes")), bytes(m.at("total_bytes")),
                     bytes(m.at("device_memory_bytes")), tp ? " per GPU" : "",
                     m.at("fits").get<bool>() ? "fits" : "does NOT fit");
}

// A training step: its time and throughput; then how its kernels split.
std::string step_text(const json& r) {
  const json& t = r["training"];
  bool graph = t.at("seq").get<int64_t>() == 0;  // an ONNX graph counts samples, a config tokens
  return fmt::format("{} a training step -> {:.0f} {}/s",
                     human_time(t.at("step_time_s").get<double>()),
                     t.at("tokens_per_s").get<double>(), graph ? "samples" : "tokens");
}

std::string split_text(const json& r) {
  const json& t = r["training"];
  double comm = t.at("communication_s").get<double>();
  std::string wait =
      t.at("host_modelled").get<bool>()
          ? " + GPU waiting on the host " + human_time(t.at("gpu_wait_s").get<double>())
          : "";
  return fmt::format(
      "forward {} + backward {} + recompute {} + loss {} + optimizer {}{}{}",
      human_time(t.at("forward_s").get<double>()), human_time(t.at("backward_s").get<double>()),
      human_time(t.at("recompute_s").get<double>()), human_time(t.at("loss_s").get<double>()),
      human_time(t.at("optimizer_s").get<double>()), comm > 0 ? " + comm " + human_time(comm) : "",
      wait);
}

// A generate run's two phases side by side: the prefill once, then every decode step.
// --runtime: the step as PyTorch runs it, and what bounds it.
std::string runtime_text(const json& rt) {
  double wall = rt.at("step_wall_s").get<double>(), host = rt.at("host_s").get<double>(),
         gpu = rt.at("gpu_busy_s").get<double>();
  std::string mode = rt.at("mode").get<std::string>();
  std::string what = rt.contains("prefill") ? "a decode step" : "a step";
  if (mode == "graphs")
    return fmt::format("{} {} as a replayed CUDA graph ({} kernels back to back)", human_time(wall),
                       what, with_commas(rt.at("kernels").get<int64_t>()));
  if (!rt.at("host_modelled").get<bool>())
    return fmt::format("{} {} of HF's eager kernels on the GPU; host not modelled",
                       human_time(wall), what);
  std::string text =
      fmt::format("{} {} as HF's eager code runs it: {} ({} kernels, host {}, GPU busy {})",
                  human_time(wall), what, host > gpu ? "host-bound" : "GPU-bound",
                  with_commas(rt.at("kernels").get<int64_t>()), human_time(host), human_time(gpu));
  if (rt.contains("generate_wall_s"))
    text += fmt::format("; generate {} ({:.1f} tokens/s)",
                        human_time(rt.at("generate_wall_s").get<double>()),
                        rt.at("tokens_per_s").get<double>());
  return text;
}

std::string phases_text(const json& g) {
  double ttft = g.at("ttft_s").get<double>(), total = g.at("total_s").get<double>();
  return fmt::format("prefill {} (first token) | decode {} ({} steps, {} -> {} a token)",
                     human_time(ttft), human_time(total - ttft), g.at("decode_step_s").size(),
                     human_time(g.at("tpot_first_s").get<double>()),
                     human_time(g.at("tpot_last_s").get<double>()));
}

}  // namespace

std::string coverage_text(const json& r) {
  return r.at("coverage").at("line").get<std::string>();
}

std::string predicted_time_text(const nlohmann::json& r);

// The predicted time never stands alone over a partial graph: "partial: N of M nodes costed"
// follows it (read from coverage, which results of every schema version carry).
std::string predicted_text(const json& r) {
  const json& c = r.at("coverage");
  std::string h = predicted_time_text(r);
  if (c.at("not_costed").get<int>() == 0) return h;
  return fmt::format("{} [partial: {} of {} nodes costed; the time is a lower bound]", h,
                     c.at("costed").get<int>() + c.at("folded").get<int>() + c.value("fused", 0),
                     c.at("total").get<int>());
}

std::string predicted_time_text(const json& r) {
  const json& t = r.at("totals");
  std::string rate = fmt::format("{:.1f} {}", t.at("throughput_per_s").get<double>(),
                                 t.at("throughput_unit").get<std::string>());
  double seconds = t.at("predicted_s").get<double>();
  if (!r.contains("transformer")) {
    std::string source = t.at("batch_source").get<std::string>();
    return fmt::format("{} for batch {} ({}) -> {}", human_time(seconds),
                       t.at("batch").get<int64_t>(), source.empty() ? "no batch dim" : source,
                       rate);
  }
  const json& x = r["transformer"];
  int64_t batch = x.at("batch").get<int64_t>();
  if (x.contains("generation")) {
    const json& g = x["generation"];
    return fmt::format(
        "{} for {} tokens x batch {}: {:.1f} tokens/s (prefill {} + {} decode steps)",
        human_time(g.at("total_s").get<double>()), g.at("gen").get<int64_t>(), batch,
        g.at("tokens_per_s").get<double>(), human_time(g.at("ttft_s").get<double>()),
        g.at("decode_step_s").size());
  }
  if (x.at("workload") == "decode")
    return fmt::format("{} a decode step for batch {} (one token each, {} cached) -> {}",
                       human_time(seconds), batch, x.at("context").get<int64_t>(), rate);
  return fmt::format("{} for the prefill of batch {} x {} tokens -> {}", human_time(seconds), batch,
                     x.at("seq").get<int64_t>(), rate);
}

void write_first_screen(std::ostream& out, const json& r, size_t width) {
  const json& m = r.at("model");
  // The name, not the path: the path's length depends on where the file sits. The producer is cut
  // first where the width is short.
  std::string producer = m.at("producer").get<std::string>();
  std::string name = fit(m.at("name").get<std::string>(), width >= 100 ? 50 : width - 30);
  std::string from = fmt::format("{}, opset {}", producer.empty() ? "unknown producer" : producer,
                                 m.at("opset").get<int64_t>());
  size_t room = width > name.size() + 13 ? width - name.size() - 13 : 8;
  fmt::print(out, "model    {}  ({})\n", name, fit(from, std::min<size_t>(room, 40)));
  out << wrap("device   ", device_text(r), width);
  const char* precision = r.contains("training")      ? "train    "
                          : r.contains("transformer") ? "dtypes   "
                                                      : "dtype    ";
  out << wrap(precision, precision_text(r), width);
  if (r.contains("training")) {
    out << wrap("step     ", step_text(r), width);
    out << wrap("split    ", split_text(r), width);
  } else {
    out << wrap("predict  ", predicted_text(r), width);
    if (r.contains("transformer") && r["transformer"].contains("generation"))
      out << wrap("phases   ", phases_text(r["transformer"]["generation"]), width);
    if (r.contains("runtime")) out << wrap("runtime  ", runtime_text(r["runtime"]), width);
  }
  out << wrap("memory   ", memory_text(r), width);
  out << wrap("coverage ", coverage_text(r), width);
  out << '\n';
}

}  // namespace rooflens::reports
