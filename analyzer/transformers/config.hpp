#pragma once
// Reading a Hugging Face config.json (or a model directory holding one) into a TransformerConfig
// (model_config.hpp).
#include <string>
#include <vector>

#include "analyzer/transformers/model_config.hpp"

namespace rooflens {

// Reads and validates a config file, or a Hugging Face model directory holding config.json;
// throws InputError with the file and key on any problem.
// A multimodal wrapper yields its language model (part text) or vision tower (part vision); a
// plain config refuses part vision.
TransformerConfig load_transformer_config(const std::string& path,
                                          ConfigPart part = ConfigPart::text);
TransformerConfig parse_transformer_config(const std::string& json_text, const std::string& path,
                                           ConfigPart part = ConfigPart::text);

// The model_type values with a verified family entry, for error messages and docs.
const std::vector<std::string>& supported_model_types();

}  // namespace rooflens
