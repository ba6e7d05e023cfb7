// Expert parallelism (--ep N): one GPU's share of a deployment with data-parallel attention and
// the routed experts spread over the GPUs, each MoE layer's tokens dispatched to their experts'
// GPUs and combined back by two all-to-alls. Counts by hand for Mixtral-8x7B (8 experts, top-2,
// hidden 4096, expert width 14336, 32 layers).
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis mixtral(Workload w, int64_t batch, int64_t tokens, int64_t ep, int64_t tp = 1,
                 const std::string& name = "mixtral-8x7b") {
  TransformerOptions o;
  o.workload = w;
  o.lowering.batch = batch;
  o.lowering.seq = tokens;
  o.lowering.context = tokens;
  o.lowering.ep = ep;
  o.lowering.tp = tp;
  o.lowering.weights = o.lowering.activations = o.lowering.kv = DType::bf16;
  return analyze_transformer(
      load_transformer_config(data_path("samples/configs/" + name + "/config.json")), o);
}

int count_op(const Analysis& a, const std::string& op) {
  int n = 0;
  for (const NodeResult& r : a.nodes) n += r.op == op;
  return n;
}

constexpr int64_t kExpertParams = 32LL * 8 * 3 * 4096 * 14336;  // every layer's routed experts

}  // namespace

TEST_CASE(
    "expert parallel: --ep keeps a quarter of the experts on each GPU and every other weight whole",
    "[transformer][ep]") {
  Analysis a = mixtral(Workload::decode, 32, 1024, 4);
  const TransformerSummary& t = *a.transformer;
  CHECK(t.params_total == 46702792704);  // transformers' count (samples/configs MANIFEST)
  CHECK(t.params_per_gpu == t.params_total - kExpertParams + kExpertParams / 4);
  // The KV cache of this GPU's 8 sequences after the step: all 8 KV heads, 32 layers, K and V of
  // 1,025 tokens.
  CHECK(t.kv_bytes_batch == 8LL * 32 * 2 * 8 * 128 * 1025 * 2);
  CHECK(t.allreduces == 0);
}

TEST_CASE(
    "expert parallel: --ep dispatches each token's k copies and combines them by two all-to-alls a "
    "layer",
    "[transformer][ep]") {
  Analysis ep = mixtral(Workload::decode, 32, 1024, 4);
  Analysis one = mixtral(Workload::decode, 32, 1024, 1);
  CHECK(count_op(ep, "rooflens.AllToAll") == 2 * 32);
  CHECK(count_op(ep, "rooflens.AllReduce") == 0);
  CHECK(count_op(mixtral(Workload::decode, 32, 1024, 1, 2), "rooflens.AllReduce") == 2 * 32 + 1);
  // 8 tokens on this GPU, 2 copies each, 4096 bf16 values a row.
  const NodeResult& dispatch = node_named(ep, "model.layers.0.mlp.experts.dispatch");
  CHECK(dispatch.cost.collective == Collective::all_to_all);
  CHECK(dispatch.cost.collective_ranks == 4);
  CHECK(dispatch.cost.collective_bytes == 8 * 2 * 4096 * 2);
  CHECK(node_named(ep, "model.layers.0.mlp.experts.combine").cost.collective_bytes ==
        8 * 2 * 4096 * 2);
  // The four GPUs' expert work is the whole batch's: 16 rows here, 64 (32 tokens x top-2) there.
  const NodeResult& local = node_named(ep, "model.layers.0.mlp.experts");
  const NodeResult& whole = node_named(one, "model.layers.0.mlp.experts");
  CHECK(local.input_shapes[0] == "[16,4096]");
  CHECK(4 * local.cost.flops == whole.cost.flops);
  // 16 rows over 2 local experts touch both (2 x (1 - 0.5^16)); the whole batch touches all 8.
  CHECK(static_cast<double>(local.cost.read_weight) ==
        Approx(static_cast<double>(whole.cost.read_weight) / 4).epsilon(1e-4));
  // Attention is data-parallel: this GPU's q_proj sees its 8 tokens with every head.
  CHECK(node_named(ep, "model.layers.0.self_attn.q_proj").output_shapes[0] == "[8,1,4096]");
}

TEST_CASE("expert parallel: --ep over a prefill sends every prompt token's copies",
          "[transformer][ep]") {
  Analysis a = mixtral(Workload::prefill, 4, 128, 4);
  CHECK(node_named(a, "model.layers.0.mlp.experts.dispatch").cost.collective_bytes ==
        128 * 2 * 4096 * 2);
  CHECK(node_named(a, "model.layers.0.mlp.experts").input_shapes[0] == "[256,4096]");
}

TEST_CASE("expert parallel: --ep that the model or the batch cannot take is an input error",
          "[transformer][ep]") {
  CHECK_THROWS_WITH(mixtral(Workload::decode, 8, 64, 2, 1, "llama-2-7b"),
                    Catch::Contains("needs a mixture-of-experts model"));
  CHECK_THROWS_WITH(mixtral(Workload::decode, 12, 64, 3),
                    Catch::Contains("does not divide the model's 8 experts"));
  CHECK_THROWS_WITH(mixtral(Workload::decode, 6, 64, 4),
                    Catch::Contains("does not divide --batch 6"));
  CHECK_THROWS_WITH(mixtral(Workload::decode, 8, 64, 2, 2), Catch::Contains("--ep with --tp"));
  CHECK_THROWS_AS(mixtral(Workload::decode, 8, 64, 0), InputError);
}
