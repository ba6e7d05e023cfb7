#include <nlohmann/json.hpp>

#include "analyzer/core/layer_names.hpp"
#include "reports/compare_report.hpp"
#include "reports/profile_report.hpp"
#include "reports/result_json.hpp"
#include "reports/sink.hpp"
#include "reports/training_report.hpp"
#include "reports/transformer_report.hpp"

namespace rooflens::reports {

using nlohmann::json;

json device_json(const Device& d) {
  return json{{"id", d.id},
              {"name", d.name},
              {"roofs", d.roofs},
              {"sm_count", d.sm_count},
              {"memory_bytes", d.memory_bytes},
              {"hbm_bandwidth", d.hbm_bandwidth},
              {"l2_bytes", d.l2_bytes ? json(*d.l2_bytes) : json(nullptr)},
              {"nvlink_bandwidth", d.nvlink_bandwidth ? json(*d.nvlink_bandwidth) : json(nullptr)},
              {"pcie_bandwidth", d.pcie_bandwidth ? json(*d.pcie_bandwidth) : json(nullptr)},
              {"launch_floor_s", d.launch_floor_s},
              {"gemm_floor_s", d.gemm_floor_s > 0 ? json(d.gemm_floor_s) : json(nullptr)},
              {"tensor_flops", d.tensor_flops},
              {"cuda_core_flops", d.cuda_core_flops},
              {"sources", d.sources}};
}

namespace {

json device_with_spec(const Device& d, const std::string& requested) {
  json j = device_json(d);
  j["requested"] = requested.empty() ? json(nullptr) : json(requested);
  j["l2_bandwidth"] = d.l2_bandwidth ? json(*d.l2_bandwidth) : json(nullptr);
  if (d.spec) {
    j["spec"] = device_json(*d.spec);
    j["measured_gpu"] = d.profile_gpu;
    j["profile"] = d.profile_source;
    j["measured_sm_clock_mhz"] = d.profile_sm_clock_mhz;
  }
  if (d.perf) {  // which measured tables predictions could read, and how well they predicted
                 // held-out shapes
    json tables = json::object();
    for (const auto& [key, t] : d.perf->tables) {
      int points = 0;
      for (double s : t.seconds) points += s > 0;
      json e{{"axes", t.axes}, {"points", points}};
      if (auto v = d.perf->validation.find(key); v != d.perf->validation.end())
        e["held_out"] = {{"shapes", v->second.shapes},
                         {"median_abs_error", v->second.median_abs},
                         {"p90_abs_error", v->second.p90_abs}};
      tables[key] = e;
    }
    j["tables"] = tables;
  }
  return j;
}

json node_json(const NodeResult& n) {
  json j{{"index", n.index},
         {"name", n.name},
         {"block", node_block(n.name, n.module)},
         {"module", n.module.empty() ? json(nullptr) : json(n.module)},
         {"op", n.op},
         {"family", n.family ? json(std::string(family_name(*n.family))) : json(nullptr)},
         {"status", std::string(status_name(n.status))},
         {"precision", std::string(precision_name(n.precision))},
         {"input_shapes", n.input_shapes},
         {"output_shapes", n.output_shapes}};
  if (n.measured) j["measured"] = measurement_json(*n.measured);
  if (n.status == NodeStatus::not_costed) {
    j["reason"] = n.reason;
    return j;
  }
  if (n.status == NodeStatus::fused) j["reason"] = n.reason;
  const NodeCost& c = n.cost;
  const RooflinePoint& r = n.roof;
  j.update(json{{"flops", c.flops},
                {"macs", c.macs ? json(*c.macs) : json(nullptr)},
                {"dense_flops", c.dense_flops ? json(*c.dense_flops) : json(nullptr)},
                {"bytes_read_activations", c.read_act},
                {"bytes_read_weights", c.read_weight},
                {"bytes_written", c.written},
                {"params", n.params},
                {"intensity", r.intensity},
                {"tensor_cores", c.tensor_cores},
                {"tiled", c.tiled},
                {"unit", r.unit},
                {"compute_roof", r.compute_roof},
                {"t_compute_s", r.t_compute},
                {"t_memory_s", r.t_memory},
                {"wave_fraction", r.wave_fraction},
                {"predicted_s", r.predicted},
                {"roof_fraction", r.roof_fraction},
                {"bound", std::string(bound_name(r.bound))},
                {"bound_uncertain", r.uncertain},
                {"source", std::string(source_name(r.source))},
                {"note", c.note}});
  if (!r.table.empty()) j["table"] = r.table;
  return j;
}

}  // namespace

namespace {

json totals_json(const Analysis& a) {
  const Totals& t = a.totals;
  return json{{"flops", t.flops},
              {"macs", t.macs},
              {"dense_flops", t.dense_flops},
              {"bytes_read_activations", t.read_act},
              {"bytes_read_weights", t.read_weight},
              {"bytes_written", t.written},
              {"params", t.params},
              {"buffers", t.buffers},
              {"weight_bytes", t.weight_bytes},
              {"constants", t.constants},
              {"constant_bytes", t.constant_bytes},
              {"predicted_s", t.predicted_s},
              {"batch", t.batch},
              {"batch_source", t.batch_source},
              {"throughput_per_s", t.throughput},
              {"throughput_unit", t.throughput_unit},
              {"prediction_sources", t.prediction_sources},
              // A node without a rule has no FLOP count, so the share of the graph's FLOPs it holds
              // is unknown too: null, never a guessed zero (0 only when every node is costed).
              {"partial", a.coverage.partial()},
              {"nodes_costed", a.coverage.costed + a.coverage.folded + a.coverage.fused},
              {"nodes_total", a.coverage.total},
              {"flops_unknown_share", a.coverage.partial() ? json(nullptr) : json(0.0)}};
}

json memory_json(const Analysis& a) {
  json live = json::array();
  for (size_t i = 0; i < a.memory.live_at_peak.size(); ++i)
    live.push_back({{"tensor", a.peak_tensor_names[i]}, {"bytes", a.memory.live_at_peak[i].bytes}});
  return json{{"weight_bytes", a.memory_total.weight_bytes},
              {"kv_cache_bytes", a.memory_total.kv_cache_bytes},
              {"activation_bytes", a.memory_total.activation_bytes},
              {"peak_activation_bytes", a.memory.peak_bytes},
              {"peak_node", a.peak_node_name},
              {"peak_node_index", a.memory.peak_node},
              {"live_at_peak", live},
              {"total_bytes", a.memory_total.total_bytes},
              {"device_memory_bytes", a.memory_total.device_bytes},
              {"fits", a.memory_total.fits},
              {"unknown_tensors", a.memory.unknown_tensors},
              {"live_bytes_per_node", a.memory.live_bytes}};
}

}  // namespace

json result_json(const Analysis& a) {
  json inputs = json::array();
  for (const auto& in : a.inputs)
    inputs.push_back({{"name", in.name},
                      {"dtype", dtype_name(in.dtype)},
                      {"shape", in.shape},
                      {"kv_cache", in.kv_cache}});
  json bound = json::object();
  for (auto& [k, v] : a.bound_dims) bound[k] = v;
  json nodes = json::array();
  for (const auto& n : a.nodes) nodes.push_back(node_json(n));
  json by_op = json::array();
  for (const auto& s : a.by_op)
    by_op.push_back({{"op", s.op},
                     {"count", s.count},
                     {"predicted_s", s.predicted_s},
                     {"flops", s.flops},
                     {"bytes", s.bytes}});
  json by_family = json::object();
  for (auto& [f, s] : a.by_family) by_family[f] = s;
  json j{{"schema_version", kJsonSchemaVersion},
         {"tool",
          {{"name", "rooflens"},
           {"command", a.comparison ? "compare"
                       : a.profile  ? "profile"
                                    : "analyze"}}},
         {"model",
          {{"path", a.model},
           {"name", a.model_name},
           {"producer", a.producer},
           {"opset", a.opset},
           {"inputs", inputs},
           {"bound_dims", bound}}},
         {"device", device_with_spec(a.device, a.device_requested)},
         {"dtype", a.dtype_label},
         {"math", {{"mode", math_mode_name(a.math)}, {"tf32_nodes", a.tf32_nodes}}},
         {"conventions",
          {{"flop", "one multiply or one add; a GEMM M x K x N is 2*M*N*K FLOPs"},
           {"attention",
            "causal attention counts executed (unmasked) scores; dense_flops keeps every score"},
           {"bytes", "unfused: every node reads its inputs and writes its outputs through DRAM"},
           {"latency_threshold", kLatencyThreshold}}},
         {"nodes", nodes},
         {"totals", totals_json(a)},
         {"memory", memory_json(a)},
         {"by_op", by_op},
         {"by_family", by_family},
         {"coverage",
          {{"total", a.coverage.total},
           {"costed", a.coverage.costed},
           {"folded", a.coverage.folded},
           {"fused", a.coverage.fused},
           {"not_costed", a.coverage.not_costed},
           {"missing", a.coverage.missing},
           {"line", a.coverage.line()}}},
         {"notes", a.notes}};
  json blocks = json::array();
  for (const BlockRow& r : fold_blocks(a))
    blocks.push_back({{"block", r.block},
                      {"op", r.op},
                      {"count", r.count},
                      {"flops", r.flops},
                      {"bytes", r.bytes},
                      {"params", r.params},
                      {"predicted_s", r.predicted_s}});
  j["by_block"] = blocks;
  if (a.transformer) j["transformer"] = transformer_json(*a.transformer);
  if (a.training) j["training"] = training_json(*a.training, a);
  if (a.runtime) j["runtime"] = runtime_json(*a.runtime);
  if (a.profile) j["profile"] = profile_json(*a.profile);
  if (a.comparison) j["compare"] = compare_json(*a.comparison);
  return j;
}

void write_json(std::ostream& out, const json& result) {
  out << result.dump(1, ' ', false, json::error_handler_t::replace) << '\n';
}

void JsonSink::write(std::ostream& out, const Analysis& a) const {
  write_json(out, result_json(a));
}

}  // namespace rooflens::reports
