// The serving simulator against hand-worked schedules (step costs given by hand, so every
// expected time below is arithmetic on the comments' numbers), the link model against its
// formulas by hand, and `rooflens serve`'s refusals through the real binary.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/hw/link_model.hpp"
#include "analyzer/serving/scheduler.hpp"
#include "analyzer/serving/step_cost.hpp"
#include "analyzer/training/training.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using Catch::Detail::Approx;

namespace {

// A step costs a + b x tokens: a = 10 ms, b = 1 ms per token.
double linear_step(const StepShape& s) {
  return 0.010 + 0.001 * static_cast<double>(s.tokens());
}
double one_second(const StepShape&) {
  return 1.0;
}

SchedulerKnobs roomy() {
  SchedulerKnobs k;
  k.max_batched_tokens = 8192;
  k.max_seqs = 256;
  k.block_size = 16;
  k.kv_blocks = 100000;
  return k;
}

ServingWorkload closed(int64_t concurrency, int64_t n, int64_t prompt, int64_t output) {
  ServingWorkload w;
  w.concurrency = concurrency;
  w.requests.assign(static_cast<size_t>(n), Request{0, prompt, output});
  return w;
}

}  // namespace

TEST_CASE("serve scheduler: one request's TTFT is one prefill step, then one step per token",
          "[serving]") {
  // Prompt 100: one step of 100 tokens = 10 + 100 ms = 0.110 s -> the first token.
  // Then 3 decode steps of 1 token each, 11 ms: finish at 0.110 + 0.033 = 0.143 s.
  SimulationResult r = simulate(closed(1, 1, 100, 4), roomy(), linear_step);
  REQUIRE(r.requests.size() == 1);
  CHECK(r.requests[0].ttft() == Approx(0.110));
  CHECK(r.requests[0].finish_s == Approx(0.143));
  CHECK(r.requests[0].tpot() == Approx(0.011));
  CHECK(r.steps.size() == 4);
  CHECK(r.prefill_only_steps == 1);
  CHECK(r.decode_only_steps == 3);
}

TEST_CASE("serve scheduler: chunked prefill splits a prompt at the token budget", "[serving]") {
  // Prompt 300 under a 128-token budget: chunks 128, 128, 44 ->
  // TTFT = 2 x (10 + 128) ms + (10 + 44) ms = 0.276 + 0.054 = 0.330 s.
  SchedulerKnobs k = roomy();
  k.max_batched_tokens = 128;
  SimulationResult r = simulate(closed(1, 1, 300, 1), k, linear_step);
  CHECK(r.requests[0].ttft() == Approx(0.330));
  CHECK(r.steps.size() == 3);
  // Without chunking the whole prompt must fit the budget: refused, not silently truncated.
  k.chunked_prefill = false;
  CHECK_THROWS_AS(simulate(closed(1, 1, 300, 1), k, linear_step), InputError);
}

TEST_CASE("serve scheduler: a closed loop reaches the steady state the arithmetic predicts",
          "[serving]") {
  // Concurrency 4, prompt 100, output 11, 12 requests: the four run in lock step. A cycle is one
  // prefill step of 4 x 100 tokens (10 + 400 ms = 0.41 s, the TTFT) and 10 decode steps of 4
  // tokens (14 ms each, the TPOT): 0.41 + 0.14 = 0.55 s for 44 tokens; three cycles: 1.65 s,
  // 132 tokens, 80 tokens/s.
  SimulationResult r = simulate(closed(4, 12, 100, 11), roomy(), linear_step);
  REQUIRE(r.requests.size() == 12);
  for (const RequestResult& q : r.requests) {
    CHECK(q.ttft() == Approx(0.41));
    CHECK(q.tpot() == Approx(0.014));
    CHECK(q.e2e() == Approx(0.55));
  }
  CHECK(r.makespan_s == Approx(1.65));
  CHECK(12 * 11 / r.makespan_s == Approx(80.0));
  CHECK(r.max_running == 4);
}

TEST_CASE("serve scheduler: arrivals mix prefill chunks into decode steps", "[serving]") {
  // Open loop, 1 s per step. Request A arrives at 0 (prompt 10, output 5), B at 1.5 s. A: prefill
  // step [0, 1) -> first token at 1; decodes [1, 2), [2, 3), ... B is admitted at the step that
  // starts at 2 s (the first after it arrives), mixed with A's decode: B's TTFT = 3 - 1.5 = 1.5 s.
  ServingWorkload w;
  w.requests = {Request{0.0, 10, 5}, Request{1.5, 10, 2}};
  SimulationResult r = simulate(w, roomy(), one_second);
  CHECK(r.requests[0].ttft() == Approx(1.0));
  CHECK(r.requests[0].finish_s == Approx(5.0));
  CHECK(r.requests[1].ttft() == Approx(1.5));
  CHECK(r.requests[1].finish_s == Approx(4.0));
  CHECK(r.mixed_steps >= 1);
}

TEST_CASE("serve scheduler: arrivals faster than service make the wait grow without bound",
          "[serving]") {
  // One sequence at a time, 1 s a step, one-token requests arriving every 0.1 s: request i is
  // served in the step [i, i + 1) and waits from 0.1 i, so TTFT_i = i + 1 - 0.1 i = 1 + 0.9 i.
  SchedulerKnobs k = roomy();
  k.max_seqs = 1;
  ServingWorkload w;
  for (int i = 0; i < 6; ++i) w.requests.push_back(Request{0.1 * i, 1, 1});
  SimulationResult r = simulate(w, k, one_second);
  for (int i = 0; i < 6; ++i)
    CHECK(r.requests[static_cast<size_t>(i)].ttft() == Approx(1 + 0.9 * i));
  CHECK(r.makespan_s == Approx(6.0));
}

TEST_CASE("serve scheduler: KV exhaustion preempts the newest sequence", "[serving]") {
  // Two sequences of 32 + 40 tokens, blocks of 16: each ends at 72 tokens = 5 blocks. With 7
  // blocks both start (2 blocks each), both grow to 3 blocks at token 33 (6 used), and at token 49
  // the first takes the 7th block; the second then finds none and is preempted.
  SchedulerKnobs k = roomy();
  k.kv_blocks = 7;
  SimulationResult r = simulate(closed(2, 2, 32, 40), k, one_second);
  CHECK(r.preemptions >= 1);
  CHECK(r.requests[1].preemptions >= 1);
  CHECK(r.requests[0].preemptions == 0);
  // Both still finish; the first is never delayed by the second.
  CHECK(r.requests[0].finish_s == Approx(40.0));
  CHECK(r.requests[1].finish_s > r.requests[0].finish_s);
  // With room for both (10 blocks = 2 x 5) nothing is preempted.
  k.kv_blocks = 10;
  CHECK(simulate(closed(2, 2, 32, 40), k, one_second).preemptions == 0);
}

TEST_CASE("serve scheduler: reserving the whole output admits later instead of preempting",
          "[serving]") {
  // TensorRT-LLM's GUARANTEED_NO_EVICT with 7 blocks: the first reserves its 5, the second needs
  // 5 and waits. The first runs 40 steps (1 prefill + 39 decodes) to t = 40; the second is admitted
  // at the step starting at 40 and gets its first token at 41: TTFT 41 s (it arrived at 0).
  SchedulerKnobs k = roomy();
  k.kv_blocks = 7;
  k.reserve_full_output = true;
  SimulationResult r = simulate(closed(2, 2, 32, 40), k, one_second);
  CHECK(r.preemptions == 0);
  CHECK(r.requests[1].ttft() == Approx(41.0));
}

TEST_CASE("serve scheduler: without chunked prefill only a prompt that can be recomputed must fit",
          "[serving]") {
  // Budget 150 tokens, prompts of 100, outputs of 100. Preemption recomputes prompt + output
  // (200 > 150): refused. Reserving the whole output at admission never preempts: accepted, and
  // the prompt alone (100) fits a step: TTFT = one 100-token step = 10 + 100 ms.
  SchedulerKnobs k = roomy();
  k.max_batched_tokens = 150;
  k.chunked_prefill = false;
  CHECK_THROWS_AS(simulate(closed(1, 1, 100, 100), k, linear_step), InputError);
  k.reserve_full_output = true;
  SimulationResult r = simulate(closed(1, 1, 100, 100), k, linear_step);
  CHECK(r.requests[0].ttft() == Approx(0.110));
  k.max_batched_tokens = 99;  // the prompt itself no longer fits
  CHECK_THROWS_AS(simulate(closed(1, 1, 100, 100), k, linear_step), InputError);
}

TEST_CASE("serve scheduler: a sequence larger than the whole cache is refused", "[serving]") {
  SchedulerKnobs k = roomy();
  k.kv_blocks = 4;  // 64 tokens; a sequence of 32 + 40 needs 5 blocks
  CHECK_THROWS_AS(simulate(closed(1, 1, 32, 40), k, one_second), InputError);
}

TEST_CASE("serve scheduler: a sliding-window layer holds only its window's blocks", "[serving]") {
  // gpt-oss-20b's cache: 12 layers of window 128 (they keep 127 tokens) and 12 full ones, blocks
  // of 16 tokens; a block is 16 tokens of all 24 layers, a windowed layer's block half of one.
  KvFootprint f{16, {{127, 12}, {0, 12}}};
  // 2048 tokens, one new: the full layers hold 128 blocks; the windowed ones the run of
  // 127 + 1 = 128 tokens, at most ceil(127 / 16) + 1 = 9 blocks: (12 x 128 + 12 x 9) / 24 = 68.5.
  CHECK(f.blocks(2048, 1) == 69);
  // A 1024-token prompt in one step writes every token of every layer: 64 blocks.
  CHECK(f.blocks(1024, 1024) == 64);
  // 300 tokens: full 19 blocks, windowed 9: (19 + 9) / 2 = 14.
  CHECK(f.blocks(300, 1) == 14);
  // The most a 1024 + 1024 sequence holds: the prompt's step (64) or the last token's (69).
  CHECK(f.peak_blocks(1024, 2048, 8192) == 69);
  // Without windows a block is 16 tokens of every layer, as before.
  CHECK(KvFootprint{16, {}}.blocks(2048, 1) == 128);
  CHECK(KvFootprint{16, {}}.peak_blocks(1024, 2048, 8192) == 128);

  // In the scheduler: sequences of 32 + 96 tokens, one full layer and one of window 16 (keeps 15).
  // At the end a sequence holds (8 + ceil(15 / 16) + 1) / 2 = 5 blocks, not 8; its prompt's step
  // (32 tokens) holds 2. Four of them fit 20 blocks without preemption; with every layer full
  // they need 4 x 8 = 32 and the newest is preempted.
  SchedulerKnobs k = roomy();
  k.kv_blocks = 20;
  k.kv_layers = {{15, 1}, {0, 1}};
  SimulationResult windowed = simulate(closed(4, 8, 32, 96), k, one_second);
  CHECK(windowed.preemptions == 0);
  k.kv_layers.clear();
  CHECK(simulate(closed(4, 8, 32, 96), k, one_second).preemptions > 0);
}

TEST_CASE("serve scheduler: ranks that step together wait for each other's steps", "[serving]") {
  // A step takes 1 s per token of its largest rank. Rank A: one request, a prompt of 100, one
  // output token. Rank B: a prompt of 1 and 3 output tokens. Together, step 1 is A's prefill of
  // 100 tokens beside B's 1: 100 s, the first tokens of both at t = 100 (A finishes). Steps 2 and
  // 3 are B's decodes alone, 1 s each: B finishes at 102. Alone, B would take 3 s.
  LockstepSeconds largest = [](const std::vector<StepShape>& shapes) {
    double most = 0;
    for (const StepShape& s : shapes) most = std::max(most, static_cast<double>(s.tokens()));
    return most;
  };
  std::vector<SimulationResult> r =
      simulate_lockstep({closed(1, 1, 100, 1), closed(1, 1, 1, 3)}, roomy(), largest);
  REQUIRE(r.size() == 2);
  CHECK(r[0].requests[0].ttft() == Approx(100));
  CHECK(r[0].requests[0].e2e() == Approx(100));
  CHECK(r[1].requests[0].ttft() == Approx(100));
  CHECK(r[1].requests[0].tpot() == Approx(1));  // (102 - 100) / 2
  CHECK(r[1].requests[0].e2e() == Approx(102));
  CHECK(r[1].makespan_s == Approx(102));
  // Open loop: B's request arrives at t = 50 while A's 100 s prefill runs; it is admitted when
  // that step ends, prefilled in step 2 (1 s): its TTFT is 101 - 50 = 51 s.
  ServingWorkload a, b;
  a.requests = {Request{0, 100, 1}};
  b.requests = {Request{50, 1, 1}};
  r = simulate_lockstep({a, b}, roomy(), largest);
  CHECK(r[1].requests[0].ttft() == Approx(51));
  // Both idle until the first arrival at t = 20: the clock jumps there.
  a.requests = {Request{20, 5, 1}};
  b.requests = {Request{30, 5, 1}};
  r = simulate_lockstep({a, b}, roomy(), largest);
  CHECK(r[0].requests[0].first_token_s == Approx(25));
  CHECK(r[1].requests[0].first_token_s == Approx(35));
}

TEST_CASE("serve step cost: a lone prefill step is analyze's prefill less the other tokens' logits",
          "[serving]") {
  // The step model takes its figures from the same lowering as `analyze --phase prefill`: at a
  // grid point (512 tokens) a prefill of 512 tokens sampling 512 logits must equal analyze's
  // prediction exactly (same nodes, same rules); sampling only the last token must cost less.
  TransformerConfig c =
      load_transformer_config(test::data_path("samples/configs/llama-3.1-8b/config.json"));
  TransformerOptions o;
  o.workload = Workload::prefill;
  o.lowering.seq = 512;
  double analyzed = analyze_transformer(c, o).totals.predicted_s;
  StepCostModel m(c, o.lowering, std::make_shared<const Device>(find_device("H100-SXM")));
  StepShape all;
  all.prefills = {{512, 0}};
  all.logits = 512;
  CHECK(m.cost(all).gpu_s == Approx(analyzed).epsilon(1e-9));
  StepShape last = all;
  last.logits = 1;
  CHECK(m.cost(last).gpu_s < analyzed);
}

TEST_CASE("link model: collectives by hand", "[serving][links]") {
  const Device& h100 = find_device("H100-SXM");
  // 1 GiB all-reduce over 8 H100s on NVSwitch: busbw 476 GB/s (nccl-tests issue #290), moved
  // 2 x 7/8 x 2^30 = 1879048192 bytes -> 3.947580 ms; tree latency 2 x log2(8) = 6 steps of 1 us
  // beats the ring's 14: 3.953580 ms.
  CollectivePrice big = price_collective(Collective::all_reduce, int64_t{1} << 30, 8, h100);
  CHECK(big.algorithm == "tree");
  CHECK(big.seconds == Approx(6e-6 + 1879048192.0 / 476e9));
  // 16 KiB decode all-reduce with the engines' kernels: one-shot reads 7 x 16384 bytes over one
  // GPU's 450 GB/s per direction after 2 barriers: 2 us + 0.2549 us.
  CollectivePrice small = price_collective(Collective::all_reduce, 16384, 8, h100, true);
  CHECK(small.algorithm == "one-shot");
  CHECK(small.seconds == Approx(2e-6 + 7 * 16384.0 / 450e9));
  // Without them (NCCL): tree, 6 us + 28672 / 476e9.
  CHECK(collective_seconds(Collective::all_reduce, 16384, 8, h100) ==
        Approx(6e-6 + 28672.0 / 476e9));
  // All-gather of 1 GiB over 8 H100s: ring, 7 steps, 7/8 of the bytes at the link's 450 GB/s
  // (the 476 GB/s all-reduce figure includes in-switch reduction an all-gather cannot use).
  CHECK(collective_seconds(Collective::all_gather, int64_t{1} << 30, 8, h100) ==
        Approx(7e-6 + 0.875 * 1073741824.0 / 450e9));
  // Over 4 the curve measured on 4 x H200 (same NVLink 4 x 18) answers: 2.474 ms at 1 GiB after
  // an L2 flush, 2.478 ms back to back.
  CHECK(collective_seconds(Collective::all_gather, int64_t{1} << 30, 4, h100) == Approx(2.474e-3));
  CHECK(price_collective(Collective::all_gather, int64_t{1} << 30, 4, h100, false,
                         CollectiveTiming::back_to_back)
            .seconds == Approx(2.478e-3));
  // L40S has no NVLink: PCIe 32 GB/s per direction (devices.json), no published all-reduce
  // figure: 1 MiB over 2 GPUs = 2 us + 1 x 2^20 / 32e9.
  CHECK(collective_seconds(Collective::all_reduce, 1 << 20, 2, find_device("L40S")) ==
        Approx(2e-6 + 1048576.0 / 32e9));
  CHECK(collective_seconds(Collective::all_reduce, 1 << 20, 1, h100) == 0);
}

TEST_CASE("link model: beyond a node, collectives cross its network adapters", "[serving][links]") {
  // data/collectives.json, H100 SXM nodes of 8: all-reduce busbw across nodes 368.76 GB/s
  // (published), 48 GB/s per adapter, 5 us per step that crosses nodes, 1 us per step within.
  Device h100 = find_device("H100-SXM");
  const double gib = 1073741824.0;
  // 16 GPUs (2 nodes), 1 GiB all-reduce: ring 2 x 15 x 1 us + 2 x 1 x 5 us, tree 2 x log2(8) x
  // 1 us + 2 x log2(2) x 5 us = 16 us, then 2 x 15/16 x 1 GiB at 368.76 GB/s = 5.4597 ms: tree.
  CollectivePrice ar = price_collective(Collective::all_reduce, int64_t{1} << 30, 16, h100);
  CHECK(ar.algorithm == "tree across nodes");
  CHECK(ar.seconds == Approx(16e-6 + 1.875 * gib / 368.76e9));
  // All-to-all of a 1 GiB buffer over 16: half of it lives on the other node and leaves through
  // the GPU's adapter (8/16 GiB at 48 GB/s = 11.185 ms; the NVLink share, 7/16 GiB at 450 GB/s,
  // runs beside it), plus one network step. busbw = 15/16 x 1 GiB / t: 2 x 15/16 x 48 = 90 GB/s
  // to within the latency (the maintainer's N/(N-1) x the per-GPU network bandwidth for 2 nodes,
  // n-1/n of the bytes counted).
  CollectivePrice a2a = price_collective(Collective::all_to_all, int64_t{1} << 30, 16, h100);
  CHECK(a2a.seconds == Approx(5e-6 + 0.5 * gib / 48e9));
  CHECK(a2a.busbw == Approx(2 * 15.0 / 16 * 48e9).epsilon(0.001));
  // A pipeline stage boundary between nodes: one send through the adapter.
  CHECK(send_between_nodes(int64_t{1} << 30, h100) == Approx(5e-6 + gib / 48e9));
  // 32 GPUs: 24/32 of the buffer off the node.
  CHECK(collective_seconds(Collective::all_to_all, int64_t{1} << 30, 32, h100) ==
        Approx(5e-6 + 0.75 * gib / 48e9));
  // Eight GPUs stay on the node's NVSwitch, and a device without a scale-out entry (A100) keeps
  // its fabric's model at any count.
  CHECK(price_collective(Collective::all_to_all, int64_t{1} << 30, 8, h100)
            .algorithm.find("across") == std::string::npos);
  CHECK(price_collective(Collective::all_reduce, int64_t{1} << 30, 16, find_device("A100-SXM-80GB"))
            .algorithm.find("across") == std::string::npos);
}

TEST_CASE("training: ZeRO-3's gathers are priced per micro-batch by the link model",
          "[serving][links]") {
  // Llama-3.1-8B, bf16-mixed (fp32 weights and gradients, bf16 GEMMs), ZeRO-3 over 8 H100s. Each
  // micro-batch all-gathers the weights twice in bf16 (P x 2 bytes) and reduce-scatters the fp32
  // gradients (P x 4 bytes); each ring collective: 7 steps of 1 us and 7/8 of the bytes at the
  // 450 GB/s link. Eight micro-batches: eight times that.
  TransformerConfig c =
      load_transformer_config(test::data_path("samples/configs/llama-3.1-8b/config.json"));
  TransformerOptions o;
  o.lowering.seq = 256;
  TrainingOptions t;
  t.precision = parse_train_precision("bf16-mixed");
  t.zero = 3;
  t.dp = 8;
  Analysis one = analyze_training(c, o, t);
  t.grad_accum = 8;
  Analysis eight = analyze_training(c, o, t);
  double p = static_cast<double>(one.training->params);
  double per_micro = 2 * (7e-6 + 0.875 * p * 2 / 450e9) + (7e-6 + 0.875 * p * 4 / 450e9);
  CHECK(one.training->communication_s == Approx(per_micro));
  CHECK(eight.training->communication_s == Approx(8 * per_micro));
}

namespace {

struct Run {
  int code;
  std::string err;
};

Run serve(const std::string& args) {
  static const std::filesystem::path dir = test::scratch_dir("serve");
  std::filesystem::path err = dir / "stderr.txt";
  std::string cmd =
      std::string(ROOFLENS_BIN) + " serve " + args + " > /dev/null 2> " + err.string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::slurp(err)};
}

std::string config(const std::string& name) {
  return test::data_path("samples/configs/" + name + "/config.json");
}

int lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("serve CLI: impossible plans are one line and exit 2", "[serving][cli]") {
  // Llama-3.1-8B: 32 layers, 32 heads, 8 KV heads; Mixtral-8x7B: 8 experts.
  for (const std::string& args : {
           config("llama-3.1-8b") + " --concurrency 4 --engine tgi",  // unknown engine
           config("llama-3.1-8b") + " --concurrency 4 --pp 3",        // 3 does not divide 32 layers
           config("llama-3.1-8b") + " --concurrency 4 --tp 3",        // nor 32 heads
           config("llama-3.1-8b") + " --concurrency 4 --ep 2 --tp 2",  // dense: no experts
           config("mixtral-8x7b") +
               " --concurrency 4 --ep 3 --tp 3",  // 3 does not divide 8 experts
           config("mixtral-8x7b") +
               " --concurrency 4 --ep 4 --tp 2",  // neither the TP group nor attention DP
           config("mixtral-8x7b") + " --concurrency 4 --ep 4 --pp 2",  // attention DP with stages
           config("llama-2-70b") + " --concurrency 4",  // 140 GB of weights on one 80 GB GPU
           config("llama-3.1-8b") +
               " --concurrency 4 --isl 4000000",                  // KV budget below one sequence
           config("llama-3.1-8b") + " --concurrency 4 --rate 2",  // both loops
           config("llama-3.1-8b") + " --concurrency 4 --isl uniform:9:3",  // LO above HI
           config("llama-3.1-8b") + " --concurrency 4 --sp",  // sequence parallelism without TP
           config("llama-3.1-8b") + " --concurrency 4 --block-size 0",  // no block size
           config("llama-3.1-8b") + " --concurrency 4 --max-seqs 0",    // no sequence at all
           config("llama-3.1-8b") +
               " --concurrency 4 --num-requests 2000000",  // beyond the simulation's limit
           config("llama-3.1-8b") +
               " --concurrency 4 --isl 9000000000000000000",  // beyond 2^40 tokens
           config("llama-3.1-8b") + " --rate inf",            // no finite rate
           config("llama-3.1-8b") + " --concurrency 4 --step-overhead-us nan",  // no overhead
           config("bert-base-uncased") + " --concurrency 4",                    // an encoder
           config("mamba-130m") + " --concurrency 4",  // no KV cache to admit by
           config("mixtral-8x7b") + " --concurrency 4 --moe-kernel triton",  // not a kernel name
       }) {
    Run r = serve(args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
  }
}

TEST_CASE("serve CLI: an unsustainable rate is reported, exit 0", "[serving][cli]") {
  static const std::filesystem::path dir = test::scratch_dir("serve_json");
  std::filesystem::path json = dir / "serve.json";
  // 1000 requests/s of 1024 + 256 tokens is far beyond one H100 serving an 8B model
  // (each request alone is >= 256 decode steps).
  Run r = serve(config("llama-3.1-8b") +
                " --rate 1000 --num-requests 64 --isl 1024 --osl 256 --json " + json.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(test::slurp(json));
  const auto& s = j.at("serving");
  CHECK(s.at("sustainable") == false);
  // One request a second, each alone about 1024 prompt tokens and 256 decode steps of a few ms
  // (well under a second of GPU time): the queue stays empty and the wait does not grow, although
  // completions over the 64 s run (ramp and drain) read below the offered rate.
  Run low = serve(config("llama-3.1-8b") +
                  " --rate 1 --num-requests 64 --isl 1024 --osl 256 --json " + json.string());
  REQUIRE(low.code == 0);
  nlohmann::json lj = nlohmann::json::parse(test::slurp(json));
  CHECK(lj.at("serving").at("sustainable") == true);
  CHECK(std::fabs(lj.at("serving").at("wait_growth").get<double>()) < 0.05);
  for (const char* k :
       {"ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p50_s", "tpot_p99_s",
        "e2e_latency_mean_s", "throughput_tokens_per_s", "throughput_tokens_per_s_per_gpu",
        "requests_per_s", "kv_capacity_tokens", "max_concurrency_without_preemption", "step_mix"})
    CHECK(s.contains(k));
}

TEST_CASE("serve CLI: replicas and pipeline stages divide the work as the plan says",
          "[serving][cli]") {
  static const std::filesystem::path dir = test::scratch_dir("serve_plans");
  auto run_json = [&](const std::string& args) {
    std::filesystem::path json = dir / "plan.json";
    Run r =
        serve(config("llama-3.1-8b") + " --isl 512 --osl 64 " + args + " --json " + json.string());
    INFO(args << "\n" << r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(test::slurp(json));
  };
  // Two identical replicas, each with half of the clients and half of the requests, are two
  // copies of one replica: the same latencies, twice the deployment's throughput, the same per GPU.
  nlohmann::json one = run_json("--concurrency 8 --num-requests 32");
  nlohmann::json two = run_json("--concurrency 16 --num-requests 64 --dp 2");
  CHECK(two.at("plan").at("gpus") == 2);
  CHECK(two.at("serving").at("tpot_mean_s").get<double>() ==
        Approx(one.at("serving").at("tpot_mean_s").get<double>()));
  CHECK(two.at("serving").at("throughput_tokens_per_s").get<double>() ==
        Approx(2 * one.at("serving").at("throughput_tokens_per_s").get<double>()));
  CHECK(two.at("serving").at("throughput_tokens_per_s_per_gpu").get<double>() ==
        Approx(one.at("serving").at("throughput_tokens_per_s_per_gpu").get<double>()));
  // Two pipeline stages: each GPU holds half of the layers' KV per token (32 layers x 8 KV heads x
  // 128 dims x 2 (K, V) x 2 bytes = 131072 B on one GPU; 65536 on each of two).
  nlohmann::json pp = run_json("--concurrency 8 --pp 2");
  CHECK(one.at("memory_per_gpu").at("kv_bytes_per_token") == 131072);
  CHECK(pp.at("memory_per_gpu").at("kv_bytes_per_token") == 65536);
  CHECK(pp.at("plan").at("schedulers") == 2);
}

TEST_CASE("serve CLI: vLLM keeps gpt-oss's sliding-window layers to their window",
          "[serving][cli]") {
  static const std::filesystem::path dir = test::scratch_dir("serve_windows");
  auto run_json = [&](const std::string& engine) {
    std::filesystem::path json = dir / (engine + ".json");
    Run r = serve(config("gpt-oss-20b") + " --engine " + engine +
                  " --block-size 16 --max-seqs 100000 --isl 1024 --osl 1024 --concurrency 8"
                  " --num-requests 16 --json " +
                  json.string());
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(test::slurp(json)).at("serving");
  };
  // 12 of its 24 layers have a window of 128: a 1024 + 1024 sequence ends holding 128 blocks of
  // 16 tokens in the full layers and 9 in the windowed ones, (12 x 128 + 12 x 9) / 24 = 68.5 -> 69
  // blocks of every layer (test case "a sliding-window layer holds only its window's blocks").
  nlohmann::json vllm = run_json("vllm");
  int64_t blocks = vllm.at("kv_blocks_per_scheduler").get<int64_t>();
  CHECK(vllm.at("max_concurrency_without_preemption").get<int64_t>() == blocks / 69);
  // SGLang's own sliding-window pool is not modelled: every layer at the full context, 128 blocks.
  nlohmann::json sglang = run_json("sglang");
  CHECK(sglang.at("max_concurrency_without_preemption").get<int64_t>() ==
        sglang.at("kv_blocks_per_scheduler").get<int64_t>() / 128);
}

TEST_CASE("serve CLI: expert parallelism with data-parallel attention", "[serving][cli]") {
  static const std::filesystem::path dir = test::scratch_dir("serve_attention_dp");
  std::filesystem::path json = dir / "ep.json";
  Run r = serve(config("mixtral-8x7b") + " --tp 1 --ep 4 --isl 512 --osl 64 --concurrency 16 " +
                "--json " + json.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(test::slurp(json));
  CHECK(j.at("plan").at("gpus") == 4);
  CHECK(j.at("plan").at("attention_dp") == true);
  CHECK(j.at("plan").at("schedulers") == 4);
  // Mixtral-8x7B: 46,702,792,704 parameters, of which the experts' 32 layers x 8 x 3 x 4096 x
  // 14336 = 45,097,156,608. A GPU holds every other weight and 2 of the 8 experts, in bf16:
  // (46,702,792,704 - 3/4 x 45,097,156,608) x 2 B = 25,759,850,496 B, and the lowering's small
  // tables (the rotary frequencies: 64 fp32, 256 B) within a KiB.
  CHECK(std::fabs(j.at("memory_per_gpu").at("weight_bytes").get<double>() - 25759850496.0) <= 1024);
  // Every KV head on each GPU: 32 layers x 8 heads x 128 x 2 (K, V) x 2 B.
  CHECK(j.at("memory_per_gpu").at("kv_bytes_per_token") == 131072);
  // Four schedulers of 4 clients each: the ranks' requests are the deployment's.
  CHECK(j.at("serving").at("requests") == 128);  // 8 x concurrency
}

TEST_CASE("serve CLI: MoE experts run the engine's kernel, or the one --moe-kernel names",
          "[serving][cli]") {
  // vLLM and SGLang run Triton's fused MoE kernel, TensorRT-LLM CUTLASS grouped GEMMs; the
  // shipped H100 profile has tables of both, so each is priced from its own. Faster tables, a
  // faster step: on the H100 the fused kernel streams Qwen3-30B-A3B's experts at 2.7 TB/s and
  // torch._grouped_mm at 2.3 (docs/profile.md, "MoE expert GEMMs"), so vLLM's TPOT is the lower.
  static const std::filesystem::path dir = test::scratch_dir("serve_moe_kernel");
  auto run = [](const std::string& flags) {
    std::filesystem::path json = dir / "k.json";
    Run r = serve(config("qwen3-30b-a3b") + " --isl 512 --osl 64 --concurrency 8 " + flags +
                  " --json " + json.string());
    INFO(flags << "\n" << r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(test::slurp(json));
  };
  nlohmann::json vllm = run("--engine vllm"), grouped = run("--engine vllm --moe-kernel grouped"),
                 trtllm = run("--engine trtllm");
  CHECK(vllm.at("engine").at("moe_kernel") == "fused");
  CHECK(vllm.at("engine").at("moe_kernel_priced") == "fused");
  CHECK(grouped.at("engine").at("moe_kernel_priced") == "grouped");
  CHECK(trtllm.at("engine").at("moe_kernel") == "grouped");
  CHECK(vllm.at("serving").at("tpot_mean_s").get<double>() <
        grouped.at("serving").at("tpot_mean_s").get<double>());
  // The replay's batched GEMM, named: its own tables (faster again at a few rows an expert).
  nlohmann::json batched = run("--engine vllm --moe-kernel batched");
  CHECK(batched.at("engine").at("moe_kernel_priced") == "batched");
  CHECK(batched.at("serving").at("tpot_mean_s").get<double>() <
        vllm.at("serving").at("tpot_mean_s").get<double>());
}

TEST_CASE("serve's scheduler runs the steps the closed loop on the H100 ran", "[serving][cli]") {
  // tests/data/reference/serving/h100-closed-loop.json (TinyLlama-1.1B, Llama-3.1-8B) and
  // h100-moe-closed-loop.json (Qwen3-30B-A3B): scripts/gpu/serving_closed_loop.py's continuous
  // batching on one H100, 512 + 128 tokens, a budget of 8,192 tokens, 64 slots, decode-only steps
  // from CUDA graphs (SGLang's knobs). Where the loop ran rooflens's request count, both must run
  // the same steps of each kind and the same mean decode batch: the scheduler is one design.
  struct Ref {
    const char* file;
    const char* model;
    const char* key;  // under "models", or "" at the top
  };
  static const std::filesystem::path dir = test::scratch_dir("serve_closed_loop_steps");
  for (const Ref& ref : {Ref{"h100-closed-loop", "tinyllama-1.1b", "tinyllama-1.1b"},
                         Ref{"h100-closed-loop", "llama-3.1-8b", "llama-3.1-8b"},
                         Ref{"h100-moe-closed-loop", "qwen3-30b-a3b", ""}}) {
    INFO(ref.model);
    nlohmann::json file = nlohmann::json::parse(test::slurp(
        test::data_path("tests/data/reference/serving/" + std::string(ref.file) + ".json")));
    const nlohmann::json& loop = *ref.key ? file.at("models").at(ref.key) : file;
    std::filesystem::path json = dir / "sweep.json";
    Run run = serve(config(ref.model) +
                    " --engine sglang --max-batched-tokens 8192 --max-seqs 64 --isl 512 --osl 128 "
                    "--sweep-concurrency 1,2,4,8,16,32,64 --device-profile " +
                    test::data_path("data/profiles/h100-sxm.json") + " --json " + json.string());
    REQUIRE(run.code == 0);
    nlohmann::json sweep = nlohmann::json::parse(test::slurp(json)).at("sweep");
    int compared = 0;
    for (const auto& measured : loop.at("results")) {
      int64_t clients = measured.at("concurrency");
      for (const auto& point : sweep) {
        if (point.at("concurrency") != clients || point.at("requests") != measured.at("requests"))
          continue;
        INFO(clients << " clients");
        const auto& kinds = measured.at("by_kind");
        const auto& mix = point.at("step_mix");
        CHECK(mix.at("decode_only").get<int64_t>() ==
              kinds.at("decode_graph").at("count").get<int64_t>() +
                  kinds.at("decode_eager").at("count").get<int64_t>());
        CHECK(mix.at("mixed") == kinds.at("mixed").at("count"));
        CHECK(mix.at("prefill_only") == kinds.at("prefill_only").at("count"));
        CHECK(mix.at("mean_decode_batch").get<double>() ==
              Approx(measured.at("mean_decode_batch").get<double>()).epsilon(1e-9));
        ++compared;
      }
    }
    CHECK(compared >= 5);  // 4-64 clients at least (the MoE loop ran 16 requests at 1 and 2)
  }
}

TEST_CASE("an fp8 KV cache's decode attention streams its own bytes, not the bf16 table's",
          "[serving][roofline]") {
  // Llama-3.1-8B decode, batch 512 over 1,500 cached tokens, on the shipped H100 profile without
  // its fp8-cache table (a profile measured before it): its decode attention table was measured
  // with a bf16 cache. The fp8 cache reads half the bytes: its time is the bf16 one less the bytes
  // it does not read at the measured bandwidth, so a little more than half, and never below its
  // own bytes at that bandwidth.
  TransformerConfig c = load_transformer_config(config("llama-3.1-8b"));
  DeviceProfile profile = read_device_profile(test::data_path("data/profiles/h100-sxm.json"));
  profile.tables.tables.erase("attn_decode.bf16.kv_fp8");
  auto attention = [&](DType kv) {
    TransformerOptions o;
    o.calibrated = std::make_shared<const Device>(calibrated_device(profile));
    o.workload = Workload::decode;
    o.lowering.batch = 512;
    o.lowering.context = 1500;
    o.lowering.weights = o.lowering.activations = DType::bf16;
    o.lowering.kv = kv;
    Analysis a = analyze_transformer(c, o);
    double seconds = 0, bytes = 0;
    for (const NodeResult& n : a.nodes)
      if (n.op == "Attention") seconds += n.roof.predicted, bytes += n.cost.read_act;
    return std::pair<double, double>{seconds, bytes};
  };
  auto [bf16_s, bf16_bytes] = attention(DType::bf16);
  auto [fp8_s, fp8_bytes] = attention(DType::f8e4m3fn);
  CHECK(fp8_bytes == Approx(bf16_bytes / 2).epsilon(0.01));
  CHECK(fp8_s < 0.55 * bf16_s);
  CHECK(fp8_s > 0.45 * bf16_s);
  const double hbm = 3039213106773.278;  // the profile's measured HBM read bandwidth
  CHECK(fp8_s >= fp8_bytes / hbm);
}
