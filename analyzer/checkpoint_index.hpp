#pragma once
// A Hugging Face model directory's weights as its files describe them, without reading a weight:
// model.safetensors.index.json (tensor names, total bytes) and each present shard's header
// (8-byte length, then JSON: dtype and shape per tensor).
#include <optional>
#include <string>

#include "analyzer/transformer_config.hpp"

namespace rooflens {

// nullopt when the directory holds neither an index nor a model.safetensors; InputError when a
// file it holds is malformed.
std::optional<CheckpointIndex> read_checkpoint_index(const std::string& directory);

// Bytes per element of a safetensors dtype name ("BF16", "F8_E4M3", "U8", ...); 0 if unknown.
double safetensors_dtype_bytes(const std::string& dtype);

}  // namespace rooflens
