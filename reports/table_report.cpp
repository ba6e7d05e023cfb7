// The terminal report, rendered from the result JSON alone, so `analyze` and `report x.json`
// print the same thing. Every line fits 100 columns.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/layer_names.hpp"
#include "reports/first_screen.hpp"
#include "reports/format.hpp"
#include "reports/profile_report.hpp"
#include "reports/result_json.hpp"
#include "reports/sink.hpp"
#include "reports/tensor_parallel_report.hpp"
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

std::string short_count(int64_t c) {
  return c ? human_count(static_cast<double>(c)) : "0";
}
std::string bytes(const json& v) {
  return human_bytes(v.get<double>());
}

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i].get<int64_t>());
  return s + "]";
}

// What the first screen leaves out: the file, the inputs, the roofs and where the times come from.
void details(std::ostream& out, const json& r, size_t width) {
  const json& m = r.at("model");
  const size_t rest = width - 9;  // after the 9-column label
  if (m.at("path") != m.at("name"))
    fmt::print(out, "file     {}\n", fit(m.at("path").get<std::string>(), rest));
  // Inputs that differ only in layer numbers (one seqlens input per sliding-window layer) fold
  // into one line; KV cache inputs are summarized.
  std::vector<std::tuple<std::string, std::string, int>>
      inputs;  // folded name, "dtype[shape]", count
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
    auto same = std::find_if(inputs.begin(), inputs.end(), [&](auto& x) {
      return std::get<0>(x) == name && std::get<1>(x) == type;
    });
    if (same != inputs.end() && name != in.at("name"))
      ++std::get<2>(*same);
    else
      inputs.emplace_back(name, type, 1);
  }
  for (auto& [name, type, count] : inputs) {
    std::string suffix = type + (count > 1 ? fmt::format(" x{}", count) : "");
    fmt::print(
        out, "input    {} {}\n",
        fit(name, std::min<size_t>(70, rest > suffix.size() + 9 ? rest - suffix.size() - 1 : 8)),
        fit(suffix, rest > 9 ? rest - 9 : rest));
  }
  if (caches)
    out << wrap("kv cache ",
                fmt::format("{} inputs like {} {}{}", caches,
                            fit(first_cache->at("name").get<std::string>(), 40),
                            first_cache->at("dtype").get<std::string>(),
                            shape_text(first_cache->at("shape"))),
                width);
  if (!m.at("bound_dims").empty()) {
    std::vector<std::string> parts;
    for (auto& [k, v] : m.at("bound_dims").items())
      parts.push_back(fmt::format("{}={}", k, v.get<int64_t>()));
    out << wrap("bound    ", fmt::format("{}", fmt::join(parts, " ")), width);
  }
  for (const json& note : r.at("notes"))
    if (note.get<std::string>().rfind("--batch", 0) == 0)
      out << wrap("batch    ", note.get<std::string>(), width);
  const json& d = r.at("device");
  auto rate = [](const json& m, const char* k) { return m.contains(k) ? m[k].get<double>() : 0.0; };
  out << wrap("roofs    ",
              fmt::format("{} bf16 tensor, {} fp32 CUDA core, {} HBM, launch floor {}",
                          human_rate(rate(d.at("tensor_flops"), "bf16"), "FLOP"),
                          human_rate(rate(d.at("cuda_core_flops"), "fp32"), "FLOP"),
                          human_rate(d.at("hbm_bandwidth").get<double>(), "B"),
                          human_time(d.at("launch_floor_s").get<double>())),
              width);
  // Where the times come from: the calibrated tables, fitted beyond them, or the roofline.
  const json& sources = r.at("totals").value("prediction_sources", json::object());
  if (!sources.empty()) {
    std::string line;
    for (const char* s : {"measured table", "fitted", "roofline"})
      if (sources.contains(s))
        line += fmt::format("{}{} {}", line.empty() ? "" : ", ", sources[s].get<int>(), s);
    std::string why = !d.contains("tables")
                          ? " (no measured tables: `rooflens calibrate` writes them)"
                      : d.at("roofs") == "derived" ? " (tables derived from another GPU's)"
                                                   : "";
    out << wrap("times    ", fmt::format("{} nodes{}", line, why), width);
  }
}

// "of the prefill" where the nodes are one part of a generate run.
std::string nodes_are(const json& r) {
  return r.contains("transformer") && r["transformer"].contains("generation") ? " of the prefill"
                                                                              : "";
}

// A generate run: each block's prefill time beside its time in the first decode step (context =
// the prompt), ordered by prefill + steps x that step, since decode is most of such a run.
void generate_table(std::ostream& out, const json& r, int top_n, size_t width) {
  const json& g = r.at("transformer").at("generation");
  struct Row {
    std::string block, op;
    int count = 0;
    double prefill = 0, decode = 0;
  };
  std::vector<Row> rows;
  std::map<std::pair<std::string, std::string>, size_t> at;
  auto add = [&](const json& b, bool decode) {
    auto key = std::make_pair(b.at("block").get<std::string>(), b.at("op").get<std::string>());
    auto [it, fresh] = at.emplace(key, rows.size());
    if (fresh) rows.push_back({key.first, key.second, b.at("count").get<int>(), 0, 0});
    (decode ? rows[it->second].decode : rows[it->second].prefill) +=
        b.at("predicted_s").get<double>();
  };
  for (const json& b : r.at("by_block")) add(b, false);
  for (const json& b : g.at("decode_blocks")) add(b, true);
  const double steps = static_cast<double>(g.at("decode_step_s").size());
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
    return x.prefill + steps * x.decode > y.prefill + steps * y.decode;
  });
  if (static_cast<int>(rows.size()) > top_n) rows.resize(static_cast<size_t>(top_n));
  double prefill_total = r.at("totals").at("predicted_s").get<double>(), step_total = 0;
  for (const json& b : g.at("decode_blocks")) step_total += b.at("predicted_s").get<double>();
  out << '\n'
      << wrap("",
              fmt::format("Top {} blocks of the generate run: the prefill beside the first decode "
                          "step ({} cached), ordered by "
                          "prefill + {} x that step (repeated layers folded: *)",
                          rows.size(), g.at("prompt").get<int64_t>(), g.at("decode_step_s").size()),
              width);
  const size_t name_w = width >= 100 ? 38 : std::max<size_t>(16, width - 51);
  fmt::print(out, "{:<{}} {:<10} {:>5} {:>9} {:>5} {:>9} {:>5}\n", "block", name_w, "op", "count",
             "prefill", "%", "decode", "%");
  for (const Row& x : rows)
    fmt::print(out, "{:<{}} {:<10} {:>5} {:>9} {:>5.1f} {:>9} {:>5.1f}\n",
               fit_name(x.block, name_w, x.op), name_w, fit_op(x.op, 10), x.count,
               human_time(x.prefill), prefill_total > 0 ? 100 * x.prefill / prefill_total : 0,
               human_time(x.decode), step_total > 0 ? 100 * x.decode / step_total : 0);
}

// One row of the node table: a node, or identical repeated layers folded (count > 1).
struct NodeRow {
  const json* node;  // the first of the row's nodes
  std::string name;
  int count = 1;
  double seconds = 0;  // of all `count` nodes
};

// Nodes whose names differ only in layer numbers and whose op and cost are the same
// (model.layers.*.mlp.down_proj) make one row; `fold` false: one row per node.
std::vector<NodeRow> node_rows(const json& r, bool fold) {
  std::vector<NodeRow> rows;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int64_t>, size_t> seen;
  for (const json& n : r.at("nodes")) {
    if (n.at("status") != "costed") continue;
    std::string name = n.at("name").get<std::string>();
    double t = n.at("predicted_s").get<double>();
    if (fold) {
      // The analyzer folded the name (the JSON's block); a result saved before it carried one folds
      // here.
      std::string block =
          n.contains("block") ? n.at("block").get<std::string>() : fold_layer_numbers(name);
      auto key = std::make_tuple(block, n.at("op").get<std::string>(), n.at("flops").get<int64_t>(),
                                 n.at("bytes_read_activations").get<int64_t>(),
                                 n.at("bytes_read_weights").get<int64_t>(),
                                 n.at("bytes_written").get<int64_t>());
      auto [it, fresh] = seen.emplace(key, rows.size());
      if (!fresh) {
        NodeRow& row = rows[it->second];
        ++row.count;
        row.seconds += t;
        row.name = std::get<0>(key);
        continue;
      }
    }
    rows.push_back({&n, name, 1, t});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const NodeRow& x, const NodeRow& y) { return x.seconds > y.seconds; });
  return rows;
}

void node_table(std::ostream& out, const json& r, int top_n, bool fold, size_t width) {
  std::vector<NodeRow> rows = node_rows(r, fold);
  if (static_cast<int>(rows.size()) > top_n) rows.resize(static_cast<size_t>(top_n));
  double total = r.at("totals").at("predicted_s").get<double>();
  out << '\n'
      << wrap("",
              fmt::format("Top {} nodes{} by predicted time{}", rows.size(), nodes_are(r),
                          fold ? " (n: identical layers folded; time: all n)" : ""),
              width);
  const bool wide = width >= 100;
  // Wide: 100 columns with every byte column; compact: one bytes column, the name takes the rest.
  // Parameters per node are in the CSV and JSON; the totals hold the model's.
  const size_t name_w = wide ? 28 : std::max<size_t>(16, width - 50);
  if (wide)
    fmt::print(out, "{:<{}} {:<12} {:>3} {:>6} {:>6} {:>6} {:>6} {:>5} {:>7} {:>7} {:>4}\n", "node",
               name_w, "op", "n", "FLOPs", "rd act", "rd wt", "write", "AI", "time", "bound", "%");
  else
    fmt::print(out, "{:<{}} {:<10} {:>3} {:>6} {:>6} {:>7} {:>7} {:>4}\n", "node", name_w, "op",
               "n", "FLOPs", "bytes", "time", "bound", "%");
  for (const NodeRow& row : rows) {
    const json& n = *row.node;
    double ai = n.at("intensity").get<double>();
    std::string op = n.at("op").get<std::string>();
    int64_t flops = n.at("flops").get<int64_t>(),
            read_act = n.at("bytes_read_activations").get<int64_t>(),
            read_wt = n.at("bytes_read_weights").get<int64_t>(),
            written = n.at("bytes_written").get<int64_t>();
    std::string count = row.count < 1000 ? std::to_string(row.count) : short_count(row.count);
    double share = total > 0 ? 100 * row.seconds / total : 0;
    if (wide)
      fmt::print(out, "{:<{}} {:<12} {:>3} {:>6} {:>6} {:>6} {:>6} {:>5} {:>7} {:>7} {:>4.1f}\n",
                 fit_name(row.name, name_w, op), name_w, fit_op(op, 12), count, short_count(flops),
                 short_bytes(read_act), short_bytes(read_wt), short_bytes(written),
                 flops == 0 ? "-"
                 : ai < 100 ? fmt::format("{:.1f}", ai)
                            : short_count(static_cast<int64_t>(ai)),
                 human_time(row.seconds), n.at("bound").get<std::string>(), share);
    else
      fmt::print(out, "{:<{}} {:<10} {:>3} {:>6} {:>6} {:>7} {:>7} {:>4.1f}\n",
                 fit_name(row.name, name_w, op), name_w, fit_op(op, 10), count, short_count(flops),
                 short_bytes(read_act + read_wt + written), human_time(row.seconds),
                 n.at("bound").get<std::string>(), share);
  }
}

void block_table(std::ostream& out, const json& r, int top_n, size_t width) {
  const json& blocks = r.at("by_block");
  size_t shown = std::min(blocks.size(), static_cast<size_t>(top_n));
  double total = r.at("totals").at("predicted_s").get<double>();
  const bool wide = width >= 100;
  const size_t name_w = wide ? 38 : std::max<size_t>(16, width - 51);
  out << '\n'
      << wrap("",
              fmt::format("Top {} blocks{} by predicted time (repeated layers folded: *)", shown,
                          nodes_are(r)),
              width);
  if (wide)
    fmt::print(out, "{:<{}} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5}\n", "block", name_w, "op",
               "count", "FLOPs", "bytes", "params", "time", "%");
  else
    fmt::print(out, "{:<{}} {:<10} {:>5} {:>7} {:>9} {:>9} {:>5}\n", "block", name_w, "op", "count",
               "FLOPs", "bytes", "time", "%");
  for (size_t i = 0; i < shown; ++i) {
    const json& b = blocks[i];
    std::string op = b.at("op").get<std::string>();
    double t = b.at("predicted_s").get<double>();
    if (wide)
      fmt::print(out, "{:<{}} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5.1f}\n",
                 fit_name(b.at("block").get<std::string>(), name_w, op), name_w, fit_op(op, 12),
                 b.at("count").get<int>(), short_count(b.at("flops").get<int64_t>()),
                 bytes(b.at("bytes")), short_count(b.at("params").get<int64_t>()), human_time(t),
                 total > 0 ? 100 * t / total : 0);
    else
      fmt::print(out, "{:<{}} {:<10} {:>5} {:>7} {:>9} {:>9} {:>5.1f}\n",
                 fit_name(b.at("block").get<std::string>(), name_w, op), name_w, fit_op(op, 10),
                 b.at("count").get<int>(), short_count(b.at("flops").get<int64_t>()),
                 bytes(b.at("bytes")), human_time(t), total > 0 ? 100 * t / total : 0);
  }
}

void totals(std::ostream& out, const json& r, size_t width) {
  const json& t = r.at("totals");
  const json& m = r.at("memory");  // weights + KV cache + the activation peak, against the device
  bool tp = r.contains("transformer") && r["transformer"].at("tp").get<int64_t>() > 1;
  fmt::print(out, "\nTotals{}\n",
             r.contains("training") ? " (FLOPs and bytes: the forward)"
             : nodes_are(r).empty() ? ""
                                    : " (FLOPs and bytes: the prefill)");
  std::string params = fmt::format("{} learnable{}", with_commas(t.at("params").get<int64_t>()),
                                   tp ? " on each GPU" : "");
  if (t.at("buffers").get<int64_t>())
    params += fmt::format(" + {} buffers (BatchNorm running stats)",
                          with_commas(t.at("buffers").get<int64_t>()));
  int64_t constants = t.at("constants").get<int64_t>();
  params += fmt::format("; {} constant{} ({})", constants, constants == 1 ? "" : "s",
                        bytes(t.at("constant_bytes")));
  out << wrap("  params      ", params, width);
  std::string flops = human_count(t.at("flops").get<double>());
  if (t.at("macs").get<int64_t>())
    flops += fmt::format("  (GEMM/conv MACs {})", human_count(t.at("macs").get<double>()));
  if (t.at("dense_flops") != t.at("flops"))
    flops += fmt::format("  dense-attention convention: {}",
                         human_count(t.at("dense_flops").get<double>()));
  out << wrap("  FLOPs       ", flops, width);
  out << wrap("  bytes       ",
              fmt::format("read {} activations + {} weights, written {} (unfused)",
                          bytes(t.at("bytes_read_activations")), bytes(t.at("bytes_read_weights")),
                          bytes(t.at("bytes_written"))),
              width);
  if (r.contains("training")) {  // a training step's memory is its own section below
    out << wrap("  predicted   ", predicted_text(r) + " (the forward alone; the step is below)",
                width);
    return;
  }
  std::string kv = m.at("kv_cache_bytes").get<int64_t>()
                       ? fmt::format(" + KV {}", bytes(m.at("kv_cache_bytes")))
                       : "";
  out << wrap("  memory      ",
              fmt::format("weights {}{} + act. {} = {} of {}{}: {}", bytes(m.at("weight_bytes")),
                          kv, bytes(m.at("activation_bytes")), bytes(m.at("total_bytes")),
                          bytes(m.at("device_memory_bytes")), tp ? " per GPU" : "",
                          m.at("fits").get<bool>() ? "fits" : "does NOT fit"),
              width);
  if (m.at("peak_node_index").get<int64_t>() >= 0) {
    std::string step = fmt::format(" (step {} of {})", m.at("peak_node_index").get<int64_t>() + 1,
                                   r.at("nodes").size());
    fmt::print(out, "  peak at     node {}{}\n",
               fit_name(m.at("peak_node").get<std::string>(),
                        std::min<size_t>(60, width - 19 - step.size())),
               step);
    std::string line = "  live then  ";
    size_t shown = 0;
    const json& live = m.at("live_at_peak");
    for (; shown < live.size(); ++shown) {
      std::string item =
          fmt::format(" {} {}", fit_name(live[shown].at("tensor").get<std::string>(), 26),
                      bytes(live[shown].at("bytes")));
      if (line.size() + item.size() + 12 > width) break;
      line += item + ",";
    }
    if (line.back() == ',') line.pop_back();
    if (shown < live.size()) line += fmt::format(" +{} more", live.size() - shown);
    fmt::print(out, "{}\n", line);
  }
  if (m.at("unknown_tensors").get<int>())
    out << wrap("  note        ",
                fmt::format("{} activations of unknown shape are not in the peak",
                            m.at("unknown_tensors").get<int>()),
                width);
  out << wrap("  predicted   ", predicted_text(r), width);
}

void by_op(std::ostream& out, const json& r, size_t width) {
  fmt::print(out, "\nTime by op type{}\n{:<28} {:>6} {:>9} {:>6} {:>8} {:>9}\n", nodes_are(r), "op",
             "count", "time", "%", "FLOPs", "bytes");
  double total = r.at("totals").at("predicted_s").get<double>();
  for (const json& s : r.at("by_op")) {
    double t = s.at("predicted_s").get<double>();
    fmt::print(out, "{:<28} {:>6} {:>9} {:>6.1f} {:>8} {:>9}\n",
               fit_op(s.at("op").get<std::string>(), 28), s.at("count").get<int>(), human_time(t),
               total > 0 ? 100 * t / total : 0, short_count(s.at("flops").get<int64_t>()),
               bytes(s.at("bytes")));
  }
  std::vector<std::pair<std::string, double>> families;
  for (auto& [f, t] : r.at("by_family").items()) families.emplace_back(f, t.get<double>());
  std::stable_sort(families.begin(), families.end(),
                   [](auto& x, auto& y) { return x.second > y.second; });
  std::string line = "by class:";
  for (auto& [f, t] : families) {
    std::string item = fmt::format(" {} {:.1f}%,", f, total > 0 ? 100 * t / total : 0);
    if (line.size() + item.size() > width) {
      fmt::print(out, "{}\n", line);
      line = "         ";
    }
    line += item;
  }
  if (line.back() == ',') line.pop_back();
  fmt::print(out, "{}\n", line);
}

}  // namespace

void write_table(std::ostream& out, const json& r, const TableOptions& o) {
  const size_t width = std::max<size_t>(o.width, 60);  // narrower would cut every name to nothing
  try {
    write_first_screen(out, r, width);
    details(out, r, width);
    if (r.contains("transformer")) write_transformer_header(out, r["transformer"], width);
    bool generate = r.contains("transformer") && r["transformer"].contains("generation") &&
                    r["transformer"]["generation"].contains("decode_blocks");
    if (generate && o.rows != TableRows::layer)
      generate_table(out, r, o.top, width);
    else if (o.rows == TableRows::block)
      block_table(out, r, o.top, width);
    else
      node_table(out, r, o.top, o.rows == TableRows::folded, width);
    totals(out, r, width);
    if (r.contains("transformer")) write_transformer_totals(out, r["transformer"], r, width);
    by_op(out, r, width);
    if (r.contains("training")) write_training(out, r, o.top, width, o.rows != TableRows::layer);
    if (r.contains("profile")) write_profile_table(out, r, o.top, width);
    if (r.contains("tensor_parallel")) write_tensor_parallel_section(out, r, width);
    for (const json& note : r.at("notes"))
      if (note.get<std::string>().rfind("--batch", 0) != 0)
        out << wrap("note: ", note.get<std::string>(), width);
    out << '\n' << wrap("coverage: ", coverage_text(r), width);
  } catch (const json::exception& e) {
    throw InputError(
        fmt::format("result is missing a field or has one of another type: {}", e.what()));
  }
}

void write_table(std::ostream& out, const json& r, int top_n, bool by_block) {
  write_table(out, r, TableOptions{top_n, by_block ? TableRows::block : TableRows::folded, 100});
}

void TableSink::write(std::ostream& out, const Analysis& a) const {
  write_table(out, result_json(a), top_n_, by_block_);
}

}  // namespace rooflens::reports
