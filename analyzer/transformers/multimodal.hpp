#pragma once
// Multimodal wrappers (Gemma 3, LLaVA, Qwen2-VL, Mistral 3, PaliGemma): a config whose language
// model sits in text_config (or, for Qwen2-VL, at the top level beside vision_config) and whose
// vision tower sits in vision_config. The language model is analyzed by default and the report
// says so; --part vision analyzes the tower.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/transformers/model_config.hpp"

namespace rooflens {

// A config with text_config or vision_config.
bool is_multimodal_wrapper(const nlohmann::json& config);

// The language model's own config object: text_config (or the top level less the wrapper's
// keys), with model_type, dtype and tie_word_embeddings taken from the wrapper where the part
// does not state them. `where` names it in messages; `note` says what was left out.
struct TextPart {
  nlohmann::json object;
  std::string where, note;
};
TextPart text_part(const nlohmann::json& wrapper, const std::string& path);

// Module names under the wrapper (transformers 5: model.language_model.layers.N).
void rename_for_wrapper(TransformerConfig& c);

// Keys of the wrapper's top level that rooflens does not read: a near miss of a known key is an
// error, any other a note (the same policy as every other object of a config).
void check_wrapper_keys(TransformerConfig& c, const nlohmann::json& wrapper);

// The vision tower of vision_config (SigLIP, CLIP, Qwen2-VL's with its merger) as an encoder
// config; InputError for a tower rooflens does not lower, naming it.
TransformerConfig vision_tower(const nlohmann::json& wrapper, const std::string& path);

// --part all: the tower with the wrapper's projector to `text_hidden` (Gemma 3, LLaVA; Qwen2-VL's
// merger is in the tower), whose image tokens the language model's prefill reads. Its first
// warning says what runs.
TransformerConfig image_encoder(const nlohmann::json& wrapper, const std::string& path,
                                int64_t text_hidden);

}  // namespace rooflens
