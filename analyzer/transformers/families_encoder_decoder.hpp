#pragma once
// Encoder-decoder configs (T5/mT5/Flan-T5, BART/mBART, Whisper): their keys differ from the
// decoder-only families' (separate encoder and decoder depths, heads and widths), so they are read
// by their own reader into a TransformerConfig whose dims are the decoder's and whose `encdec`
// holds the encoder's.
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/transformers/model_config.hpp"

namespace rooflens {

bool is_encoder_decoder_type(const std::string& model_type);

// Reads and validates one encoder-decoder config object; InputError naming the key on any problem,
// a did-you-mean InputError for a key close to one the family reads.
TransformerConfig encoder_decoder_config(const nlohmann::json& j, const std::string& path);

}  // namespace rooflens
