#include "analyzer/serving/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

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
      : w_(w), k_(k), step_seconds_(f) {
    seqs_.resize(w.requests.size());
    out_.requests.resize(w.requests.size());
  }

  SimulationResult run() {
    check_feasible();
    size_t n = w_.requests.size();
    if (w_.concurrency > 0)
      while (issued_ < n && issued_ < static_cast<size_t>(w_.concurrency)) arrive(issued_++, 0.0);
    while (finished_ < n) {
      if (w_.concurrency <= 0)
        while (issued_ < n && w_.requests[issued_].arrival_s <= now_)
          arrive(issued_, w_.requests[issued_].arrival_s), ++issued_;
      if (running_.empty() && waiting_.empty()) {
        now_ = std::max(now_, w_.requests[issued_].arrival_s);  // idle until the next arrival
        continue;
      }
      step();
    }
    double first =
        w_.requests.empty() ? 0 : (w_.concurrency > 0 ? 0 : w_.requests.front().arrival_s);
    out_.makespan_s = now_ - first;
    return std::move(out_);
  }

 private:
  struct Scheduled {
    size_t id;
    int64_t tokens;
  };

  void check_feasible() const {
    for (const Request& r : w_.requests) {
      if (r.prompt <= 0 || r.output <= 0)
        throw InputError("serve: every request needs a prompt and an output of at least one token");
      int64_t need = blocks_for(r.prompt + r.output, k_.block_size);
      if (need > k_.kv_blocks)
        throw InputError(fmt::format(
            "serve: one sequence of {} + {} tokens needs {} KV blocks of {} tokens; the cache "
            "holds {} "
            "({} tokens): the KV budget is below one sequence",
            r.prompt, r.output, need, k_.block_size, k_.kv_blocks, k_.kv_blocks * k_.block_size));
      if (!k_.chunked_prefill && r.prompt + r.output > k_.max_batched_tokens)
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

  void step() {
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
      // Reserved blocks (reserve_full_output) already cover the step: nothing more to take.
      int64_t need = std::max<int64_t>(
          0, blocks_for(seqs_[id].computed + n, k_.block_size) - seqs_[id].blocks);
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
      int64_t need = k_.reserve_full_output ? blocks_for(r.prompt + r.output, k_.block_size)
                                            : blocks_for(seqs_[id].computed + n, k_.block_size);
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
    double dt = step_seconds_(shape);
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
    for (const Scheduled& s : batch) {
      Sequence& q = seqs_[s.id];
      q.computed += s.tokens;
      if (q.computed < known(s.id)) continue;
      ++q.generated;
      RequestResult& r = out_.requests[s.id];
      if (!q.started) q.started = true, r.first_token_s = now_;
      if (q.generated < w_.requests[s.id].output) continue;
      r.finish_s = now_;
      free_blocks_ += q.blocks;
      q.blocks = 0;
      running_.erase(std::find(running_.begin(), running_.end(), s.id));
      ++finished_;
      if (w_.concurrency > 0 && issued_ < w_.requests.size()) arrive(issued_++, now_);
    }
  }

  const ServingWorkload& w_;
  const SchedulerKnobs& k_;
  const StepSeconds& step_seconds_;
  std::vector<Sequence> seqs_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  int64_t free_blocks_ = 0;
  size_t issued_ = 0, finished_ = 0;
  double now_ = 0;
  SimulationResult out_;

 public:
  void set_blocks(int64_t b) { free_blocks_ = b; }
};

}  // namespace

double RequestResult::tpot() const {
  return output > 1 ? (finish_s - first_token_s) / static_cast<double>(output - 1) : 0;
}

SimulationResult simulate(const ServingWorkload& w, const SchedulerKnobs& k,
                          const StepSeconds& step_seconds) {
  if (k.max_batched_tokens <= 0 || k.max_seqs <= 0 || k.block_size <= 0)
    throw InputError(
        "serve: the token budget, the sequence limit and the block size must be positive");
  Engine e(w, k, step_seconds);
  e.set_blocks(k.kv_blocks);
  return e.run();
}

}  // namespace rooflens
