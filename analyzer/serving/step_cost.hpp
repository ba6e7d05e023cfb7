#pragma once
// What one engine step costs: a mix of prefill chunks and decode tokens, priced by the same
// lowering and rules as `analyze --phase prefill/decode` (measured tables where the device
// profile has them). No second formula: the step is split into what scales with the step's
// tokens (projections, MLP/MoE, norms, the tensor-parallel collectives), the attention of each
// sequence over its own context, and the logits of the sequences that sample a token.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "analyzer/hw/device.hpp"
#include "analyzer/transformers/config.hpp"
#include "analyzer/transformers/lowering.hpp"

namespace rooflens {

struct PrefillChunk {
  int64_t tokens = 0;  // new prompt tokens this step
  int64_t past = 0;    // tokens of the same sequence already in the cache
};

// One step of a continuous-batching engine.
struct StepShape {
  std::vector<PrefillChunk> prefills;
  int64_t decode_seqs = 0;         // sequences generating one token each
  int64_t decode_context_sum = 0;  // their cached tokens, summed
  int64_t logits = 0;  // sequences sampling a token: decodes + prefills that finish their prompt
  int64_t tokens() const;
};

struct StepTime {
  double gpu_s = 0;  // the kernels back to back
  double moe_s = 0;  // of which the MoE experts (expert parallelism waits for the busiest GPU)
  double allreduce_s = 0;                      // of which the tensor-parallel all-reduces
  double allreduces = 0, allreduce_bytes = 0;  // their count and bytes (all of them together)
  int64_t kernels = 0;  // kernels a step launches (for host-bound launches without CUDA graphs)
};

// Costs steps of one model under one lowering (dtypes, --tp). Every figure comes from a lowered
// graph at a grid point, cached; between grid points it interpolates linearly:
//  - token-linear part and logits: lowered prefill of 1 x T tokens, T on a grid of two points per
//    octave (1, 2, 3, 4, 6, 8, 12, ...), its nodes outside the attention cores and the head;
//  - a prefill chunk's attention: cumulative causal attention A(past + n) - A(past) from the
//    same lowerings (the rows the chunk adds), at least A(n);
//  - under lowering.ep (attention data parallelism) every figure is one GPU's with that shape
//    (the lowering's batch is ep sequences, one a GPU; decode attention is a GPU's own);
//  - decode attention: lowered decode steps of b sequences at context c, b and c on the same
//    two-per-octave grid, bilinear; b sequences with different contexts cost as b at their mean
//    (the kernels stream every cached token once, so the sum is what counts).
class StepCostModel {
 public:
  StepCostModel(TransformerConfig config, LoweringOptions lowering,
                std::shared_ptr<const Device> device);
  StepTime cost(const StepShape& s);
  // The MoE layers' time for `tokens` tokens a GPU (token grid, as cost()'s moe_s).
  double moe_seconds(int64_t tokens);
  // Peak activation bytes of a step of `tokens` tokens (the lowering's liveness peak).
  int64_t activation_peak_bytes(int64_t tokens);
  int64_t weight_bytes();       // per GPU
  int64_t grid_points() const;  // lowerings analyzed so far (for the report)
  const Device& device() const { return *device_; }
  const TransformerConfig& config() const { return config_; }
  const LoweringOptions& lowering() const { return lowering_; }

 private:
  struct PrefillPoint {
    double linear_s = 0, head_s = 0, attention_s = 0,
           moe_s = 0;  // linear_s includes moe_s and allreduce_s
    double allreduce_s = 0, allreduces = 0, allreduce_bytes = 0;
    int64_t kernels = 0, peak_bytes = 0, weight_bytes = 0;
  };
  const PrefillPoint& prefill_point(int64_t tokens);
  double decode_attention_point(int64_t seqs, int64_t context);
  // Interpolated over the token grid.
  double prefill_linear(int64_t tokens);
  double prefill_head(int64_t tokens);
  // A PrefillPoint field interpolated over the token grid.
  double interpolate(int64_t tokens, double PrefillPoint::*field);
  double prefill_attention(int64_t tokens);
  double decode_attention(int64_t seqs, int64_t mean_context);

  TransformerConfig config_;
  LoweringOptions lowering_;
  std::shared_ptr<const Device> device_;
  std::map<int64_t, PrefillPoint> prefill_;
  std::map<std::pair<int64_t, int64_t>, double> decode_;
};

// The grid the model interpolates on: two points per octave, 1, 2, 3, 4, 6, 8, 12, 16, ...
// The grid points around x: {lo, hi} with lo <= x <= hi (lo == hi on a point).
std::pair<int64_t, int64_t> grid_bracket(int64_t x);

}  // namespace rooflens
