#include "reports/training_report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "analyzer/core/layer_names.hpp"
#include "reports/format.hpp"

namespace rooflens::reports {

using nlohmann::json;

namespace {

json rows_json(const TrainingSummary& t, const Analysis& a) {
  json rows = json::array();
  for (const TrainingRow& r : t.rows) {
    const NodeResult& n = a.nodes.at(static_cast<size_t>(r.node));
    rows.push_back({{"node", n.name},
                    {"index", r.node},
                    {"layer", r.layer},
                    {"op", n.op},
                    {"costed", n.status == NodeStatus::costed},
                    {"forward_s", r.forward_s},
                    {"backward_s", r.backward_s},
                    {"recompute_s", r.recompute_s},
                    {"forward_flops", r.forward_flops},
                    {"backward_flops", r.backward_flops},
                    {"recompute_flops", r.recompute_flops},
                    {"forward_bytes", r.forward_bytes},
                    {"backward_bytes", r.backward_bytes},
                    {"gemm_dense_flops", r.gemm_dense_flops},
                    {"saved_bytes", r.saved_bytes},
                    {"saved", r.saved}});
  }
  return rows;
}

json steps_json(const TrainingSummary& t) {
  json steps = json::array();
  for (const StepRow& s : t.steps)
    steps.push_back({{"name", s.name},
                     {"phase", s.phase},
                     {"flops", s.flops},
                     {"bytes", s.bytes},
                     {"seconds", s.seconds},
                     {"launches", s.launches},
                     {"host_s", t.host_modelled ? json(s.host_s) : json(nullptr)},
                     {"note", s.note}});
  return steps;
}

json memory_timeline_json(const TrainingSummary& t) {
  json timeline = json::array();
  for (const MemoryMoment& m : t.timeline)
    timeline.push_back({{"moment", m.moment},
                        {"weights", m.weights},
                        {"grads", m.grads},
                        {"optimizer_states", m.optimizer},
                        {"autocast_copies", m.autocast_copies},
                        {"saved_activations", m.saved},
                        {"transient", m.transient},
                        {"workspace", m.workspace},
                        {"total", m.total()}});
  return timeline;
}

}  // namespace

json training_json(const TrainingSummary& t, const Analysis& a) {
  json rows = rows_json(t, a), steps = steps_json(t), timeline = memory_timeline_json(t);
  const TrainingOptions& o = t.options;
  return json{{"precision", std::string(train_precision_name(o.precision))},
              {"optimizer", std::string(optimizer_name(o.optimizer))},
              {"recompute", std::string(recompute_name(o.recompute))},
              {"grad_accum", o.grad_accum},
              {"zero", o.zero},
              {"dp", o.dp},
              {"tp", t.tp},
              {"sp", o.sp},
              {"batch", t.batch},
              {"seq", t.seq},
              {"tokens_per_step", t.tokens_per_step},
              {"attention_backend", std::string(attention_backend_name(t.attention_backend))},
              {"params", t.params},
              {"weight_bytes", t.model_state.weights},
              {"grad_bytes", t.model_state.grads},
              {"optimizer_state_bytes", t.model_state.optimizer},
              {"model_state_bytes", t.model_state.total()},
              {"master_weight_bytes", t.master_weight_bytes},
              {"autocast_copy_bytes", t.autocast_copy_bytes},
              {"saved_activation_bytes", t.saved_activation_bytes},
              {"logits_fp32_bytes", t.logits_bytes},
              {"activation_peak_bytes", t.activation_peak_bytes},
              {"peak_memory_bytes", t.peak_memory_bytes},
              {"peak_moment", t.peak_moment},
              {"device_memory_bytes", t.device_bytes},
              {"fits", t.fits},
              {"max_batch", t.max_batch},
              {"max_seq", t.max_seq},
              {"korthikanti_layer_bytes", t.korthikanti_layer_bytes},
              {"flops", t.flops},
              {"gemm_dense_flops", t.gemm_dense_flops},
              {"forward_s", t.forward_s},
              {"backward_s", t.backward_s},
              {"recompute_s", t.recompute_s},
              {"loss_s", t.loss_s},
              {"optimizer_s", t.optimizer_s},
              {"communication_s", t.communication_s},
              {"gpu_busy_s", t.gpu_busy_s},
              // Not modelled (no eager_host in the profile): no figure, not a zero.
              {"host_s", t.host_modelled ? json(t.host_s) : json(nullptr)},
              {"gpu_wait_s", t.host_modelled ? json(t.gpu_wait_s) : json(nullptr)},
              {"kernels", t.kernels},
              {"host_syncs", t.host_syncs},
              {"host_modelled", t.host_modelled},
              {"step_time_s", t.step_time_s},
              {"tokens_per_s", t.tokens_per_s},
              {"timeline", timeline},
              {"steps", steps},
              {"rows", rows},
              {"notes", t.notes}};
}

namespace {

std::string gib(const json& v) {
  return human_bytes(v.get<double>());
}

// Nodes by forward + backward + recompute time; identical repeated layers folded into one row
// (their count n; times summed over them) unless `fold` is off (--by layer).
struct TrainingRow {
  const json* first;
  std::string name;
  int count = 1;
  double forward = 0, backward = 0, recompute = 0;
  double total() const { return forward + backward + recompute; }
};

std::vector<TrainingRow> training_rows(const json& t, bool fold) {
  using Row = TrainingRow;
  std::vector<Row> rows;
  std::map<std::tuple<std::string, std::string, int64_t, int64_t, int64_t>, size_t> seen;
  for (const json& row : t.at("rows")) {
    if (!row.at("costed").get<bool>()) continue;
    std::string name = row.at("node").get<std::string>();
    double fwd = row.at("forward_s").get<double>(), bwd = row.at("backward_s").get<double>(),
           rec = row.at("recompute_s").get<double>();
    if (fold) {
      auto key = std::make_tuple(fold_layer_numbers(name), row.at("op").get<std::string>(),
                                 row.at("forward_flops").get<int64_t>(),
                                 row.at("backward_flops").get<int64_t>(),
                                 row.at("saved_bytes").get<int64_t>());
      auto [it, fresh] = seen.emplace(key, rows.size());
      if (!fresh) {
        Row& r = rows[it->second];
        r.name = std::get<0>(key);
        ++r.count;
        r.forward += fwd;
        r.backward += bwd;
        r.recompute += rec;
        continue;
      }
    }
    rows.push_back({&row, name, 1, fwd, bwd, rec});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.total() > b.total(); });
  return rows;
}

void write_training_header(std::ostream& out, const json& t) {
  fmt::print(
      out, "\nTraining step ({}, {}, recompute {}{}{})\n", t.at("precision").get<std::string>(),
      t.at("optimizer").get<std::string>(), t.at("recompute").get<std::string>(),
      t.at("grad_accum").get<int64_t>() > 1
          ? fmt::format(", {} micro-batches", t.at("grad_accum").get<int64_t>())
          : "",
      t.at("zero").get<int>() > 0 ? fmt::format(", ZeRO-{} over {} GPUs", t.at("zero").get<int>(),
                                                t.at("dp").get<int64_t>())
                                  : "");
}

// The node rows, then the loss's and the optimizer's.
void write_training_table(std::ostream& out, const json& t, const std::vector<TrainingRow>& rows,
                          int top_n, size_t width) {
  using Row = TrainingRow;
  const bool wide = width >= 100;
  double step = t.at("step_time_s").get<double>();
  // Compact: the FLOP and saved-bytes columns go; the name takes what is left. FLOPs and saved
  // bytes are one node's; times are the row's.
  const size_t name_w = wide ? 24 : std::max<size_t>(16, width - 51);
  if (wide)
    fmt::print(out, "{:<24} {:<10} {:>3} {:>7} {:>7} {:>9} {:>9} {:>9} {:>8} {:>5}\n", "node", "op",
               "n", "fwd FL", "bwd FL", "fwd", "bwd", "recomp", "saved", "%");
  else
    fmt::print(out, "{:<{}} {:<10} {:>3} {:>9} {:>9} {:>9} {:>5}\n", "node", name_w, "op", "n",
               "fwd", "bwd", "recomp", "%");
  for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(top_n); ++i) {
    const Row& row = rows[i];
    const json& x = *row.first;
    std::string op = x.at("op").get<std::string>();
    std::string recompute = row.recompute > 0 ? human_time(row.recompute) : std::string("-");
    double share = step > 0 ? 100 * row.total() / step : 0;
    if (wide)
      fmt::print(out, "{:<24} {:<10} {:>3} {:>7} {:>7} {:>9} {:>9} {:>9} {:>8} {:>5.1f}\n",
                 fit_name(row.name, 24, op), fit_op(op, 10), row.count,
                 human_count(x.at("forward_flops").get<double>()),
                 human_count(x.at("backward_flops").get<double>()), human_time(row.forward),
                 human_time(row.backward), recompute,
                 human_bytes(x.at("saved_bytes").get<double>()), share);
    else
      fmt::print(out, "{:<{}} {:<10} {:>3} {:>9} {:>9} {:>9} {:>5.1f}\n",
                 fit_name(row.name, name_w, op), name_w, fit_op(op, 10), row.count,
                 human_time(row.forward), human_time(row.backward), recompute, share);
  }
  // The loss and the optimizer: rows of their own below the nodes.
  for (const json& s : t.at("steps")) {
    double share = step > 0 ? 100 * s.at("seconds").get<double>() / step : 0;
    if (wide)
      fmt::print(out, "{:<39} {:>7} {:>7} {:>9} {:<28} {:>5.1f}\n",
                 fit(s.at("name").get<std::string>(), 39), human_count(s.at("flops").get<double>()),
                 "", human_time(s.at("seconds").get<double>()),
                 fit(s.at("phase").get<std::string>(), 28), share);
    else
      fmt::print(out, "{:<{}} {:>9} {:<19} {:>5.1f}\n",
                 fit(s.at("name").get<std::string>(), name_w + 15), name_w + 15,
                 human_time(s.at("seconds").get<double>()),
                 fit(s.at("phase").get<std::string>(), 19), share);
  }
}

// The step's time: its split into kernels and waiting, the kernels by phase, the host, the
// throughput.
void write_training_time(std::ostream& out, const json& t, bool graph, size_t width) {
  double step = t.at("step_time_s").get<double>();
  out << "\n"
      << wrap("  step        ",
              t.at("host_modelled").get<bool>()
                  ? fmt::format("{} = kernels {} + GPU waiting on the host {}", human_time(step),
                                human_time(t.at("gpu_busy_s").get<double>()),
                                human_time(t.at("gpu_wait_s").get<double>()))
                  : fmt::format("{} = the kernels back to back (the host not modelled)",
                                human_time(step)),
              width)
      << wrap("  kernels     ",
              fmt::format("{} = forward {} + backward {} + recompute {} + loss {} + optimizer {}{}",
                          human_time(t.at("gpu_busy_s").get<double>()),
                          human_time(t.at("forward_s").get<double>()),
                          human_time(t.at("backward_s").get<double>()),
                          human_time(t.at("recompute_s").get<double>()),
                          human_time(t.at("loss_s").get<double>()),
                          human_time(t.at("optimizer_s").get<double>()),
                          t.at("communication_s").get<double>() > 0
                              ? " + comm " + human_time(t.at("communication_s").get<double>())
                              : ""),
              width);
  int64_t syncs = t.at("host_syncs").get<int64_t>();
  out << wrap(
      "  host        ",
      t.at("host_modelled").get<bool>()
          ? fmt::format("eager PyTorch issues {} kernels in {}{} (the device profile's "
                        "eager host costs)",
                        with_commas(t.at("kernels").get<int64_t>()),
                        human_time(t.at("host_s").get<double>()),
                        syncs > 0 ? fmt::format(", waiting for the GPU {} times", syncs) : "")
          : fmt::format("{} kernels; the host's time is not modelled (the device "
                        "profile has no eager_host: calibrate, then "
                        "scripts/gpu/eager_host_per_kernel.py)",
                        with_commas(t.at("kernels").get<int64_t>())),
      width);
  out << wrap("  throughput  ",
              graph ? fmt::format("{} samples a step, {:.0f} samples/s",
                                  with_commas(t.at("tokens_per_step").get<int64_t>()),
                                  t.at("tokens_per_s").get<double>())
                    : fmt::format("{} tokens a step, {:.0f} tokens/s; attention: SDPA {}",
                                  with_commas(t.at("tokens_per_step").get<int64_t>()),
                                  t.at("tokens_per_s").get<double>(),
                                  t.at("attention_backend").get<std::string>()),
              width);
}

// FLOPs, model state, saved activations, the peak and the largest batch that fits.
void write_training_size(std::ostream& out, const json& t, bool graph, size_t width) {
  out << wrap("  FLOPs       ",
              fmt::format("{} executed; matrix (dense attention, FlopCounterMode's convention) {}",
                          human_count(t.at("flops").get<double>()),
                          human_count(t.at("gemm_dense_flops").get<double>())),
              width);
  out << wrap(
      "  model state ",
      fmt::format("{} params: weights {} + grads {} + optimizer {} = {}{}",
                  with_commas(t.at("params").get<int64_t>()), gib(t.at("weight_bytes")),
                  gib(t.at("grad_bytes")), gib(t.at("optimizer_state_bytes")),
                  gib(t.at("model_state_bytes")),
                  t.at("autocast_copy_bytes").get<int64_t>() > 0
                      ? fmt::format("; autocast weight copies {}", gib(t.at("autocast_copy_bytes")))
                      : ""),
      width);
  out << wrap("  activations ",
              fmt::format("saved at the loss {} (fp32 logits {} each){}",
                          gib(t.at("saved_activation_bytes")), gib(t.at("logits_fp32_bytes")),
                          graph ? std::string()
                                : "; per layer, Korthikanti et al.'s figure " +
                                      gib(t.at("korthikanti_layer_bytes"))),
              width);
  out << wrap("  peak        ",
              fmt::format("{} at \"{}\" of {}: {}", gib(t.at("peak_memory_bytes")),
                          t.at("peak_moment").get<std::string>(), gib(t.at("device_memory_bytes")),
                          t.at("fits").get<bool>() ? "fits" : "does NOT fit"),
              width);
  out << wrap("  largest     ",
              graph ? fmt::format("batch {}", t.at("max_batch").get<int64_t>())
                    : fmt::format("batch {} at seq {}; seq {} at batch {}",
                                  t.at("max_batch").get<int64_t>(), t.at("seq").get<int64_t>(),
                                  t.at("max_seq").get<int64_t>(), t.at("batch").get<int64_t>()),
              width);
}

// The step's time, kernels, host, throughput, FLOPs and memory, one line each.
void write_training_summary(std::ostream& out, const json& t, size_t width) {
  // An ONNX graph has samples, no sequence and no SDPA of its own (seq 0).
  bool graph = t.at("seq").get<int64_t>() == 0;
  write_training_time(out, t, graph, width);
  write_training_size(out, t, graph, width);
}

// Memory through the step: its edges, the first and last layer each way, and the peak.
void write_training_memory(std::ostream& out, const json& t, size_t width) {
  const bool wide = width >= 100;
  out << '\n'
      << wrap("",
              fmt::format("Memory through the step (cuBLAS workspaces {} in every moment{})",
                          gib(t.at("timeline").at(0).at("workspace")),
                          wide ? "" : "; state: weights + grads + optimizer"),
              width);
  if (wide)
    fmt::print(out, "  {:<28}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n", "moment", "total",
               "weights", "grads", "optimizer", "autocast", "saved", "transient");
  else  // compact: the model state in one column
    fmt::print(out, "  {:<{}}{:>9}{:>9}{:>9}{:>9}{:>9}\n", "moment", width - 47, "total", "state",
               "autocast", "saved", "transient");
  // The step's edges, the first and last layer each way, and the peak.
  const json& tl = t.at("timeline");
  auto layer_of = [](const std::string& name) {
    size_t at = name.find(", layer ");
    return at == std::string::npos ? -1 : std::atoi(name.c_str() + at + 8);
  };
  int last = 0;
  for (const json& m : tl) last = std::max(last, layer_of(m.at("moment").get<std::string>()));
  for (const json& m : tl) {
    std::string name = m.at("moment").get<std::string>();
    int layer = layer_of(name);
    if (layer > 0 && layer < last && m.at("moment") != t.at("peak_moment")) continue;
    if (wide)
      fmt::print(out, "  {:<28}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n", fit(name, 28),
                 gib(m.at("total")), gib(m.at("weights")), gib(m.at("grads")),
                 gib(m.at("optimizer_states")), gib(m.at("autocast_copies")),
                 gib(m.at("saved_activations")), gib(m.at("transient")));
    else
      fmt::print(out, "  {:<{}}{:>9}{:>9}{:>9}{:>9}{:>9}\n", fit(name, width - 47), width - 47,
                 gib(m.at("total")),
                 human_bytes(m.at("weights").get<double>() + m.at("grads").get<double>() +
                             m.at("optimizer_states").get<double>()),
                 gib(m.at("autocast_copies")), gib(m.at("saved_activations")),
                 gib(m.at("transient")));
  }
}

}  // namespace

void write_training(std::ostream& out, const json& r, int top_n, size_t width, bool fold) {
  const json& t = r.at("training");
  write_training_header(out, t);
  write_training_table(out, t, training_rows(t, fold), top_n, width);
  write_training_summary(out, t, width);
  write_training_memory(out, t, width);
}

}  // namespace rooflens::reports
