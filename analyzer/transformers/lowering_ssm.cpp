// The Mamba mixer (Mamba, Jamba): in_proj to x and the gate z, a causal depthwise conv with
// SiLU, x_proj to the step, B and C (Jamba: each RMS-normed), dt_proj, the selective scan with its
// recurrent state in place of a KV cache, out_proj.
#include <fmt/format.h>

#include "analyzer/transformers/lowering_builder.hpp"

namespace rooflens::lowering {

int Builder::mamba_mixer(int64_t, const std::string& p, int h) {
  std::string m = at(p, c_.names.mixer);
  int64_t inner = c_.ssm_inner, n = c_.ssm_state, rank = c_.ssm_dt_rank, k = c_.ssm_conv;
  bool decode = o_.phase == Phase::decode;
  auto parts =
      split(m + ".in_split", linear(m + ".in_proj", h, c_.hidden, 2 * inner, c_.ssm_proj_bias),
            {inner, inner}, 2);
  int x = parts[0], z = parts[1];
  // Decode: the conv's window of past inputs and the SSM state are the layer's cache.
  int conv_state = decode ? cache_input(m + ".conv_state", act_, {B_, inner, k}, std::nullopt) : -1;
  std::vector<int> conv_in{x, b_.weight(m + ".conv1d.weight", plain_, {inner, k}),
                           c_.ssm_conv_bias ? b_.weight(m + ".conv1d.bias", plain_, {inner}) : -1,
                           conv_state};
  x = b_.op("CausalConv1d", m + ".conv1d", conv_in, {{"activation", string_attr("silu")}},
            "rooflens");
  auto proj =
      split(m + ".x_split", linear(m + ".x_proj", x, inner, rank + 2 * n, false), {rank, n, n}, 2);
  int dt = proj[0], bmat = proj[1], cmat = proj[2];
  if (c_.ssm_norms) {
    dt = norm(m + ".dt_layernorm", dt, rank, NormKind::rms);
    bmat = norm(m + ".b_layernorm", bmat, n, NormKind::rms);
    cmat = norm(m + ".c_layernorm", cmat, n, NormKind::rms);
  }
  dt = linear(m + ".dt_proj", dt, rank, inner, true);
  int state = decode ? cache_input(m + ".ssm_state", DType::f32, {B_, inner, n}, std::nullopt) : -1;
  int y = b_.op("SelectiveScan", m + ".selective_scan",
                {x, dt, b_.weight(m + ".A_log", plain_, {inner, n}), bmat, cmat,
                 b_.weight(m + ".D", plain_, {inner}), z, state},
                {}, "rooflens");
  return all_reduce(m + ".all_reduce",
                    linear(m + ".out_proj", y, inner, c_.hidden, c_.ssm_proj_bias));
}

}  // namespace rooflens::lowering
