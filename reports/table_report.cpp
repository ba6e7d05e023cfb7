// The terminal report, rendered from the result JSON alone, so `analyze` and `report x.json`
// print the same thing. Every line fits 100 columns.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/layer_names.hpp"
#include "reports/format.hpp"
#include "reports/profile_report.hpp"
#include "reports/result_json.hpp"
#include "reports/sink.hpp"
#include "reports/training_report.hpp"
#include "reports/transformer_report.hpp"

namespace rooflens::reports {
namespace {

using nlohmann::json;

// "12.3Mi": byte counts squeezed for the node table (binary units, no "B").
std::string short_bytes(int64_t b) {
  std::string s = human_bytes(static_cast<double>(b));
  auto sp = s.find(' ');
  std::string num = s.substr(0, sp), unit = s.substr(sp + 1);
  return unit == "B" ? num : num + unit.substr(0, 2);
}

std::string short_count(int64_t c) { return c ? human_count(static_cast<double>(c)) : "0"; }
std::string bytes(const json& v) { return human_bytes(v.get<double>()); }

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i].get<int64_t>());
  return s + "]";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void header(std::ostream& out, const json& r) {
  const json& m = r.at("model");
  // The name, not the path: the path's length depends on where the file sits, and the line must
  // read at 100 columns wherever that is. The path follows, cut from the left (the file's end).
  std::string producer = m.at("producer").get<std::string>();
  fmt::print(out, "model    {}  ({}, opset {})\n", fit(m.at("name").get<std::string>(), 50),
             fit(producer.empty() ? "unknown producer" : producer, 28), m.at("opset").get<int64_t>());
  if (m.at("path") != m.at("name")) fmt::print(out, "file     {}\n", fit(m.at("path").get<std::string>(), 91));
  // Inputs that differ only in layer numbers (one seqlens input per sliding-window layer) fold
  // into one line; KV cache inputs are summarized.
  std::vector<std::tuple<std::string, std::string, int>> inputs;  // folded name, "dtype[shape]", count
  const json* first_cache = nullptr;
  int caches = 0;
  for (const json& in : m.at("inputs")) {
    if (in.value("kv_cache", false)) {
      first_cache = first_cache ? first_cache : &in;
      ++caches;
      continue;
    }
    std::string name = fold_layer_numbers(in.at("name").get<std::string>());
    std::string type = in.at("dtype").get<std::string>() + shape_text(in.at("shape"));
    auto same = std::find_if(inputs.begin(), inputs.end(), [&](auto& x) { return std::get<0>(x) == name && std::get<1>(x) == type; });
    if (same != inputs.end() && name != in.at("name")) ++std::get<2>(*same);
    else inputs.emplace_back(name, type, 1);
  }
  for (auto& [name, type, count] : inputs)
    fmt::print(out, "input    {} {}{}\n", fit(name, 70), type, count > 1 ? fmt::format(" x{}", count) : "");
  if (caches)
    fmt::print(out, "kv cache {} inputs like {} {}{}\n", caches, fit(first_cache->at("name").get<std::string>(), 40),
               first_cache->at("dtype").get<std::string>(), shape_text(first_cache->at("shape")));
  if (!m.at("bound_dims").empty()) {
    std::vector<std::string> parts;
    for (auto& [k, v] : m.at("bound_dims").items()) parts.push_back(fmt::format("{}={}", k, v.get<int64_t>()));
    fmt::print(out, "bound    {}\n", fit(fmt::format("{}", fmt::join(parts, " ")), 91));
  }
  for (const json& note : r.at("notes"))
    if (note.get<std::string>().rfind("--batch", 0) == 0) fmt::print(out, "batch    {}\n", fit(note.get<std::string>(), 91));
  const json& d = r.at("device");
  std::string requested = d.value("requested", json(nullptr)).is_string() ? d["requested"].get<std::string>() : "";
  std::string picked = !requested.empty() && lower(requested) != lower(d.at("id").get<std::string>())
                           ? fmt::format("; --device {} picked {}", requested, d.at("id").get<std::string>())
                           : "";
  fmt::print(out, "device   {}: {} ({} roofs{})\n", d.at("id").get<std::string>(), fit(d.at("name").get<std::string>(), 40),
             d.at("roofs").get<std::string>(), picked);
  auto rate = [](const json& m, const char* k) { return m.contains(k) ? m[k].get<double>() : 0.0; };
  fmt::print(out, "roofs    {} bf16 tensor, {} fp32 CUDA core, {} HBM, launch floor {}\n",
             human_rate(rate(d.at("tensor_flops"), "bf16"), "FLOP"), human_rate(rate(d.at("cuda_core_flops"), "fp32"), "FLOP"),
             human_rate(d.at("hbm_bandwidth").get<double>(), "B"), human_time(d.at("launch_floor_s").get<double>()));
  // Where the times come from: the calibrated tables, fitted beyond them, or the roofline.
  const json& sources = r.at("totals").value("prediction_sources", json::object());
  if (!sources.empty()) {
    std::string line;
    for (const char* s : {"measured table", "fitted", "roofline"})
      if (sources.contains(s)) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", sources[s].get<int>(), s);
    fmt::print(out, "times    {} nodes{}\n", line, d.contains("tables") ? "" : " (no measured tables: `rooflens calibrate` writes them)");
  }
  fmt::print(out, "dtype    {}\n", fit(r.at("dtype").get<std::string>(), 91));
}

// "of the prefill" where the nodes are one part of a generate run.
std::string nodes_are(const json& r) {
  return r.contains("transformer") && r["transformer"].contains("generation") ? " of the prefill" : "";
}

void node_table(std::ostream& out, const json& r, int top_n) {
  std::vector<const json*> rows;
  for (const json& n : r.at("nodes"))
    if (n.at("status") == "costed") rows.push_back(&n);
  std::stable_sort(rows.begin(), rows.end(),
                   [](auto* x, auto* y) { return x->at("predicted_s").template get<double>() > y->at("predicted_s").template get<double>(); });
  if (static_cast<int>(rows.size()) > top_n) rows.resize(static_cast<size_t>(top_n));
  double total = r.at("totals").at("predicted_s").get<double>();
  fmt::print(out, "\nTop {} nodes{} by predicted time (bytes: Ki, Mi, Gi = KiB, MiB, GiB)\n", rows.size(), nodes_are(r));
  fmt::print(out, "{:<26} {:<12} {:>6} {:>6} {:>6} {:>6} {:>5} {:>5} {:>7} {:>7} {:>4}\n", "node", "op", "FLOPs", "rd act",
             "rd wt", "write", "param", "AI", "time", "bound", "%");
  for (const json* n : rows) {
    double ai = n->at("intensity").get<double>(), t = n->at("predicted_s").get<double>();
    std::string op = n->at("op").get<std::string>();
    fmt::print(out, "{:<26} {:<12} {:>6} {:>6} {:>6} {:>6} {:>5} {:>5} {:>7} {:>7} {:>4.1f}\n",
               fit_name(n->at("name").get<std::string>(), 26, op), fit_op(op, 12), short_count(n->at("flops").get<int64_t>()),
               short_bytes(n->at("bytes_read_activations").get<int64_t>()), short_bytes(n->at("bytes_read_weights").get<int64_t>()),
               short_bytes(n->at("bytes_written").get<int64_t>()), short_count(n->at("params").get<int64_t>()),
               n->at("flops").get<int64_t>() == 0 ? "-" : ai < 100 ? fmt::format("{:.1f}", ai) : short_count(static_cast<int64_t>(ai)),
               human_time(t), n->at("bound").get<std::string>(), total > 0 ? 100 * t / total : 0);
  }
}

void block_table(std::ostream& out, const json& r, int top_n) {
  const json& blocks = r.at("by_block");
  size_t shown = std::min(blocks.size(), static_cast<size_t>(top_n));
  double total = r.at("totals").at("predicted_s").get<double>();
  fmt::print(out, "\nTop {} blocks{} by predicted time (repeated layers folded: *)\n", shown, nodes_are(r));
  fmt::print(out, "{:<38} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5}\n", "block", "op", "count", "FLOPs", "bytes", "params",
             "time", "%");
  for (size_t i = 0; i < shown; ++i) {
    const json& b = blocks[i];
    std::string op = b.at("op").get<std::string>();
    double t = b.at("predicted_s").get<double>();
    fmt::print(out, "{:<38} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5.1f}\n", fit_name(b.at("block").get<std::string>(), 38, op),
               fit_op(op, 12), b.at("count").get<int>(), short_count(b.at("flops").get<int64_t>()), bytes(b.at("bytes")),
               short_count(b.at("params").get<int64_t>()), human_time(t), total > 0 ? 100 * t / total : 0);
  }
}

// "4.21 ms for batch 8 (dim 0 of input 'x') -> 1,900 samples/s"; a generate run's totals.
std::string headline_of(const json& r);

// The predicted time never stands alone over a partial graph: "partial: N of M nodes costed"
// follows it (read from coverage, which results of every schema version carry).
std::string headline(const json& r) {
  const json& c = r.at("coverage");
  std::string h = headline_of(r);
  if (c.at("not_costed").get<int>() == 0) return h;
  return fmt::format("{} [partial: {} of {} nodes costed; the time is a lower bound]", h,
                     c.at("costed").get<int>() + c.at("folded").get<int>(), c.at("total").get<int>());
}

std::string headline_of(const json& r) {
  const json& t = r.at("totals");
  std::string rate = fmt::format("{:.1f} {}", t.at("throughput_per_s").get<double>(), t.at("throughput_unit").get<std::string>());
  double seconds = t.at("predicted_s").get<double>();
  if (!r.contains("transformer")) {
    std::string source = t.at("batch_source").get<std::string>();
    return fmt::format("{} for batch {} ({}) -> {}", human_time(seconds), t.at("batch").get<int64_t>(),
                       source.empty() ? "no batch dim" : source, rate);
  }
  const json& x = r["transformer"];
  int64_t batch = x.at("batch").get<int64_t>();
  if (x.contains("generation")) {
    const json& g = x["generation"];
    return fmt::format("{} for {} tokens x batch {}: {:.1f} tokens/s (prefill {} + {} decode steps)",
                       human_time(g.at("total_s").get<double>()), g.at("gen").get<int64_t>(), batch, g.at("tokens_per_s").get<double>(),
                       human_time(g.at("ttft_s").get<double>()), g.at("decode_step_s").size());
  }
  if (x.at("workload") == "decode")
    return fmt::format("{} a decode step for batch {} (one token each, {} cached) -> {}", human_time(seconds), batch,
                       x.at("context").get<int64_t>(), rate);
  return fmt::format("{} for the prefill of batch {} x {} tokens -> {}", human_time(seconds), batch, x.at("seq").get<int64_t>(), rate);
}

void totals(std::ostream& out, const json& r) {
  const json& t = r.at("totals");
  const json& m = r.at("memory");  // weights + KV cache + the activation peak, against the device
  bool tp = r.contains("transformer") && r["transformer"].at("tp").get<int64_t>() > 1;
  fmt::print(out, "\nTotals{}\n", r.contains("training")  ? " (FLOPs and bytes: the forward)"
                                   : nodes_are(r).empty() ? ""
                                                          : " (FLOPs and bytes: the prefill)");
  fmt::print(out, "  params      {} learnable{}", with_commas(t.at("params").get<int64_t>()), tp ? " on each GPU" : "");
  if (t.at("buffers").get<int64_t>()) fmt::print(out, " + {} buffers (BatchNorm running stats)", with_commas(t.at("buffers").get<int64_t>()));
  int64_t constants = t.at("constants").get<int64_t>();
  fmt::print(out, "; {} constant{} ({})\n", constants, constants == 1 ? "" : "s", bytes(t.at("constant_bytes")));
  fmt::print(out, "  FLOPs       {}", human_count(t.at("flops").get<double>()));
  if (t.at("macs").get<int64_t>()) fmt::print(out, "  (GEMM/conv MACs {})", human_count(t.at("macs").get<double>()));
  if (t.at("dense_flops") != t.at("flops")) fmt::print(out, "  dense-attention convention: {}", human_count(t.at("dense_flops").get<double>()));
  fmt::print(out, "\n  bytes       read {} activations + {} weights, written {} (unfused)\n", bytes(t.at("bytes_read_activations")),
             bytes(t.at("bytes_read_weights")), bytes(t.at("bytes_written")));
  if (r.contains("training")) {  // a training step's memory is its own section below
    out << wrap("  predicted   ", headline(r) + " (the forward alone; the step is below)");
    return;
  }
  std::string kv = m.at("kv_cache_bytes").get<int64_t>() ? fmt::format(" + KV {}", bytes(m.at("kv_cache_bytes"))) : "";
  out << wrap("  memory      ",
              fmt::format("weights {}{} + act. {} = {} of {}{}: {}", bytes(m.at("weight_bytes")), kv,
                          bytes(m.at("activation_bytes")), bytes(m.at("total_bytes")), bytes(m.at("device_memory_bytes")),
                          tp ? " per GPU" : "", m.at("fits").get<bool>() ? "fits" : "does NOT fit"));
  if (m.at("peak_node_index").get<int64_t>() >= 0) {
    fmt::print(out, "  peak at     node {} (step {} of {})\n", fit_name(m.at("peak_node").get<std::string>(), 60),
               m.at("peak_node_index").get<int64_t>() + 1, r.at("nodes").size());
    std::string line = "  live then  ";
    size_t shown = 0;
    const json& live = m.at("live_at_peak");
    for (; shown < live.size(); ++shown) {
      std::string item = fmt::format(" {} {}", fit_name(live[shown].at("tensor").get<std::string>(), 26), bytes(live[shown].at("bytes")));
      if (line.size() + item.size() + 12 > 100) break;
      line += item + ",";
    }
    if (line.back() == ',') line.pop_back();
    if (shown < live.size()) line += fmt::format(" +{} more", live.size() - shown);
    fmt::print(out, "{}\n", line);
  }
  if (m.at("unknown_tensors").get<int>())
    fmt::print(out, "  note        {} activations of unknown shape are not in the peak\n", m.at("unknown_tensors").get<int>());
  out << wrap("  predicted   ", headline(r));
}

void by_op(std::ostream& out, const json& r) {
  fmt::print(out, "\nTime by op type{}\n{:<28} {:>6} {:>9} {:>6} {:>8} {:>9}\n", nodes_are(r), "op", "count", "time", "%", "FLOPs",
             "bytes");
  double total = r.at("totals").at("predicted_s").get<double>();
  for (const json& s : r.at("by_op")) {
    double t = s.at("predicted_s").get<double>();
    fmt::print(out, "{:<28} {:>6} {:>9} {:>6.1f} {:>8} {:>9}\n", fit_op(s.at("op").get<std::string>(), 28), s.at("count").get<int>(),
               human_time(t), total > 0 ? 100 * t / total : 0, short_count(s.at("flops").get<int64_t>()), bytes(s.at("bytes")));
  }
  std::vector<std::pair<std::string, double>> families;
  for (auto& [f, t] : r.at("by_family").items()) families.emplace_back(f, t.get<double>());
  std::stable_sort(families.begin(), families.end(), [](auto& x, auto& y) { return x.second > y.second; });
  std::string line = "by class:";
  for (auto& [f, t] : families) {
    std::string item = fmt::format(" {} {:.1f}%,", f, total > 0 ? 100 * t / total : 0);
    if (line.size() + item.size() > 100) {
      fmt::print(out, "{}\n", line);
      line = "         ";
    }
    line += item;
  }
  if (line.back() == ',') line.pop_back();
  fmt::print(out, "{}\n", line);
}

}  // namespace

void write_table(std::ostream& out, const json& r, int top_n, bool by_block) {
  try {
    header(out, r);
    if (r.contains("transformer")) write_transformer_header(out, r["transformer"]);
    if (by_block) block_table(out, r, top_n);
    else node_table(out, r, top_n);
    totals(out, r);
    if (r.contains("transformer")) write_transformer_totals(out, r["transformer"], r);
    by_op(out, r);
    if (r.contains("training")) write_training(out, r, top_n);
    if (r.contains("profile")) write_profile_table(out, r, top_n);
    for (const json& note : r.at("notes"))
      if (note.get<std::string>().rfind("--batch", 0) != 0) out << wrap("note: ", note.get<std::string>());
    fmt::print(out, "\ncoverage: {}\n", r.at("coverage").at("line").get<std::string>());
  } catch (const json::exception& e) {
    throw InputError(fmt::format("result is missing a field or has one of another type: {}", e.what()));
  }
}

void TableSink::write(std::ostream& out, const Analysis& a) const { write_table(out, result_json(a), top_n_, by_block_); }

}  // namespace rooflens::reports
