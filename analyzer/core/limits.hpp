#pragma once
// Limits on what rooflens accepts, so that no input can make it crash, hang or allocate without
// bound. Each is enforced with an InputError that names it (docs/limits.md).
#include <cstdint>

namespace rooflens::limits {

inline constexpr int64_t kMaxConfigBytes = 64LL << 20;  // a config.json
inline constexpr int64_t kMaxNodes = 5'000'000;         // graph nodes after inlining functions
inline constexpr int64_t kMaxRank = 32;                 // dims of one tensor
inline constexpr int64_t kMaxDim = 1LL << 40;           // one dim of an input or initializer
inline constexpr int kMaxFunctionDepth = 16;            // nested model-local functions
inline constexpr int64_t kMaxConfigLayers = 10000;      // num_hidden_layers
inline constexpr int64_t kMaxConfigWidth = 1LL << 24;   // hidden, intermediate, vocab, heads, ranks
// ONNX files themselves are bounded by protobuf at 2 GiB; weights beyond live in external data,
// which rooflens never reads. Products of dims are checked for 64-bit overflow everywhere.

}  // namespace rooflens::limits
