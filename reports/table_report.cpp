#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <numeric>

#include "reports/format.hpp"
#include "reports/profile_report.hpp"
#include "reports/sink.hpp"
#include "reports/transformer_report.hpp"

namespace rooflens::reports {
namespace {

// "12.3Mi": byte counts squeezed for the node table (binary units, no "B").
std::string short_bytes(int64_t b) {
  std::string s = human_bytes(static_cast<double>(b));
  auto sp = s.find(' ');
  std::string num = s.substr(0, sp), unit = s.substr(sp + 1);
  return unit == "B" ? num : num + unit.substr(0, 2);
}

std::string short_count(int64_t c) { return c ? human_count(static_cast<double>(c)) : "0"; }

void header(std::ostream& out, const Analysis& a) {
  // The name, not the path: the path's length depends on where the file sits, and the line must
  // read at 100 columns wherever that is. The path follows, cut from the left (the file's end).
  fmt::print(out, "model    {}  ({}, opset {})\n", fit(a.model_name, 50),
             fit(a.producer.empty() ? "unknown producer" : a.producer, 28), a.opset);
  if (a.model != a.model_name) fmt::print(out, "file     {}\n", fit(a.model, 91));
  const ModelInput* first_cache = nullptr;
  size_t caches = 0;
  for (const auto& in : a.inputs) {
    if (in.kv_cache) {
      first_cache = first_cache ? first_cache : &in;
      ++caches;
      continue;
    }
    fmt::print(out, "input    {} {}{}\n", in.name, dtype_name(in.dtype), shape_string(in.shape));
  }
  if (caches)
    fmt::print(out, "kv cache {} inputs like {} {}{}\n", caches, fit(first_cache->name, 40), dtype_name(first_cache->dtype),
               shape_string(first_cache->shape));
  if (!a.bound_dims.empty()) {
    std::vector<std::string> parts;
    for (auto& [k, v] : a.bound_dims) parts.push_back(fmt::format("{}={}", k, v));
    fmt::print(out, "bound    {}\n", fmt::join(parts, " "));
  }
  const Device& d = a.device;
  auto tensor = d.tensor_flops.count("bf16") ? d.tensor_flops.at("bf16") : 0.0;
  fmt::print(out, "device   {}: {} ({} roofs)\n", d.id, d.name, d.roofs);
  fmt::print(out, "roofs    {} bf16 tensor, {} fp32 CUDA core, {} HBM, launch floor {}\n", human_rate(tensor, "FLOP"),
             human_rate(d.cuda_core_flops.count("fp32") ? d.cuda_core_flops.at("fp32") : 0, "FLOP"),
             human_rate(d.hbm_bandwidth, "B"), human_time(d.launch_floor_s));
  fmt::print(out, "dtype    {}\n", a.dtype_label);
}

void node_table(std::ostream& out, const Analysis& a, int top_n) {
  std::vector<const NodeResult*> rows;
  for (const auto& n : a.nodes)
    if (n.status == NodeStatus::costed) rows.push_back(&n);
  std::stable_sort(rows.begin(), rows.end(), [](auto* x, auto* y) { return x->roof.predicted > y->roof.predicted; });
  if (static_cast<int>(rows.size()) > top_n) rows.resize(top_n);
  double total = a.totals.predicted_s;
  fmt::print(out, "\nTop {} nodes by predicted time (bytes in KiB/MiB/GiB: Ki, Mi, Gi)\n", rows.size());
  fmt::print(out, "{:<19} {:<10} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>5} {:>8} {:>7} {:>4}\n", "node", "op", "FLOPs",
             "MACs", "rd act", "rd wt", "write", "params", "AI", "time", "bound", "%");
  for (const NodeResult* n : rows) {
    const NodeCost& c = n->cost;
    double ai = n->roof.intensity;
    fmt::print(out, "{:<19} {:<10} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>5} {:>8} {:>7} {:>4.1f}\n", fit(n->name, 19),
               fit(n->op, 10), short_count(c.flops), c.macs ? short_count(*c.macs) : "-", short_bytes(c.read_act),
               short_bytes(c.read_weight), short_bytes(c.written), short_count(n->params),
               ai < 100 ? fmt::format("{:.1f}", ai) : short_count(static_cast<int64_t>(ai)),
               human_time(n->roof.predicted), bound_name(n->roof.bound), total > 0 ? 100 * n->roof.predicted / total : 0);
  }
}

void block_table(std::ostream& out, const Analysis& a, int top_n) {
  std::vector<BlockRow> rows = fold_blocks(a);
  if (static_cast<int>(rows.size()) > top_n) rows.resize(top_n);
  double total = a.totals.predicted_s;
  fmt::print(out, "\nTop {} blocks by predicted time (repeated layers folded: *)\n", rows.size());
  fmt::print(out, "{:<38} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5}\n", "block", "op", "count", "FLOPs", "bytes",
             "params", "time", "%");
  for (const BlockRow& r : rows)
    fmt::print(out, "{:<38} {:<12} {:>5} {:>7} {:>9} {:>7} {:>9} {:>5.1f}\n", fit(r.block, 38), fit(r.op, 12), r.count,
               short_count(r.flops), human_bytes(static_cast<double>(r.bytes)), short_count(r.params),
               human_time(r.predicted_s), total > 0 ? 100 * r.predicted_s / total : 0);
}

void totals(std::ostream& out, const Analysis& a) {
  const Totals& t = a.totals;
  fmt::print(out, "\nTotals\n");
  fmt::print(out, "  params      {} learnable", with_commas(t.params));
  if (t.buffers) fmt::print(out, " + {} buffers (BatchNorm running stats)", with_commas(t.buffers));
  fmt::print(out, "; {} constants ({})\n", t.constants, human_bytes(static_cast<double>(t.constant_bytes)));
  fmt::print(out, "  FLOPs       {}", human_count(static_cast<double>(t.flops)));
  if (t.macs) fmt::print(out, "  (GEMM/conv MACs {})", human_count(static_cast<double>(t.macs)));
  if (t.dense_flops != t.flops) fmt::print(out, "  dense-attention convention: {}", human_count(static_cast<double>(t.dense_flops)));
  fmt::print(out, "\n  bytes       read {} activations + {} weights, written {} (unfused)\n",
             human_bytes(static_cast<double>(t.read_act)), human_bytes(static_cast<double>(t.read_weight)),
             human_bytes(static_cast<double>(t.written)));
  int64_t total_mem = t.weight_bytes + a.memory.peak_bytes;
  fmt::print(out, "  memory      weights {} + peak activations {} = {} of {} on {}\n",
             human_bytes(static_cast<double>(t.weight_bytes)), human_bytes(static_cast<double>(a.memory.peak_bytes)),
             human_bytes(static_cast<double>(total_mem)), human_bytes(static_cast<double>(a.device.memory_bytes)), a.device.id);
  if (a.memory.peak_node >= 0) {
    fmt::print(out, "  peak at     node {} (step {} of {})\n", fit(a.peak_node_name, 60), a.memory.peak_node + 1, a.nodes.size());
    std::string line = "  live then  ";
    size_t shown = 0;
    for (; shown < a.memory.live_at_peak.size(); ++shown) {
      std::string item = fmt::format(" {} {}", fit(a.peak_tensor_names[shown], 26),
                                     human_bytes(static_cast<double>(a.memory.live_at_peak[shown].bytes)));
      if (line.size() + item.size() + 12 > 100) break;
      line += item + ",";
    }
    line.pop_back();
    if (shown < a.memory.live_at_peak.size()) line += fmt::format(" +{} more", a.memory.live_at_peak.size() - shown);
    fmt::print(out, "{}\n", line);
  }
  if (a.memory.unknown_tensors)
    fmt::print(out, "  note        {} activations of unknown shape are not in the peak\n", a.memory.unknown_tensors);
  fmt::print(out, "  predicted   {} for batch {} ({}) -> {:.1f} samples/s\n", human_time(t.predicted_s), t.batch,
             t.batch_source.empty() ? "no batch dim" : t.batch_source, t.throughput);
}

void by_op(std::ostream& out, const Analysis& a) {
  fmt::print(out, "\nTime by op type\n{:<28} {:>6} {:>9} {:>6} {:>8} {:>9}\n", "op", "count", "time", "%", "FLOPs", "bytes");
  double total = a.totals.predicted_s;
  for (const auto& s : a.by_op)
    fmt::print(out, "{:<28} {:>6} {:>9} {:>6.1f} {:>8} {:>9}\n", fit(s.op, 28), s.count, human_time(s.predicted_s),
               total > 0 ? 100 * s.predicted_s / total : 0, short_count(s.flops), human_bytes(static_cast<double>(s.bytes)));
  std::string line = "by class:";
  for (auto& [f, t] : a.by_family) {
    std::string item = fmt::format(" {} {:.1f}%,", f, total > 0 ? 100 * t / total : 0);
    if (line.size() + item.size() > 100) {
      fmt::print(out, "{}\n", line);
      line = "         ";
    }
    line += item;
  }
  line.pop_back();
  fmt::print(out, "{}\n", line);
}

}  // namespace

void TableSink::write(std::ostream& out, const Analysis& a) const {
  header(out, a);
  if (a.transformer) write_transformer_header(out, *a.transformer);
  if (by_block_) block_table(out, a, top_n_);
  else node_table(out, a, top_n_);
  totals(out, a);
  if (a.transformer) write_transformer_totals(out, *a.transformer, a);
  by_op(out, a);
  if (a.profile) write_profile_table(out, a, top_n_);
  for (const auto& note : a.notes) fmt::print(out, "note: {}\n", note);
  fmt::print(out, "\ncoverage: {}\n", a.coverage.line());
}

}  // namespace rooflens::reports
