// Every decoder family against transformers itself (tests/data/configs/family_reference.json,
// written by scripts/gpu/reference_families.py with transformers 5.17 and torch 2.11): the full
// model's parameter count, and on its 2-layer copy in bf16 the prefill (512 tokens) and decode
// (512 cached) FLOPs as PyTorch's FlopCounterMode counts them (matrix products only), and the
// bytes the cache object holds. The configs were written by each family's own config class.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analyzer/core/formulas.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "model_builder.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

const nlohmann::json& reference() {
  static const nlohmann::json ref = [] {
    std::ifstream in(data_path("tests/data/configs/family_reference.json"));
    return nlohmann::json::parse(in);
  }();
  return ref;
}

// Our nodes seen as FlopCounterMode sees a model: 2 FLOPs per multiply-accumulate of each matrix
// product, nothing for element-wise work.
struct CounterView {
  double linear = 0, experts = 0, attention_causal = 0, attention_dense = 0, linear_attention = 0,
         ssm = 0, conv = 0;
  double total_dense() const {
    return linear + experts + attention_dense + linear_attention + ssm + conv;
  }
};

CounterView counter_view(const Analysis& a, const TransformerConfig& c) {
  CounterView v;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed) continue;
    double mm = 2.0 * static_cast<double>(n.cost.macs.value_or(0));
    bool naive_attention =
        n.op == "Einsum" && (n.name.ends_with(".scores") || n.name.ends_with(".context"));
    if (naive_attention) {
      v.attention_causal += mm;
      v.attention_dense += mm;
    } else if (n.op == "MatMul" || n.op == "com.microsoft.FusedMatMul" || n.op == "Einsum") {
      v.linear += mm;
    } else if (n.op == "com.microsoft.MoE") {
      v.experts += mm;
    } else if (n.cost.kernel.attention) {
      v.attention_causal +=
          static_cast<double>(attention_matmul_flops(*n.cost.kernel.attention, false));
      v.attention_dense +=
          static_cast<double>(attention_matmul_flops(*n.cost.kernel.attention, true));
    } else if (n.op == "rooflens.LinearAttention") {
      v.linear_attention += mm;
    } else if (n.op ==
               "rooflens.SelectiveScan") {  // the C contraction: 2 N of every 8N + 11 per channel
      double per = static_cast<double>(kScanFlopsPerState * c.ssm_state + kScanFlopsPerChannel);
      v.ssm += static_cast<double>(n.cost.flops) / per * 2.0 * static_cast<double>(c.ssm_state);
    } else if (n.op == "rooflens.CausalConv1d") {
      v.conv += mm;
    }
  }
  return v;
}

double kind(const nlohmann::json& counted, const char* k) {
  const auto& by = counted.at("by_kind");
  return by.contains(k) ? by.at(k).get<double>() : 0.0;
}

bool within(double ours, double ref, double rel) {
  return std::fabs(ours - ref) <= rel * std::max(std::fabs(ref), 1.0);
}

std::string config_path(const std::string& family, bool two_layer) {
  return data_path("tests/data/configs/" + family +
                   (two_layer ? "/two-layer/config.json" : "/config.json"));
}

Analysis run(const TransformerConfig& c, Workload w, AttentionImpl impl) {
  TransformerOptions o;
  o.workload = w;
  o.lowering.seq = 512;
  o.lowering.context = 512;
  o.lowering.attention = impl;
  o.lowering.weights = o.lowering.activations = o.lowering.kv =
      DType::bf16;  // the reference ran in bf16
  return analyze_transformer(c, o);
}

struct Outcome {
  std::string family;
  bool built = false, params = false, linear = false, attention = false, decode = false, kv = false;
  double params_diff = 0, linear_diff = 0, attention_of_dense = 0,
         decode_diff = 0;  // relative to transformers
  int64_t kv_bytes = 0;
  std::string not_costed;
  bool all() const { return built && params && linear && attention && decode && kv; }
};

double rel(double ours, double ref) {
  return ref != 0 ? (ours - ref) / ref : ours;
}

Outcome check_family(const std::string& family, const nlohmann::json& r) {
  Outcome out{family};
  if (r.contains("error")) {
    out.not_costed = "no reference: " + r.at("error").get<std::string>();
    return out;
  }
  out.built = true;
  TransformerConfig full = load_transformer_config(config_path(family, false));
  Analysis whole = run(full, Workload::prefill, AttentionImpl::flash);
  INFO(family << ": params " << whole.transformer->params_total << " vs transformers "
              << r.at("params").get<int64_t>());
  out.params = within(static_cast<double>(whole.transformer->params_total),
                      r.at("params").get<double>(), 1e-3);
  out.params_diff =
      rel(static_cast<double>(whole.transformer->params_total), r.at("params").get<double>());
  CHECK(out.params);

  const nlohmann::json& t = r.at("two_layer");
  TransformerConfig two = load_transformer_config(config_path(family, true));
  // Eager transformers caches MLA's decompressed per-head K/V: the naive lowering is that model.
  AttentionImpl impl = two.mla() ? AttentionImpl::naive : AttentionImpl::flash;
  Analysis prefill = run(two, Workload::prefill, AttentionImpl::flash);
  CHECK(prefill.transformer->params_total == t.at("params").get<int64_t>());
  CounterView p = counter_view(prefill, two);
  const nlohmann::json& rp = t.at("prefill");
  double ref_linear = kind(rp, "linear") + kind(rp, "experts");
  out.linear_diff = rel(p.linear + p.experts, ref_linear);
  out.linear = within(p.linear + p.experts, ref_linear, 0.01) &&
               within(p.ssm, kind(rp, "ssm"), 0.01) && within(p.conv, kind(rp, "conv"), 0.01) &&
               within(p.linear_attention, kind(rp, "linear_attention"), 0.01);
  INFO("prefill linear " << p.linear + p.experts << " vs " << ref_linear << "; ssm " << p.ssm
                         << " vs " << kind(rp, "ssm") << "; conv " << p.conv << " vs "
                         << kind(rp, "conv") << "; linear attention " << p.linear_attention
                         << " vs " << kind(rp, "linear_attention"));
  CHECK(out.linear);
  double ref_attention = kind(rp, "attention");
  out.attention =
      p.attention_causal <= ref_attention * (1 + 1e-9) && ref_attention <= p.attention_dense * 1.01;
  out.attention_of_dense = p.attention_dense > 0 ? ref_attention / p.attention_dense : 1;
  INFO("prefill attention: causal " << p.attention_causal << " <= " << ref_attention << " <= dense "
                                    << p.attention_dense);
  CHECK(out.attention);

  if (!two.causal) {  // an encoder: no decode, no cache
    out.decode = out.kv = true;
    return out;
  }
  Analysis decode = run(two, Workload::decode, impl);
  CounterView d = counter_view(decode, two);
  const nlohmann::json& rd = t.at("decode");
  double ref_decode = rd.at("total").get<double>() - kind(rd, "rope");
  out.decode = within(d.total_dense(), ref_decode, 0.01);
  out.decode_diff = rel(d.total_dense(), ref_decode);
  INFO("decode " << d.total_dense() << " vs " << ref_decode);
  CHECK(out.decode);

  LoweringOptions lo;
  lo.attention = impl;
  lo.weights = lo.activations = lo.kv = DType::bf16;
  int64_t after_prefill = kv_cache_bytes(two, lo, 512), after_decode = kv_cache_bytes(two, lo, 513);
  INFO("cache " << after_prefill << " / " << after_decode << " vs "
                << t.at("cache_after_prefill").at("state_bytes") << " / "
                << t.at("cache_after_decode").at("state_bytes"));
  out.kv_bytes = after_prefill;
  out.kv = after_prefill == t.at("cache_after_prefill").at("state_bytes").get<int64_t>() &&
           after_decode == t.at("cache_after_decode").at("state_bytes").get<int64_t>();
  CHECK(out.kv);
  for (const auto& [op, n] : prefill.coverage.missing) out.not_costed += op + " ";
  return out;
}

}  // namespace

TEST_CASE("every family matches transformers: params, FLOPs, KV cache", "[transformer][families]") {
  const nlohmann::json& fams = reference().at("families");
  REQUIRE(fams.size() == 42);
  int matched = 0;
  std::vector<Outcome> outcomes;
  for (auto it = fams.begin(); it != fams.end(); ++it) {
    INFO(it.key());
    outcomes.push_back(check_family(it.key(), it.value()));
    matched += outcomes.back().all() ? 1 : 0;
  }
  // Differences relative to transformers; attention: transformers' (dense) figure over our dense
  // one.
  std::cout << "family            params   linear  attention   decode  KV after 512 (B)  all\n";
  for (const Outcome& o : outcomes)
    std::cout << fmt::format(
        "{:<17} {:+7.3f}% {:+7.3f}% {:9.3f} {:+7.3f}% {:>17} {}{}\n", o.family, 100 * o.params_diff,
        100 * o.linear_diff, o.attention_of_dense, 100 * o.decode_diff,
        o.kv ? std::to_string(o.kv_bytes) + " =" : "differs", o.all() ? "yes" : "no",
        o.not_costed.empty() ? "" : "  " + o.not_costed);
  std::cout << matched << " of " << fams.size() << " families match transformers on every check\n";
  CHECK(matched ==
        42);  // the issue asks for 36 of 42; all match, and a regression should fail here
}
