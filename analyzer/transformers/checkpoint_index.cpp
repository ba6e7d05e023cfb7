#include "analyzer/transformers/checkpoint_index.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"

namespace rooflens {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ULL << 20;  // a safetensors header beyond this is not one

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > static_cast<size_t>(limits::kMaxConfigBytes))
    throw InputError(fmt::format("{}: too large", path));
  try {
    return json::parse(ss.str());
  } catch (const json::exception&) {
    throw InputError(fmt::format("{}: malformed JSON", path));
  }
}

// Adds one shard's tensors (elements per dtype) from its header; returns the tensor count.
int64_t read_shard_header(const std::string& path, std::map<std::string, int64_t>& elements) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw InputError(fmt::format("{}: not a safetensors file (no header)", path));
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  if (len == 0 || len > kMaxHeaderBytes)
    throw InputError(fmt::format("{}: safetensors header of {} bytes is not plausible", path, len));
  std::string header(len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(len)))
    throw InputError(fmt::format("{}: truncated safetensors header", path));
  json h;
  try {
    h = json::parse(header);
  } catch (const json::exception&) {
    throw InputError(fmt::format("{}: malformed safetensors header", path));
  }
  if (!h.is_object()) throw InputError(fmt::format("{}: malformed safetensors header", path));
  int64_t tensors = 0;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const json& t = it.value();
    if (!t.is_object() || !t.contains("dtype") || !t.at("dtype").is_string() ||
        !t.contains("shape") || !t.at("shape").is_array())
      throw InputError(
          fmt::format("{}: tensor {} has no dtype/shape in the header", path, it.key()));
    int64_t n = 1;
    for (const json& d : t.at("shape")) {
      if (!d.is_number_unsigned())
        throw InputError(fmt::format("{}: tensor {} has a bad shape", path, it.key()));
      n = checked_mul(n, d.get<int64_t>(), "tensor size");
    }
    elements[t.at("dtype").get<std::string>()] += n;
    ++tensors;
  }
  return tensors;
}

}  // namespace

double safetensors_dtype_bytes(const std::string& d) {
  static const std::map<std::string, double> bytes{
      {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I64", 8}, {"I32", 4}, {"I16", 2},  {"I8", 1},      {"U8", 1},      {"U16", 2},
      {"U32", 4}, {"U64", 8}, {"BOOL", 1}, {"F8_E8M0", 1}, {"F4", 0.5}};
  auto it = bytes.find(d);
  return it == bytes.end() ? 0 : it->second;
}

std::optional<CheckpointIndex> read_checkpoint_index(const std::string& dir) {
  std::string index_path = dir + "/model.safetensors.index.json",
              single = dir + "/model.safetensors";
  CheckpointIndex c;
  std::set<std::string> shards;
  if (is_file(index_path)) {
    c.path = index_path;
    json j = read_json(index_path);
    if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object())
      throw InputError(fmt::format("{}: no weight_map", index_path));
    const json& map = j.at("weight_map");
    c.tensors = static_cast<int64_t>(map.size());
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it.value().is_string())
        throw InputError(
            fmt::format("{}: weight_map entry {} is not a file name", index_path, it.key()));
      std::string f = it.value().get<std::string>();
      if (f.find('/') != std::string::npos || f == "..")
        throw InputError(fmt::format("{}: shard {} is outside the directory", index_path, f));
      shards.insert(f);
    }
    if (j.contains("metadata") && j.at("metadata").is_object() &&
        j.at("metadata").contains("total_size") &&
        j.at("metadata").at("total_size").is_number_unsigned())
      c.total_bytes = j.at("metadata").at("total_size").get<int64_t>();
  } else if (is_file(single)) {
    c.path = single;
    shards.insert("model.safetensors");
  } else {
    return std::nullopt;
  }
  std::map<std::string, int64_t> elements;
  int64_t header_tensors = 0;
  for (const std::string& s : shards) {
    std::string path = dir + "/" + s;
    if (!is_file(path)) {
      ++c.shards_missing;
      continue;
    }
    header_tensors += read_shard_header(path, elements);
    ++c.shards_read;
  }
  if (c.tensors == 0) c.tensors = header_tensors;
  for (auto& [d, n] : elements) {
    c.dtype_elements.emplace_back(d, n);
    c.header_elements += n;
  }
  return c;
}

}  // namespace rooflens
