#include "analyzer/serving/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>

#include "analyzer/core/errors.hpp"

namespace rooflens {
namespace {

int64_t blocks_for(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

// A request inside the engine. `computed` tokens have KV in the cache; prompt + generated are
// known; a step brings computed up to known (the prompt, a chunk of it, or the last sampled
// token) and samples the next token once they meet.
struct Sequence {
  int64_t computed = 0, generated = 0, blocks = 0;
  bool started = false;
};

class Engine {
 public:
  Engine(const ServingWorkload& w, const SchedulerKnobs& k, const StepSeconds& f)
      : w_(w), k_(k), footprint_{k.block_size, k.kv_layers}, step_seconds_(f) {
    seqs_.resize(w.requests.size());
    out_.requests.resize(w.requests.size());
  }

  SimulationResult run() {
    start();
    while (!finished()) {
      admit_arrivals();
      if (idle()) {
        now_ = std::max(now_, next_arrival());  // idle until the next arrival
        continue;
      }
      Planned p = plan();
      commit(p, step_seconds_(p.shape));
    }
    return result();
  }

  // The pieces run() is made of, for engines that step together (simulate_lockstep).
  struct Scheduled {
    size_t id;
    int64_t tokens;
  };
  struct Planned {
    std::vector<Scheduled> batch;
    StepShape shape;
  };

  void start() {
    check_feasible();
    size_t n = w_.requests.size();
    if (w_.concurrency > 0)
      while (issued_ < n && issued_ < static_cast<size_t>(w_.concurrency)) arrive(issued_++, 0.0);
  }
  bool finished() const { return finished_ >= w_.requests.size(); }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  // Open loop: the next request's arrival (the clock jumps there when every engine is idle).
  double next_arrival() const {
    return issued_ < w_.requests.size() && w_.concurrency <= 0
               ? w_.requests[issued_].arrival_s
               : std::numeric_limits<double>::infinity();
  }
  void admit_arrivals() {
    size_t n = w_.requests.size();
    if (w_.concurrency <= 0)
      while (issued_ < n && w_.requests[issued_].arrival_s <= now_)
        arrive(issued_, w_.requests[issued_].arrival_s), ++issued_;
  }
  double now() const { return now_; }
  void wait_until(double t) { now_ = std::max(now_, t); }
  SimulationResult result() {
    double first =
        w_.requests.empty() ? 0 : (w_.concurrency > 0 ? 0 : w_.requests.front().arrival_s);
    out_.makespan_s = last_finish_ - first;
    return std::move(out_);
  }

 private:
  void check_feasible() const {
    for (const Request& r : w_.requests) {
      if (r.prompt <= 0 || r.output <= 0)
        throw InputError("serve: every request needs a prompt and an output of at least one token");
      // A preempted sequence is prefilled again with what it generated: up to all but its last
      // token in one chunk of the budget (vLLM's own worst case for a windowed layer).
      int64_t total = r.prompt + r.output;
      int64_t need = footprint_.peak_blocks(total - 1, total, k_.max_batched_tokens);
      if (need > k_.kv_blocks)
        throw InputError(fmt::format(
            "serve: one sequence of {} + {} tokens needs {} KV blocks of {} tokens; the cache "
            "holds {} "
            "({} tokens): the KV budget is below one sequence",
            r.prompt, r.output, need, k_.block_size, k_.kv_blocks, k_.kv_blocks * k_.block_size));
      // A preempted sequence is recomputed whole (its prompt and what it generated); with the
      // whole output reserved at admission nothing is preempted, and only the prompt must fit.
      if (!k_.chunked_prefill && k_.reserve_full_output && r.prompt > k_.max_batched_tokens)
        throw InputError(
            fmt::format("serve: without chunked prefill a prompt must fit the step's token "
                        "budget: {} tokens > {}",
                        r.prompt, k_.max_batched_tokens));
      if (!k_.chunked_prefill && !k_.reserve_full_output &&
          r.prompt + r.output > k_.max_batched_tokens)
        throw InputError(
            fmt::format("serve: without chunked prefill a prompt (and its recompute) must fit the "
                        "step's token budget: "
                        "{} + {} tokens > {}",
                        r.prompt, r.output, k_.max_batched_tokens));
    }
  }

  void arrive(size_t id, double at) {
    out_.requests[id].arrival_s = at;
    out_.requests[id].prompt = w_.requests[id].prompt;
    out_.requests[id].output = w_.requests[id].output;
    waiting_.push_back(id);
  }

  int64_t known(size_t id) const { return w_.requests[id].prompt + seqs_[id].generated; }

  void preempt(size_t id) {
    Sequence& s = seqs_[id];
    free_blocks_ += s.blocks;
    s.blocks = 0;
    s.computed = 0;
    ++out_.requests[id].preemptions;
    ++out_.preemptions;
    running_.erase(std::find(running_.begin(), running_.end(), id));
    waiting_.push_front(id);
  }

  // Tokens the sequence can take this step within `budget`; 0: not this step.
  int64_t wanted(size_t id, int64_t budget) const {
    int64_t left = known(id) - seqs_[id].computed;
    if (k_.chunked_prefill) return std::min(left, budget);
    return left <= budget ? left : 0;
  }

 public:
  // This step's batch: running sequences first, then admissions; preempts when blocks run out.
  Planned plan() {
    int64_t budget = k_.max_batched_tokens;
    std::vector<Scheduled> batch;
    bool preempted = false;
    for (size_t i = 0; i < running_.size() && budget > 0;) {
      size_t id = running_[i];
      int64_t n = wanted(id, budget);
      if (n == 0) {
        ++i;
        continue;
      }
      // Reserved blocks (reserve_full_output) already cover the step: nothing more to take. A
      // windowed layer's blocks that fell out of its window go back first.
      int64_t need = footprint_.blocks(seqs_[id].computed + n, n) - seqs_[id].blocks;
      if (need < 0 && !k_.reserve_full_output) seqs_[id].blocks += need, free_blocks_ -= need;
      need = std::max<int64_t>(0, need);
      bool self = false;
      while (need > free_blocks_) {  // preempt the newest sequence, this one last
        size_t victim = running_.back();
        preempted = true;
        if (victim == id) self = true;
        for (Scheduled& s : batch)  // a victim already in this step gives its tokens back
          if (s.id == victim) budget += s.tokens, s.tokens = 0;
        preempt(victim);
        if (self) break;
      }
      if (self) break;
      seqs_[id].blocks += need;
      free_blocks_ -= need;
      batch.push_back({id, n});
      budget -= n;
      ++i;
    }
    batch.erase(std::remove_if(batch.begin(), batch.end(),
                               [](const Scheduled& s) { return s.tokens == 0; }),
                batch.end());
    while (!preempted && !waiting_.empty() && budget > 0 &&
           static_cast<int64_t>(running_.size()) < k_.max_seqs) {
      size_t id = waiting_.front();
      int64_t n = wanted(id, budget);
      if (n == 0) break;
      const Request& r = w_.requests[id];
      int64_t need = k_.reserve_full_output ? footprint_.peak_blocks(r.prompt, r.prompt + r.output,
                                                                     k_.max_batched_tokens)
                                            : footprint_.blocks(seqs_[id].computed + n, n);
      need = std::max<int64_t>(0, need - seqs_[id].blocks);
      if (need > free_blocks_) break;
      waiting_.pop_front();
      running_.push_back(id);
      seqs_[id].blocks += need;
      free_blocks_ -= need;
      batch.push_back({id, n});
      budget -= n;
    }
    out_.max_running = std::max<int64_t>(out_.max_running, static_cast<int64_t>(running_.size()));
    if (batch.empty())
      throw InputError(
          "serve: no request can be scheduled (the cache or the token budget is too small)");
    StepShape shape;
    for (const Scheduled& s : batch) {
      const Sequence& q = seqs_[s.id];
      bool samples = q.computed + s.tokens == known(s.id);
      if (samples) ++shape.logits;
      if (q.started && s.tokens == 1 && q.computed > 0) {
        ++shape.decode_seqs;
        shape.decode_context_sum += q.computed;
      } else {
        shape.prefills.push_back({s.tokens, q.computed});
      }
    }
    return {std::move(batch), shape};
  }

  // The planned step took `dt`: its tokens are computed, first tokens and finishes recorded.
  void commit(const Planned& p, double dt) {
    const StepShape& shape = p.shape;
    StepRecord rec{now_, dt, shape.tokens() - shape.decode_seqs, shape.decode_seqs,
                   static_cast<int64_t>(waiting_.size())};
    if (shape.prefills.empty())
      ++out_.decode_only_steps;
    else if (shape.decode_seqs == 0)
      ++out_.prefill_only_steps;
    else
      ++out_.mixed_steps;
    if (out_.steps.size() < kTimelineSteps) out_.steps.push_back(rec);
    ++out_.step_count;
    out_.step_seconds += dt;
    out_.decode_seqs += static_cast<double>(shape.decode_seqs);
    now_ += dt;
    for (const Scheduled& s : p.batch) {
      Sequence& q = seqs_[s.id];
      q.computed += s.tokens;
      if (q.computed < known(s.id)) continue;
      ++q.generated;
      RequestResult& r = out_.requests[s.id];
      if (!q.started) q.started = true, r.first_token_s = now_;
      if (q.generated < w_.requests[s.id].output) continue;
      r.finish_s = last_finish_ = now_;
      free_blocks_ += q.blocks;
      q.blocks = 0;
      running_.erase(std::find(running_.begin(), running_.end(), s.id));
      ++finished_;
      if (w_.concurrency > 0 && issued_ < w_.requests.size()) arrive(issued_++, now_);
    }
  }

 private:
  const ServingWorkload& w_;
  const SchedulerKnobs& k_;
  const KvFootprint footprint_;
  const StepSeconds& step_seconds_;
  std::vector<Sequence> seqs_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  int64_t free_blocks_ = 0;
  size_t issued_ = 0, finished_ = 0;
  double now_ = 0, last_finish_ = 0;
  SimulationResult out_;

 public:
  void set_blocks(int64_t b) { free_blocks_ = b; }
};

}  // namespace

bool KvFootprint::windowed() const {
  for (const KvLayerGroup& g : groups)
    if (g.keep > 0) return true;
  return false;
}

int64_t KvFootprint::blocks(int64_t tokens, int64_t step_tokens) const {
  if (!windowed()) return blocks_for(tokens, block_size);
  // A windowed layer holds the tokens it keeps plus this step's: a run of r consecutive tokens
  // spans at most ceil((r - 1) / block) + 1 blocks.
  int64_t layer_blocks = 0, layers = 0;
  for (const KvLayerGroup& g : groups) {
    int64_t b = blocks_for(tokens, block_size);
    if (g.keep > 0 && g.keep + step_tokens < tokens)
      b = std::min(b, blocks_for(g.keep + step_tokens - 1, block_size) + 1);
    layer_blocks += b * g.layers;
    layers += g.layers;
  }
  return layers > 0 ? (layer_blocks + layers - 1) / layers : 0;
}

int64_t KvFootprint::peak_blocks(int64_t prompt, int64_t total, int64_t chunk) const {
  if (!windowed()) return blocks_for(total, block_size);
  return std::max(blocks(prompt, std::min(prompt, std::max<int64_t>(chunk, 1))), blocks(total, 1));
}

double RequestResult::tpot() const {
  return output > 1 ? (finish_s - first_token_s) / static_cast<double>(output - 1) : 0;
}

namespace {

void check_knobs(const SchedulerKnobs& k) {
  if (k.max_batched_tokens <= 0 || k.max_seqs <= 0 || k.block_size <= 0)
    throw InputError(
        "serve: the token budget, the sequence limit and the block size must be positive");
}

}  // namespace

SimulationResult simulate(const ServingWorkload& w, const SchedulerKnobs& k,
                          const StepSeconds& step_seconds) {
  check_knobs(k);
  Engine e(w, k, step_seconds);
  e.set_blocks(k.kv_blocks);
  return e.run();
}

std::vector<SimulationResult> simulate_lockstep(const std::vector<ServingWorkload>& ws,
                                                const SchedulerKnobs& k,
                                                const LockstepSeconds& step_seconds) {
  check_knobs(k);
  StepSeconds unused;
  std::vector<std::unique_ptr<Engine>> engines;
  for (const ServingWorkload& w : ws) {
    engines.push_back(std::make_unique<Engine>(w, k, unused));
    engines.back()->set_blocks(k.kv_blocks);
  }
  for (auto& e : engines) e->start();
  std::vector<Engine::Planned> planned(engines.size());
  std::vector<StepShape> shapes;
  for (;;) {
    bool all_done = true, any_work = false;
    double next = std::numeric_limits<double>::infinity();
    for (auto& e : engines) {
      if (e->finished()) continue;
      all_done = false;
      e->admit_arrivals();
      if (e->idle())
        next = std::min(next, e->next_arrival());
      else
        any_work = true;
    }
    if (all_done) break;
    if (!any_work) {  // every engine waits for its next arrival: the clock jumps to the first
      for (auto& e : engines) e->wait_until(next);
      continue;
    }
    shapes.clear();
    for (size_t i = 0; i < engines.size(); ++i) {
      Engine& e = *engines[i];
      bool works = !e.finished() && !e.idle();
      planned[i] = works ? e.plan() : Engine::Planned{};
      if (works) shapes.push_back(planned[i].shape);
    }
    double dt = step_seconds(shapes);
    double end = 0;
    for (size_t i = 0; i < engines.size(); ++i) {
      Engine& e = *engines[i];
      if (e.finished()) continue;
      if (!planned[i].batch.empty())
        e.commit(planned[i], dt);
      else
        e.wait_until(e.now() + dt);  // idle ranks join the step (engines run a dummy batch)
      end = std::max(end, e.now());
    }
    for (auto& e : engines)
      if (!e->finished()) e->wait_until(end);
  }
  std::vector<SimulationResult> out;
  for (auto& e : engines) out.push_back(e->result());
  return out;
}

}  // namespace rooflens
