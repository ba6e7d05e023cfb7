#pragma once
// quantization_config read into a QuantizationSpec, and what one quantized weight matrix stores:
// the packed weights and the tensors beside them (scales, zero points, group indices), each in
// its own dtype, so weight bytes come out as the checkpoint holds them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/value.hpp"
#include "analyzer/transformers/config_reader.hpp"
#include "analyzer/transformers/quantization_spec.hpp"

namespace rooflens {

QuantizationSpec read_quantization_config(ConfigReader& r);
const std::vector<std::string>& quantization_keys();
const std::vector<std::string>& quantization_methods();

struct QuantizedStorage {
  DType weight = DType::bf16;
  struct Aux {
    std::string suffix;  // ".scales", ".qzeros", ".g_idx", ...
    DType dtype;
    Shape shape;
  };
  std::vector<Aux> aux;
};

// Storage of an `in` x `out` weight matrix under `q` (for experts, prefix every shape with E).
QuantizedStorage quantized_storage(const QuantizationSpec& q, int64_t in, int64_t out);

// Whether `module` (a framework name such as model.layers.3.mlp.experts) is quantized: not on
// the not-converted list, and an expert when the method converts experts only.
bool quantizes(const QuantizationSpec& q, const std::string& module, bool expert);

// The spec the --weights flag describes (int4 with --group-size, int8 per column, fp8 plain).
QuantizationSpec flag_quantization(DType weights, int64_t group_size);

// '*' matches any run of characters; the pattern may match anywhere in the name (as
// transformers matches modules_to_not_convert).
bool glob_contains(const std::string& pattern, const std::string& name);

}  // namespace rooflens
