// libFuzzer target: bytes -> config.json parser -> lowering -> analysis in each workload, with
// tensor parallelism and naive attention too, and a training step (--phase train) in two set-ups.
// InputError is the expected outcome for bad input.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analyzer/core/errors.hpp"
#include "analyzer/training/training.hpp"
#include "analyzer/transformers/analyze_transformer.hpp"
#include "reports/sink.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rooflens;
  std::string text(reinterpret_cast<const char*>(data), size);
  TransformerConfig c;
  try {
    c = parse_transformer_config(text, "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  // Within the documented limits a config may still lower to millions of nodes; keep each
  // execution short so the fuzzer explores (the limits themselves are unit-tested).
  if (c.layers > 4 || c.experts > 64) return 0;
  for (int variant = 0; variant < 4; ++variant) {
    TransformerOptions o;
    o.workload = variant == 0   ? Workload::prefill
                 : variant == 1 ? Workload::decode
                                : Workload::generate;
    o.lowering.seq = 4;
    o.lowering.context = 5;
    o.prompt = 3;
    o.gen = 3;
    if (variant == 3) {
      o.lowering.tp = 2;
      o.lowering.attention = AttentionImpl::naive;
      o.lowering.weights = DType::i4;
      o.lowering.activations = DType::f8e4m3fn;
    }
    try {
      Analysis a = analyze_transformer(c, o);
      std::ostringstream sink;
      reports::TableSink(5).write(sink, a);
      reports::JsonSink().write(sink, a);
    } catch (const InputError&) {
    }
  }
  for (int variant = 0; variant < 2; ++variant) {
    TransformerOptions o;
    o.lowering.batch = 2;
    o.lowering.seq = 4;
    TrainingOptions t;
    if (variant == 1) {
      o.lowering.tp = 2;
      t.sp = true;
      t.precision = TrainPrecision::fp32;
      t.recompute = Recompute::full;
      t.zero = 3;
      t.dp = 2;
      t.grad_accum = 2;
      t.optimizer = OptimizerKind::adafactor;
    }
    try {
      Analysis a = analyze_training(c, o, t);
      std::ostringstream sink;
      reports::TableSink(5).write(sink, a);
      reports::JsonSink().write(sink, a);
    } catch (const InputError&) {
    }
  }
  // A multimodal wrapper's vision tower (--part vision): one image of its patches.
  try {
    TransformerConfig v = parse_transformer_config(text, "fuzz.json", ConfigPart::vision);
    if (v.layers > 4 || v.vision->tokens() > 4096) return 0;
    TransformerOptions o;
    o.lowering.seq = v.vision->tokens();
    Analysis a = analyze_transformer(v, o);
    std::ostringstream sink;
    reports::JsonSink().write(sink, a);
  } catch (const InputError&) {
  }
  return 0;
}
