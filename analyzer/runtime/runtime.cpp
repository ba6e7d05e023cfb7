#include "analyzer/runtime/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/host_queue.hpp"
#include "analyzer/training/eager_forward.hpp"

namespace rooflens {

RuntimeMode parse_runtime_mode(const std::string& name) {
  if (name == "eager") return RuntimeMode::eager;
  if (name == "graphs") return RuntimeMode::graphs;
  throw InputError(fmt::format("--runtime {}: expected eager or graphs", name));
}

std::string_view runtime_mode_name(RuntimeMode m) {
  return m == RuntimeMode::eager ? "eager" : "graphs";
}

namespace {

// The inference host costs of the device profile, or nullptr where it has none.
const EagerHostCosts* host_costs(const Device& d) {
  return d.eager_host && d.eager_host->inference_measured() ? &*d.eager_host : nullptr;
}

// One forward (prefill) or decode step of lowering `l` (its graph `g`, analysis `a`) through the
// host queue.
RuntimeStep queue_step(const TransformerConfig& c, const LoweringOptions& l, const Graph& g,
                       const Analysis& a, Workload w, RuntimeMode mode) {
  const Device& device = a.device;
  training::KvAppend kv = w != Workload::decode        ? training::KvAppend::none
                          : mode == RuntimeMode::eager ? training::KvAppend::dynamic
                                                       : training::KvAppend::fixed;
  std::vector<std::vector<double>> kernels =
      training::eager_forward_kernels(c, l, g, a, device, kv);
  const EagerHostCosts* h = mode == RuntimeMode::eager ? host_costs(device) : nullptr;
  double per_kernel = 0;
  HostQueue q;
  if (h) {
    bool prefill = w == Workload::prefill;
    q.host_only(prefill ? h->inference_prefill_fixed_s : h->inference_decode_fixed_s);
    per_kernel = prefill ? h->inference_prefill_kernel_s : h->inference_decode_kernel_s;
  }
  for (const auto& node : kernels)
    for (double gpu_s : node) q.issue(gpu_s, per_kernel);
  RuntimeStep s;
  s.wall_s = q.gpu();
  s.gpu_busy_s = q.busy();
  s.host_s = q.host();
  s.kernels = q.kernels();
  return s;
}

// A prefill or decode step lowered and analyzed, then queued; `analysis` receives its analysis.
RuntimeStep run_step(const TransformerConfig& c, TransformerOptions o, Workload w, RuntimeMode mode,
                     Analysis& analysis) {
  o.workload = w;
  Graph g;
  analysis = analyze_transformer(c, o, &g);
  return queue_step(c, o.lowering, g, analysis, w, mode);
}

// generate(): the prompt's prefill, then a decode step per new token after the first. A decode
// step's GPU time grows with the context (the sweep's per-step times); in a host-bound step that
// growth first fills the time the GPU waited on the host.
void generate(const TransformerConfig& c, const TransformerOptions& o, RuntimeMode mode,
              const Analysis& whole, const Graph& prompt_graph, RuntimeSummary& r) {
  LoweringOptions prompt = o.lowering;  // the whole analysis's main graph: the prompt's prefill
  prompt.seq = o.prompt;
  r.prefill = queue_step(c, prompt, prompt_graph, whole, Workload::prefill, mode);
  TransformerOptions dopt = o;
  dopt.lowering.context = o.prompt;
  Analysis decode_analysis;
  r.step = run_step(c, dopt, Workload::decode, mode, decode_analysis);
  const GenerationSweep& sweep = *whole.transformer->generation;
  r.gen = sweep.gen;
  const EagerHostCosts* h = mode == RuntimeMode::eager ? host_costs(whole.device) : nullptr;
  double per_token = h ? h->inference_generate_token_s : 0;
  double idle = std::max(0.0, r.step.wall_s - r.step.gpu_busy_s);
  double first = sweep.step_s.empty() ? 0 : sweep.step_s.front();
  double total = r.prefill->wall_s + per_token;
  for (double step : sweep.step_s)
    total += r.step.wall_s + std::max(0.0, step - first - idle) + per_token;
  r.generate_wall_s = total;
  r.tokens_per_s = total > 0 ? static_cast<double>(o.lowering.batch * sweep.gen) / total : 0;
}

}  // namespace

Analysis analyze_runtime(const TransformerConfig& c, const TransformerOptions& o,
                         RuntimeMode mode) {
  auto r = std::make_shared<RuntimeSummary>();
  r->mode = mode;
  r->workload = std::string(workload_name(o.workload));
  Analysis a;
  if (o.workload == Workload::generate) {
    Graph prompt_graph;
    a = analyze_transformer(c, o, &prompt_graph);
    generate(c, o, mode, a, prompt_graph, *r);
  } else {
    r->step = run_step(c, o, o.workload, mode, a);
  }
  const EagerHostCosts* h = host_costs(a.device);
  r->host_modelled = mode == RuntimeMode::graphs || h != nullptr;
  r->source = mode == RuntimeMode::graphs ? "one graph launch a step: no host time between kernels"
              : h                         ? h->inference_source
                                          : fmt::format(
                                                "the host is not modelled: {} has no measured inference host costs "
                                                                        "(a device profile with eager_host.inference_* does)",
                                                a.device.id);
  a.runtime = r;
  return a;
}

}  // namespace rooflens
