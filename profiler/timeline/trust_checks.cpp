#include "profiler/timeline/trust_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "analyzer/hw/device.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "profiler/timeline/kernel_names.hpp"

namespace rooflens::profiler {

namespace {

// Matrix kernels' time per step (GEMM, convolution, attention: cuDNN runs many convolutions as
// GEMM-named kernels, so they are taken together) against the prediction's nodes of those
// families. The prediction is the roofline at the device's peaks, so a run of the same work takes
// about as long or longer. Under a third of the predicted time the kernels did far less work than
// predicted; past 6x far more. On the real H100 runs of tests/data/traces/h100 the right pairs
// give 1.2x (Llama decode) to 2.9x (GPT-2 prefill, its align1 lm_head); Llama's prefill trace
// against its decode prediction 7.7x, its decode trace against the prefill prediction 0.20x.
constexpr double kMatrixFarLess = 1.0 / 3;
constexpr double kMatrixFarMore = 6;

std::string erase_all(std::string s, const std::string& part) {
  for (size_t p; (p = s.find(part)) != std::string::npos;) s.erase(p, part.size());
  return s;
}

struct PrecisionSeen {
  bool tf32 = false, bf16 = false, fp16 = false;
};

// The 16- and 19-bit float types a kernel's name states: "tf32"; "bf16"/"bfloat16"; "fp16", "f16"
// (cuDNN, CUTLASS), "half" (c10::Half, __half), "h1688"/"h16816"/"hgemm" (tensor-core fp16 GEMMs).
PrecisionSeen precision_of(const std::string& name) {
  std::string l = lowercase(name);
  PrecisionSeen p;
  p.tf32 = l.find("tf32") != std::string::npos;
  p.bf16 = l.find("bf16") != std::string::npos || l.find("bfloat16") != std::string::npos;
  std::string rest = erase_all(erase_all(erase_all(l, "bf16"), "bfloat16"), "tf32");
  for (const char* s : {"f16", "half", "h1688", "h16816", "hgemm"})
    p.fp16 |= rest.find(s) != std::string::npos;
  // cuDNN's fused attention names "f16" for bf16 and fp16 alike: it states neither.
  if (l.find("cudnn") != std::string::npos && l.find("sdpa") != std::string::npos) p.fp16 = false;
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string us(double s) {
  return s >= 1e-3 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.1f} us", s * 1e6);
}

std::string count_of(double n, const char* what, const char* none) {
  return n > 0 ? fmt::format("{:g} {}", n, what) : std::string(none);
}

// What the prediction expects: its costed nodes by family.
struct Expected {
  int convolutions = 0, attention = 0;
  double matrix_s = 0;
  std::set<int64_t> q_lens, q_heads;  // attention queries' tokens and heads
};

Expected expected_of(const Analysis& a) {
  Expected e;
  for (const NodeResult& n : a.nodes) {
    if (n.status != NodeStatus::costed || !n.family) continue;
    if (*n.family == OpFamily::conv) ++e.convolutions;
    if (*n.family == OpFamily::gemm || *n.family == OpFamily::conv ||
        *n.family == OpFamily::attention)
      e.matrix_s += n.roof.predicted;
    if (*n.family == OpFamily::attention) {
      ++e.attention;
      if (const auto& d = n.cost.kernel.attention)
        e.q_lens.insert(d->q_len), e.q_heads.insert(d->q_heads);
    }
  }
  return e;
}

// The precision the prediction's matrix work runs in: the one with most predicted time.
Precision predicted_precision(const Analysis& a) {
  std::map<Precision, double> time;
  for (const NodeResult& n : a.nodes)
    if (n.status == NodeStatus::costed && n.family &&
        (*n.family == OpFamily::gemm || *n.family == OpFamily::conv ||
         *n.family == OpFamily::attention))
      time[n.precision] += n.roof.predicted;
  auto best = std::max_element(time.begin(), time.end(),
                               [](const auto& x, const auto& y) { return x.second < y.second; });
  return best == time.end() ? Precision::fp32 : best->first;
}

std::string phase_of(const Analysis& a) {
  return a.transformer ? a.transformer->workload : "";
}

// The trace runs the kernels that mark this model: as many attention kernels per step as the
// model has attention nodes, or convolutions where the model has them.
bool signature_agrees(const KernelCensus& k, const Expected& e) {
  return (e.attention > 0 && k.attention == e.attention) ||
         (e.convolutions > 0 && k.any_convolution);
}

void check_classes(const Analysis& a, const KernelCensus& k, const Expected& e,
                   std::vector<std::string>& out) {
  bool conv_mismatch =
      (e.convolutions == 0 && k.any_convolution) ||
      (e.convolutions > 0 && !k.any_convolution && (k.any_gemm || k.any_attention));
  // Training runs attention forward and backward: the count per layer is not one.
  bool attention_mismatch = (e.attention == 0 && k.any_attention) ||
                            (k.per_iteration && e.attention > 0 && k.attention > 0 &&
                             k.attention != e.attention && !a.training);
  if (!conv_mismatch && !attention_mismatch) return;
  out.push_back(fmt::format(
      "the trace has {} and {} per step; the model predicts {} and {}",
      count_of(k.convolutions, "convolution kernels", "no convolution"),
      count_of(k.attention, "attention kernels", "no attention"),
      e.convolutions > 0 ? fmt::format("{} convolutions", e.convolutions) : "no convolution",
      e.attention > 0 ? fmt::format("{} attention layers", e.attention) : "no attention"));
}

void check_matrix_time(const Analysis& a, const Trace& t, const KernelCensus& k, const Expected& e,
                       std::vector<std::string>& out) {
  // Only a whole forward of this model per step tells the work apart: a trace of part of the
  // model, or steps cut by --steps N, holds less by design.
  if (e.matrix_s <= 0 || k.matrix_s <= 0 || !k.per_iteration || !signature_agrees(k, e)) return;
  // On another GPU the roofs differ: the device check speaks for that.
  if (auto d = device_for_gpu_name(t.gpu, 0); d && d->id != a.device.id) return;
  double ratio = k.matrix_s / e.matrix_s;
  if (ratio >= kMatrixFarLess && ratio <= kMatrixFarMore) return;
  std::string phase = phase_of(a);
  out.push_back(
      fmt::format("matrix kernels (GEMM, convolution, attention) take {} per step where the "
                  "{}prediction's need {} at "
                  "the roofline ({:.2g}x): "
                  "the run did {} work than predicted (check --phase, --seq, --context, --batch)",
                  us(k.matrix_s), phase.empty() ? "" : phase + " ", us(e.matrix_s), ratio,
                  ratio > 1 ? "far more" : "far less"));
}

// Attention queries [batch, heads, tokens, head dim], where record_shapes recorded them.
void check_shapes(const Analysis& a, const Trace& t, const Expected& e,
                  std::vector<std::string>& out) {
  if (e.q_lens.empty()) return;
  std::map<int64_t, int> tokens, heads;
  std::string op;
  for (const OpShapes& s : t.op_shapes)
    if (!s.inputs.empty() && s.inputs[0].size() == 4) {
      ++tokens[s.inputs[0][2]];
      ++heads[s.inputs[0][1]];
      op = s.op;
    }
  if (tokens.empty()) return;
  auto most = [](const std::map<int64_t, int>& m) {
    return std::max_element(m.begin(), m.end(),
                            [](const auto& x, const auto& y) { return x.second < y.second; })
        ->first;
  };
  int64_t n = most(tokens), h = most(heads);
  std::string phase = phase_of(a);
  if (!e.q_lens.count(n))
    out.push_back(
        fmt::format("the trace's attention queries hold {} tokens (Input Dims of {}); the "
                    "{}prediction's hold {}",
                    n, op, phase.empty() ? "" : phase + " ", *e.q_lens.begin()));
  if (!e.q_heads.count(h))
    out.push_back(fmt::format(
        "the trace's attention runs {} query heads (Input Dims of {}); the model has {}", h, op,
        *e.q_heads.begin()));
}

}  // namespace

KernelCensus kernel_census(const Trace& t, const std::vector<int>& activity_step, int steps,
                           bool per_iteration) {
  size_t n = static_cast<size_t>(std::max(steps, 1));
  std::vector<KernelCensus> per(n);
  std::map<KernelClass, bool> any;
  std::unordered_map<std::string, std::pair<KernelClass, PrecisionSeen>> names;
  for (size_t i = 0; i < t.activities.size(); ++i) {
    const GpuActivity& g = t.activities[i];
    if (g.kind != GpuActivity::Kind::kernel) continue;
    // A trace repeats a few hundred names over and over: each is read once.
    auto known = names.find(g.name);
    if (known == names.end()) {
      std::string name = demangle_kernel(g.name);
      known = names.emplace(g.name, std::make_pair(kernel_class(name), precision_of(name))).first;
    }
    auto [k, p] = known->second;
    any[k] = true;
    int s = steps > 0 && i < activity_step.size() ? activity_step[i] : 0;
    if (s < 0 || static_cast<size_t>(s) >= n) continue;
    KernelCensus& c = per[static_cast<size_t>(s)];
    double d = seconds(g.start_ns, g.end_ns);
    if (k == KernelClass::convolution) ++c.convolutions;
    if (k == KernelClass::attention) ++c.attention;
    if (k == KernelClass::gemm) ++c.gemms;
    if (k == KernelClass::gemm || k == KernelClass::convolution || k == KernelClass::attention)
      c.matrix_s += d;
    if (p.tf32) ++c.tf32, c.tf32_s += d;
    c.bf16 += p.bf16;
    c.fp16 += p.fp16;
  }
  KernelCensus out;
  auto med = [&](double KernelCensus::*f) {
    std::vector<double> v;
    for (const auto& c : per) v.push_back(c.*f);
    out.*f = median(std::move(v));
  };
  for (auto f : {&KernelCensus::convolutions, &KernelCensus::attention, &KernelCensus::gemms,
                 &KernelCensus::matrix_s, &KernelCensus::tf32, &KernelCensus::bf16,
                 &KernelCensus::fp16, &KernelCensus::tf32_s})
    med(f);
  out.any_convolution = any[KernelClass::convolution];
  out.any_attention = any[KernelClass::attention];
  out.any_gemm = any[KernelClass::gemm];
  out.per_iteration = per_iteration;
  return out;
}

std::string precision_mismatch(const Analysis& a, const KernelCensus& k) {
  Precision p = predicted_precision(a);
  // How to predict what ran: ONNX models take --dtype, configs their weights' and activations'
  // dtypes.
  auto predict_in = [&](const char* dtype) {
    return a.transformer ? fmt::format("--weights {0} --activations {0}", dtype)
                         : fmt::format("--dtype {}", dtype);
  };
  if (p == Precision::fp32 && k.tf32 > 0)
    return fmt::format(
        "{:g} kernels per step ({}) run in TF32 where the prediction is strict fp32{}", k.tf32,
        us(k.tf32_s), a.transformer ? "" : ": pass --math tf32-conv or tf32 to predict what ran");
  // The majority of the kernels that state a type decides.
  if (p == Precision::bf16 && k.fp16 > k.bf16)
    return fmt::format(
        "the kernels ran in fp16 ({:g} name fp16, {:g} bf16 per step) where the prediction is "
        "bf16: pass {}",
        k.fp16, k.bf16, predict_in("fp16"));
  if (p == Precision::fp16 && k.bf16 > k.fp16)
    return fmt::format(
        "the kernels ran in bf16 ({:g} name bf16, {:g} fp16 per step) where the prediction is "
        "fp16: pass {}",
        k.bf16, k.fp16, predict_in("bf16"));
  return "";
}

TrustFindings check_trust(const Analysis& a, const Trace& t, const KernelCensus& census,
                          const TrustOptions& o) {
  TrustFindings f;
  Expected e = expected_of(a);
  if (o.device_given && !t.gpu.empty())
    if (auto d = device_for_gpu_name(t.gpu, 0); d && d->id != a.device.id)
      f.mismatches.push_back(
          fmt::format("the trace ran on {} ({}); --device says {}", t.gpu, d->id, a.device.id));
  check_classes(a, census, e, f.mismatches);
  check_shapes(a, t, e, f.mismatches);
  check_matrix_time(a, t, census, e, f.mismatches);
  f.precision = precision_mismatch(a, census);
  return f;
}

}  // namespace rooflens::profiler
