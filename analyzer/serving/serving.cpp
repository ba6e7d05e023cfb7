#include "analyzer/serving/serving.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/link_model.hpp"
#include "analyzer/hw/perf_model.hpp"
#include "analyzer/serving/step_cost.hpp"

namespace rooflens {
namespace {

constexpr int64_t kMaxServeRequests = 1'000'000;
constexpr double kMaxServeOutputTokens = 5e7;

int64_t parse_positive(const std::string& flag, const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v <= 0)
    throw InputError(fmt::format("{} {}: expected a positive integer", flag, text));
  if (v > (int64_t{1} << 40))
    throw InputError(fmt::format("{} {}: beyond the limit 2^40 tokens", flag, text));
  return v;
}

void check_plan(const TransformerConfig& c, const ServeOptions& o) {
  if (o.pp < 1 || o.dp < 1 || o.ep < 1)
    throw InputError("serve: --pp, --dp and --ep must be at least 1");
  if (c.layers % o.pp != 0)
    throw InputError(
        fmt::format("serve: --pp {} does not divide the model's {} layers", o.pp, c.layers));
  if (o.ep > 1) {
    if (c.experts <= 0)
      throw InputError(fmt::format(
          "serve: --ep {} needs a mixture-of-experts model; {} has no experts", o.ep, c.path));
    if (c.experts % o.ep != 0)
      throw InputError(
          fmt::format("serve: --ep {} does not divide the model's {} experts", o.ep, c.experts));
    if (o.ep != o.lowering.tp && o.lowering.tp != 1)
      throw InputError(fmt::format(
          "serve: --ep {} with --tp {}: --ep equals --tp (experts spread over the tensor-parallel "
          "group) or comes with --tp 1 (attention data-parallel, experts spread by all-to-all)",
          o.ep, o.lowering.tp));
    if (o.attention_dp() && o.pp > 1)
      throw InputError(
          "serve: --ep with --tp 1 (attention data parallelism) and --pp is not modelled");
  }
  validate_lowering(c, o.lowering);  // --tp against heads, KV heads and the FFN
}

// Expected busiest / mean load of `groups` expert groups when `assignments` token-expert pairs
// fall uniformly: the mean plus sqrt(2 ln groups) standard deviations of a binomial count (the
// Gaussian estimate of the maximum of `groups` draws).
double routing_imbalance(double assignments, int64_t groups) {
  if (groups <= 1 || assignments <= 0) return 1;
  double g = static_cast<double>(groups), mean = assignments / g;
  double sd = std::sqrt(assignments * (1 / g) * (1 - 1 / g));
  return std::min(g, 1 + sd * std::sqrt(2 * std::log(g)) / mean);
}

struct Deployment {
  StepCostModel& model;
  const ServeOptions& o;
  const TransformerConfig& c;
  int64_t act_bytes = 2;

  double step_seconds(const StepShape& s) const { return rank_seconds(s, -1) + o.step_overhead_s; }

  // Attention data parallelism: the ranks step together. Each rank's attention, projections and
  // all-to-alls are its own shape's; its experts take every rank's tokens routed to them, the
  // mean over the ranks (idle ones included) times the busiest group's excess; the step lasts
  // as long as the slowest rank.
  double lockstep_seconds(const std::vector<StepShape>& shapes) const {
    int64_t total = 0;
    for (const StepShape& s : shapes) total += s.tokens();
    int64_t mean = (total + o.ep - 1) / o.ep;
    double slowest = 0;
    for (const StepShape& s : shapes) slowest = std::max(slowest, rank_seconds(s, mean));
    return slowest + o.step_overhead_s;
  }

  // One GPU's step; expert_tokens >= 0: its experts work on that many tokens (attention DP).
  double rank_seconds(const StepShape& s, int64_t expert_tokens) const {
    StepTime t = model.cost(s);
    double gpu = t.gpu_s;
    int64_t tokens = s.tokens();
    if (expert_tokens >= 0 && t.moe_s > 0) {
      double moe = model.moe_seconds(expert_tokens);
      double assignments = static_cast<double>(expert_tokens * o.ep * c.experts_per_token);
      gpu += moe * routing_imbalance(assignments, o.ep) - t.moe_s;
    } else if (o.ep > 1 && t.moe_s > 0) {
      gpu += t.moe_s *
             (routing_imbalance(static_cast<double>(tokens * c.experts_per_token), o.ep) - 1);
    }
    // Sequence parallelism: every all-reduce of the TP group becomes a reduce-scatter and an
    // all-gather of the same tensor (the norms between them run on 1/tp of the tokens: not
    // credited here).
    if (o.sp && o.lowering.tp > 1 && t.allreduces > 0) {
      int64_t each = static_cast<int64_t>(t.allreduce_bytes / t.allreduces);
      const Device& dev = model.device();
      gpu +=
          t.allreduces * (collective_seconds(Collective::reduce_scatter, each, o.lowering.tp, dev) +
                          collective_seconds(Collective::all_gather, each, o.lowering.tp, dev)) -
          t.allreduce_s;
    }
    // Pipeline stages hand the step's activations on: pp - 1 sends of tokens x hidden. Stages
    // fill a node (tp x pp GPUs in order); a boundary between nodes sends through the network.
    if (o.pp > 1) {
      const Device& dev = model.device();
      int64_t bytes = tokens * c.hidden * act_bytes, across = 0;
      if (const ScaleOut* so = scale_out_of(dev); so && o.lowering.tp * o.pp > so->gpus_per_node)
        across = (o.lowering.tp * o.pp - 1) / std::max(so->gpus_per_node, o.lowering.tp);
      across = std::min(across, o.pp - 1);
      gpu += static_cast<double>(o.pp - 1 - across) *
                 collective_seconds(Collective::send_recv, bytes, 2, dev) +
             static_cast<double>(across) * send_between_nodes(bytes, dev);
    }
    // --cuda-graphs off: the host launches every kernel of every step; where the device profile
    // measured eager PyTorch's host time per kernel (eager_host, transformers' modules), a step is
    // never shorter than that. With graphs on, the steps the engine does not capture (prefill
    // chunks, large batches) are taken to keep the GPU busy: their kernels are large, and the
    // engines' launch paths are not the one eager_host measured.
    if (!o.cuda_graphs && model.device().eager_host)
      gpu = std::max(gpu,
                     static_cast<double>(t.kernels) * model.device().eager_host->forward_kernel_s);
    return gpu;
  }
};

std::vector<Request> make_requests(const ServeOptions& o, int64_t n, double rate, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Request> r(static_cast<size_t>(n));
  std::exponential_distribution<double> gap(rate > 0 ? rate : 1.0);
  double t = 0;
  for (Request& q : r) {
    q.prompt = o.isl.lo == o.isl.hi
                   ? o.isl.lo
                   : std::uniform_int_distribution<int64_t>(o.isl.lo, o.isl.hi)(rng);
    q.output = o.osl.lo == o.osl.hi
                   ? o.osl.lo
                   : std::uniform_int_distribution<int64_t>(o.osl.lo, o.osl.hi)(rng);
    if (rate > 0) {
      t += gap(rng);
      q.arrival_s = t;
    }
  }
  return r;
}

ServingStats summarize(const std::vector<SimulationResult>& runs, int64_t gpus, int64_t concurrency,
                       double rate) {
  ServingStats s;
  s.concurrency = concurrency;
  s.rate = rate;
  std::vector<double> ttft, tpot, e2e;
  int64_t tokens = 0;
  double makespan = 0, step_s = 0, decode_seqs = 0;
  int64_t steps = 0;
  double first_arrival = 1e300, last_arrival = 0;
  for (const SimulationResult& r : runs) {
    for (const RequestResult& q : r.requests) {
      ttft.push_back(q.ttft());
      if (q.output > 1) tpot.push_back(q.tpot());
      e2e.push_back(q.e2e());
      tokens += q.output;
      first_arrival = std::min(first_arrival, q.arrival_s);
      last_arrival = std::max(last_arrival, q.arrival_s);
    }
    makespan = std::max(makespan, r.makespan_s);
    s.preemptions += r.preemptions;
    s.max_running += r.max_running;
    s.mixed_steps += r.mixed_steps;
    s.prefill_only_steps += r.prefill_only_steps;
    s.decode_only_steps += r.decode_only_steps;
    step_s += r.step_seconds, decode_seqs += r.decode_seqs, steps += r.step_count;
  }
  auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0
                     : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  s.requests = static_cast<int64_t>(e2e.size());
  s.ttft_mean_s = mean(ttft), s.ttft_p50_s = percentile(ttft, 50),
  s.ttft_p99_s = percentile(ttft, 99);
  s.tpot_mean_s = mean(tpot), s.tpot_p50_s = percentile(tpot, 50),
  s.tpot_p99_s = percentile(tpot, 99);
  s.e2e_latency_mean_s = mean(e2e);
  s.throughput_tokens_per_s = makespan > 0 ? static_cast<double>(tokens) / makespan : 0;
  s.throughput_tokens_per_s_per_gpu = s.throughput_tokens_per_s / static_cast<double>(gpus);
  s.requests_per_s = makespan > 0 ? static_cast<double>(s.requests) / makespan : 0;
  s.mean_step_s = steps > 0 ? step_s / static_cast<double>(steps) : 0;
  s.mean_decode_batch = steps > 0 ? decode_seqs / static_cast<double>(steps) : 0;
  // Open loop: when completions fall behind the arrivals the queue, and with it each request's
  // wait, grows with time; a stable queue's wait does not. The least-squares slope of TTFT over
  // arrival time is the growth (seconds of wait per second of arrivals; offered/served - 1 for an
  // overloaded queue); above 0.05 the queue is taken to grow without bound.
  if (rate > 0 && last_arrival > first_arrival) {
    double n = 0, mx = 0, my = 0, sxx = 0, sxy = 0;
    for (const SimulationResult& r : runs)
      for (const RequestResult& q : r.requests) n += 1, mx += q.arrival_s, my += q.ttft();
    mx /= n, my /= n;
    for (const SimulationResult& r : runs)
      for (const RequestResult& q : r.requests) {
        sxx += (q.arrival_s - mx) * (q.arrival_s - mx);
        sxy += (q.arrival_s - mx) * (q.ttft() - my);
      }
    s.wait_growth = sxx > 0 ? sxy / sxx : 0;
    s.sustainable = s.wait_growth <= 0.05;
  }
  return s;
}

}  // namespace

LengthSpec parse_length(const std::string& flag, const std::string& text) {
  if (text.rfind("uniform:", 0) == 0) {
    std::string rest = text.substr(8);
    auto colon = rest.find(':');
    if (colon == std::string::npos)
      throw InputError(fmt::format("{} {}: expected uniform:LO:HI", flag, text));
    LengthSpec s{parse_positive(flag, rest.substr(0, colon)),
                 parse_positive(flag, rest.substr(colon + 1))};
    if (s.lo > s.hi) throw InputError(fmt::format("{} {}: LO above HI", flag, text));
    return s;
  }
  int64_t v = parse_positive(flag, text);
  return {v, v};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t i = static_cast<size_t>(std::floor(pos));
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - static_cast<double>(i));
}

namespace {

void check_serve_options(const TransformerConfig& c, const ServeOptions& o) {
  check_plan(c, o);
  if (o.sp && o.lowering.tp < 2)
    throw InputError(
        "serve: --sp splits the tensor-parallel group's all-reduces: it needs --tp 2 or more");
  if ((o.concurrency > 0) == (o.rate > 0) && o.sweep.empty())
    throw InputError("serve: give one of --concurrency N (closed loop) or --rate R (open loop)");
  if (o.rate < 0 || o.concurrency < 0 || o.num_requests < 0)
    throw InputError("serve: --rate, --concurrency and --num-requests must not be negative");
  if (o.rate != 0 && !(std::isfinite(o.rate) && o.rate >= 1e-6 && o.rate <= 1e9))
    throw InputError(
        fmt::format("serve: --rate {}: expected 1e-6 to 1e9 requests per second", o.rate));
  if (o.engine.max_batched_tokens <= 0 || o.engine.block_size <= 0 || o.engine.max_seqs < 0)
    throw InputError("serve: the token budget and the block size must be positive");
}

// Memory per GPU: its 1/pp of the (tp-sharded) weights, the activations of the largest step,
// and the cache in what the engine's fraction leaves.
MemoryPlanPerGpu plan_memory(const TransformerConfig& c, const ServeOptions& o,
                             StepCostModel& model, const Device& device) {
  MemoryPlanPerGpu m;
  m.device_bytes = device.memory_bytes;
  m.weight_bytes = model.weight_bytes() / o.pp;
  m.activation_bytes = model.activation_peak_bytes(o.engine.max_batched_tokens);
  m.kv_bytes_per_token = kv_cache_bytes_per_token(c, o.lowering) / o.pp;
  if (!c.causal)
    throw InputError(fmt::format("serve: {} is an encoder ({}): it generates no tokens to serve",
                                 c.path, c.model_type));
  if (m.kv_bytes_per_token <= 0)
    throw InputError(
        fmt::format("serve: {} keeps no per-token KV cache (recurrent state only): block admission "
                    "does not apply",
                    c.path));
  double total = static_cast<double>(m.device_bytes), frac = o.engine.memory_fraction;
  double kv = 0;
  switch (o.engine.fraction_of) {
    case CacheFractionOf::device_total:
      kv = frac * total - static_cast<double>(m.weight_bytes + m.activation_bytes);
      break;
    case CacheFractionOf::device_total_static:
      kv = frac * total - static_cast<double>(m.weight_bytes);
      break;
    case CacheFractionOf::free_after_model:
      kv = frac * (total - static_cast<double>(m.weight_bytes + m.activation_bytes));
      break;
  }
  if (kv <= 0)
    throw InputError(
        fmt::format("serve: no memory left for the KV cache: {:.1f} GB of weights and {:.1f} GB of "
                    "activations per GPU "
                    "against {:.2f} x {:.1f} GB (add GPUs with --tp/--pp, or quantize)",
                    static_cast<double>(m.weight_bytes) / 1e9,
                    static_cast<double>(m.activation_bytes) / 1e9, frac, total / 1e9));
  m.kv_bytes = static_cast<int64_t>(kv);
  return m;
}

// The attention layers grouped by how many of a sequence's tokens their cache keeps (transformers'
// caches: cached_tokens), for the scheduler's block count (KvFootprint); empty where the engine
// sizes every layer at the full context or no layer is windowed. A model with chunked attention
// keeps every token: vLLM turns its hybrid manager off there.
std::vector<KvLayerGroup> kv_layer_groups(const TransformerConfig& c, const EngineDefaults& e) {
  constexpr int64_t kEvery = int64_t{1} << 40;
  std::vector<KvLayerGroup> groups;
  bool chunked = std::any_of(c.layer_specs.begin(), c.layer_specs.end(),
                             [](const LayerSpec& l) { return l.chunk > 0; });
  if (!e.windowed_blocks || chunked) return groups;
  for (int64_t i = 0; i < c.layers; ++i) {
    if (c.layer_specs[static_cast<size_t>(i)].mixer != MixerKind::attention) continue;
    int64_t kept = cached_tokens(c, i, kEvery);
    int64_t keep = kept >= kEvery ? 0 : std::max<int64_t>(kept, 1);
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const KvLayerGroup& x) { return x.keep == keep; });
    if (g == groups.end())
      groups.push_back({keep, 1});
    else
      ++g->layers;
  }
  if (groups.size() == 1 && groups[0].keep == 0) groups.clear();  // no window: blocks as tokens
  return groups;
}

// The scheduler's knobs from the engine's and the cache's blocks; each of the pp batches in
// flight holds its share of them. Fills the result's cache figures.
SchedulerKnobs scheduler_knobs(const TransformerConfig& c, const ServeOptions& o, ServeResult& r) {
  const MemoryPlanPerGpu& m = r.memory;
  const int64_t engines_per_replica = o.pp;
  SchedulerKnobs k;
  k.max_batched_tokens = o.engine.max_batched_tokens;
  k.block_size = o.engine.block_size;
  k.chunked_prefill = o.engine.chunked_prefill;
  k.reserve_full_output = o.engine.reserve_full_output;
  k.kv_layers = kv_layer_groups(c, o.engine);
  KvFootprint footprint{k.block_size, k.kv_layers};
  int64_t blocks_per_gpu = m.kv_bytes / (m.kv_bytes_per_token * k.block_size);
  k.kv_blocks = blocks_per_gpu / engines_per_replica;
  k.max_seqs = o.engine.max_seqs > 0 ? std::max<int64_t>(1, o.engine.max_seqs / engines_per_replica)
                                     : k.kv_blocks * k.block_size;
  r.kv_blocks = k.kv_blocks;
  r.kv_capacity_tokens = blocks_per_gpu * k.block_size;
  int64_t mean_prompt = static_cast<int64_t>(std::ceil(o.isl.mean()));
  int64_t per_seq_blocks = footprint.peak_blocks(
      mean_prompt, static_cast<int64_t>(std::ceil(o.isl.mean() + o.osl.mean())),
      k.max_batched_tokens);
  r.max_concurrency_without_preemption =
      std::min(k.kv_blocks / std::max<int64_t>(per_seq_blocks, 1), k.max_seqs) *
      engines_per_replica * o.dp * o.lockstep_ranks();
  int64_t longest = o.isl.hi + o.osl.hi;
  int64_t longest_blocks = footprint.peak_blocks(longest - 1, longest, k.max_batched_tokens);
  if (k.kv_blocks < longest_blocks)
    throw InputError(
        fmt::format("serve: the KV budget is below one sequence: {} tokens of cache per scheduler, "
                    "a sequence of {} + {} "
                    "tokens needs {}",
                    k.kv_blocks * k.block_size, o.isl.hi, o.osl.hi, longest_blocks * k.block_size));
  return k;
}

// One load point (a closed loop of `concurrency` or an open loop at `rate`) over every scheduler
// of the deployment (pp x dp), the requests dealt among them; the first run's steps become the
// result's timeline when `keep_timeline`.
ServingStats run_point(const ServeOptions& o, const SchedulerKnobs& k, const StepSeconds& f,
                       const LockstepSeconds& lockstep, int64_t concurrency, double rate,
                       bool keep_timeline, ServeResult& r) {
  const int64_t ranks = o.lockstep_ranks();
  const int64_t engines = o.pp * o.dp * ranks;
  if (concurrency > kMaxServeRequests)
    throw InputError(
        fmt::format("serve: concurrency {} exceeds the simulation's limit of {} requests",
                    concurrency, kMaxServeRequests));
  int64_t n = o.num_requests > 0 ? o.num_requests
              : rate > 0         ? 256
                                 : std::max<int64_t>(32, 8 * concurrency);
  // A step per output token at worst: bound the work so that no input makes the run hang.
  if (n > kMaxServeRequests ||
      static_cast<double>(n) * static_cast<double>(o.osl.hi) > kMaxServeOutputTokens)
    throw InputError(
        fmt::format("serve: {} requests of up to {} output tokens exceed the simulation's limits "
                    "({} requests, {:.0e} "
                    "output tokens a run)",
                    n, o.osl.hi, kMaxServeRequests, kMaxServeOutputTokens));
  std::vector<SimulationResult> runs;
  std::vector<ServingWorkload> group;  // the ranks of one replica that step together
  for (int64_t e = 0; e < engines; ++e) {
    ServingWorkload w;
    int64_t share_n = n / engines + (e < n % engines ? 1 : 0);
    bool idles = share_n == 0;
    if (concurrency > 0) {
      w.concurrency = concurrency / engines + (e < concurrency % engines ? 1 : 0);
      idles = idles || w.concurrency == 0;  // more schedulers than requests in flight
    }
    if (!idles)
      w.requests = make_requests(o, share_n, rate > 0 ? rate / static_cast<double>(engines) : 0,
                                 o.seed + static_cast<uint64_t>(e));
    if (ranks > 1) {
      if (!idles) group.push_back(std::move(w));
      if ((e + 1) % ranks != 0) continue;
      if (!group.empty())
        for (SimulationResult& s : simulate_lockstep(group, k, lockstep))
          runs.push_back(std::move(s));
      group.clear();
    } else {
      if (idles) continue;
      runs.push_back(simulate(w, k, f));
    }
    if (keep_timeline && r.timeline.empty() && !runs.empty()) {
      const auto& steps = runs.front().steps;
      r.timeline.assign(steps.begin(), steps.end());
    }
  }
  return summarize(runs, r.gpus, concurrency, rate);
}

std::string expert_kernel_note(ExpertKernel wanted, const ServeResult& r) {
  auto what = [](ExpertKernel k) -> std::string {
    switch (k) {
      case ExpertKernel::fused:
        return "the Triton fused-MoE kernel (the profile's moe_fused tables, "
               "scripts/gpu/fused_moe_triton.py)";
      case ExpertKernel::grouped:
        return "CUTLASS grouped GEMMs (the profile's moe_grouped tables, PyTorch's "
               "torch._grouped_mm)";
      case ExpertKernel::batched:
        return "the replay's batched GEMMs (the profile's moe tables, or the GEMM table and the "
               "weights at the measured bandwidth)";
    }
    return "";
  };
  std::string note = "MoE experts priced as " + what(r.expert_kernel_priced);
  if (wanted != r.expert_kernel_priced)
    note += fmt::format(": the engine runs {}, which this profile has no table of", what(wanted));
  return note;
}

// What the cache of a model with windowed layers holds, as the engine allocates it.
std::string windowed_cache_note(const TransformerConfig& c, const ServeOptions& o,
                                const ServeResult& r) {
  int64_t windowed = 0, chunked = 0;
  for (const LayerSpec& l : c.layer_specs)
    if (l.mixer == MixerKind::attention) windowed += l.window > 0, chunked += l.chunk > 0;
  if (windowed == 0 && chunked == 0) return "";
  int64_t prompt = static_cast<int64_t>(std::ceil(o.isl.mean()));
  int64_t tokens = static_cast<int64_t>(std::ceil(o.isl.mean() + o.osl.mean()));
  KvFootprint f{r.knobs.block_size, r.knobs.kv_layers};
  int64_t held = f.peak_blocks(prompt, tokens, r.knobs.max_batched_tokens);
  int64_t every = KvFootprint{r.knobs.block_size, {}}.peak_blocks(prompt, tokens, 1);
  if (f.windowed() && held == every)
    return fmt::format(
        "{} of {} attention layers keep a sliding window longer than a sequence of {} tokens: "
        "{} frees none of their blocks",
        windowed, c.attention_layers(), tokens, o.engine.name);
  if (f.windowed())
    return fmt::format(
        "{} of {} attention layers keep a sliding window: a sequence of {} + {} tokens holds at "
        "most {} KV blocks of {} tokens, not {} ({} frees the blocks that leave the window)",
        windowed, c.attention_layers(), prompt, tokens - prompt, held, r.knobs.block_size, every,
        o.engine.name);
  if (chunked > 0 && o.engine.windowed_blocks)
    return fmt::format(
        "{} of {} attention layers are chunked: vLLM's hybrid KV-cache manager is off for chunked "
        "attention, so every layer's cache is sized at the full context",
        chunked, c.attention_layers());
  return fmt::format(
      "{} of {} attention layers are windowed; {}'s own pools for them are not modelled "
      "(SGLang keeps gpt-oss's and Llama 4's windowed layers in a pool of 0.8 x the full "
      "layers' tokens; TensorRT-LLM gives each window size an equal share of the cache): every "
      "layer's cache is sized at the full context",
      windowed + chunked, c.attention_layers(), o.engine.name);
}

void add_serve_notes(const TransformerConfig& c, const ServeOptions& o, const Device& device,
                     ServeResult& r) {
  if (o.ep > 1) {
    double tokens = r.stats.mean_decode_batch > 0 ? r.stats.mean_decode_batch : 1;
    // Attention DP: the mean decode batch is one rank's; the experts see every rank's tokens.
    if (o.attention_dp()) tokens *= static_cast<double>(o.ep);
    r.moe_imbalance = routing_imbalance(tokens * static_cast<double>(c.experts_per_token), o.ep);
    r.notes.push_back(
        fmt::format("--ep {}: expert GPUs wait for the busiest under uniform routing (x{:.2f} of "
                    "the MoE time at the mean "
                    "decode batch)",
                    o.ep, r.moe_imbalance));
  }
  if (o.attention_dp())
    r.notes.push_back(fmt::format(
        "--ep {} --tp 1: attention data-parallel over {} GPUs (each its own scheduler, requests "
        "and KV cache; every attention weight on each), {} of {} experts a GPU, every MoE layer's "
        "tokens dispatched and combined by all-to-alls; the ranks step together, each step as "
        "long as the slowest rank's",
        o.ep, o.ep, c.experts / o.ep, c.experts));
  if (c.experts > 0) r.notes.push_back(expert_kernel_note(o.engine.expert_kernel, r));
  int64_t group = o.attention_dp() ? o.ep : o.lowering.tp;  // the GPUs one collective spans
  const ScaleOut* so = scale_out_of(device);
  if (so && group > so->gpus_per_node)
    r.notes.push_back(fmt::format(
        "{} GPUs in one collective span {} nodes of {}: their collectives cross the network "
        "({:.0f} GB/s a GPU; data/collectives.json scale_out)",
        group, (group + so->gpus_per_node - 1) / so->gpus_per_node, so->gpus_per_node,
        so->nic_bandwidth / 1e9));
  else if (so && o.lowering.tp * o.pp > so->gpus_per_node)
    r.notes.push_back(fmt::format(
        "{} pipeline stages of {} GPUs span nodes of {}: the stage boundaries between nodes send "
        "through the network ({:.0f} GB/s a GPU)",
        o.pp, o.lowering.tp, so->gpus_per_node, so->nic_bandwidth / 1e9));
  if (o.rate > 0 && !r.stats.sustainable)
    r.notes.push_back(
        fmt::format("{:.2f} requests/s offered: the wait grows {:.2f} s per s of arrivals, the "
                    "queue grows without "
                    "bound (the deployment completed {:.2f} requests/s over the run)",
                    o.rate, r.stats.wait_growth, r.stats.requests_per_s));
  if (!o.cuda_graphs && !device.eager_host)
    r.notes.push_back(
        "--cuda-graphs off: the device has no measured host time per kernel (a device profile with "
        "eager_host adds it); "
        "steps are costed as their kernels");
  if (std::string w = windowed_cache_note(c, o, r); !w.empty()) r.notes.push_back(w);
  if (int64_t limit = c.context_limit(); limit > 0 && o.isl.hi + o.osl.hi > limit)
    r.notes.push_back(fmt::format(
        "{} + {} tokens exceed the model's context limit {}: an engine would refuse such requests",
        o.isl.hi, o.osl.hi, limit));
}

}  // namespace

ServeResult run_serve(const TransformerConfig& c, const ServeOptions& o,
                      std::shared_ptr<const Device> device) {
  check_serve_options(c, o);
  ServeResult r;
  r.model = c.path;
  r.gpus = o.lowering.tp * o.pp * o.dp * o.lockstep_ranks();
  auto engine_device = std::make_shared<Device>(*device);
  // small all-reduces take the engines' one-shot/two-shot kernels
  engine_device->engine_collectives = true;
  // MoE experts run the engine's kernel (a row count per expert, not the replay's equal rows):
  // its tables where the profile has them.
  ExpertTables experts = with_expert_kernel(engine_device->perf, o.engine.expert_kernel);
  engine_device->perf = experts.db;
  r.expert_kernel_priced = experts.priced;
  engine_device->engine_routing = true;
  LoweringOptions lowering = o.lowering;
  if (o.attention_dp()) lowering.ep = o.ep;  // one GPU's share: its sequences, its experts
  StepCostModel model(c, lowering, engine_device);
  r.memory = plan_memory(c, o, model, *device);
  SchedulerKnobs knobs = scheduler_knobs(c, o, r);
  r.knobs = knobs;
  Deployment d{model, o, c, storage_bytes(o.lowering.activations, 1)};
  StepSeconds f = [&d](const StepShape& s) { return d.step_seconds(s); };
  LockstepSeconds lockstep = [&d](const std::vector<StepShape>& s) {
    return d.lockstep_seconds(s);
  };
  if (o.concurrency > 0 || o.rate > 0)
    r.stats = run_point(o, knobs, f, lockstep, o.concurrency, o.rate, true, r);
  for (int64_t n : o.sweep) {
    if (n <= 0)
      throw InputError(fmt::format("--sweep-concurrency {}: concurrencies must be positive", n));
    r.sweep.push_back(run_point(o, knobs, f, lockstep, n, 0, r.timeline.empty(), r));
  }
  add_serve_notes(c, o, *device, r);
  r.cost_grid_points = model.grid_points();
  return r;
}

}  // namespace rooflens
