#pragma once
// A Hugging Face model directory's weights as its files describe them, without reading a weight:
// model.safetensors.index.json (tensor names, total bytes) and each present shard's header
// (8-byte length, then JSON: dtype and shape per tensor).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rooflens {

// What a Hugging Face model directory says about its weights: the safetensors index (tensor
// count, total bytes) and, where the shards are present, their headers (elements per dtype).
struct CheckpointIndex {
  std::string path;
  int64_t tensors = 0;
  int64_t total_bytes = 0;      // metadata.total_size; 0 when absent
  int64_t header_elements = 0;  // from the shards' headers; 0 when no shard was read
  std::vector<std::pair<std::string, int64_t>> dtype_elements;  // safetensors dtype -> elements
  int shards_read = 0, shards_missing = 0;
};

// nullopt when the directory holds neither an index nor a model.safetensors; InputError when a
// file it holds is malformed.
std::optional<CheckpointIndex> read_checkpoint_index(const std::string& directory);

// Bytes per element of a safetensors dtype name ("BF16", "F8_E4M3", "U8", ...); 0 if unknown.
double safetensors_dtype_bytes(const std::string& dtype);

}  // namespace rooflens
