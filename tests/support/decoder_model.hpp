#pragma once
// Writes a Llama-style decoder as an ONNX file the way exporters lay it out (decomposed RMS
// norm, separate q/k/v/o projections, explicit attention MatMuls, SwiGLU MLP). Weights are
// either external (data never written) or inline zeros.
#include <cstdint>
#include <string>

namespace rooflens::bench {

struct DecoderShape {
  int64_t layers = 32, hidden = 4096, heads = 32, intermediate = 11008, vocab = 32000;
  bool inline_weights = false;  // fp16 zeros in the file; else external references
};

// Returns the number of float parameters written.
int64_t write_decoder(const std::string& path, const DecoderShape& s);

}  // namespace rooflens::bench
