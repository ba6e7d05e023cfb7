// The shared formulas, against hand-computed values.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/formulas.hpp"

using namespace rooflens;

TEST_CASE("GEMM counts a multiply-accumulate as two FLOPs", "[formulas]") {
  GemmDims d{1, 2, 3, 4};
  CHECK(gemm_macs(d) == 24);
  CHECK(gemm_flops(d) == 48);
  CHECK(gemm_macs(GemmDims{5, 2, 3, 4}) == 120);
}

TEST_CASE("conv MACs match ResNet-50's stem (7x7 - 3->64 - 112x112 out)", "[formulas]") {
  // 64 * 112 * 112 * 3 * 49 = 118,013,952
  CHECK(conv_macs(1, 64, 112 * 112, 3, 49) == 118013952);
}

TEST_CASE("causal attention executes the unmasked pairs only", "[formulas]") {
  CHECK(attention_pairs(4, 4, false) == 16);
  CHECK(attention_pairs(4, 4, true) == 10);    // 1 + 2 + 3 + 4
  CHECK(attention_pairs(1, 10, true) == 10);   // decode: one query sees the whole cache
  CHECK(attention_pairs(2, 5, true) == 9);     // 4 + 5
  CHECK(attention_pairs(4, 4, true, 2) == 7);  // window 2: 1 + 2 + 2 + 2
  CHECK(attention_pairs(3, 10, true, 4) == 12);
  // Large prefill: S*(S+1)/2, about half of S^2.
  CHECK(attention_pairs(4096, 4096, true) == 4096LL * 4097 / 2);
}

TEST_CASE("attention core FLOPs: QK^T - scale - softmax - PV per score", "[formulas]") {
  AttentionDims d;
  d.batch = 1;
  d.q_heads = d.kv_heads = 2;
  d.q_len = d.kv_len = 4;
  d.head_dim_qk = d.head_dim_v = 8;
  // per score: 2*8 + 1 + 5 + 2*8 = 38
  AttentionWork dense = attention_core(d);
  CHECK(dense.scores_dense == 32);
  CHECK(dense.flops == 32 * 38);
  d.causal = true;
  AttentionWork causal = attention_core(d);
  CHECK(causal.scores_executed == 20);
  CHECK(causal.flops == 20 * 38);
  CHECK(causal.dense_flops == 32 * 38);
}

TEST_CASE("products that overflow 64 bits are input errors", "[formulas]") {
  GemmDims d{1, 1LL << 31, 1LL << 31, 1LL << 31};
  CHECK_THROWS_AS(gemm_flops(d), InputError);
}
