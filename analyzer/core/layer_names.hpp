#pragma once
// Layer numbers in node names and module paths, folded so repeated blocks share one name: the
// block view of the terminal, the compare tables and the HTML (through the JSON's `block`).
#include <string>

namespace rooflens {

// Every part between '.' or '/' that is all digits becomes '*':
// "model.layers.12.mlp.down_proj" -> "model.layers.*.mlp.down_proj", "/h.3/attn" -> "/h.*/attn".
std::string fold_layer_numbers(const std::string& name);

// The block a node folds into (the terminal's --by block, the JSON's `block`, the HTML): its name
// with layer numbers folded; a node named after its module (a dynamo export,
// "m.transformer.h.3.mlp.act/pow_4") by its module and its own name less the exporter's counter,
// which differs from layer to layer: "m.transformer.h.*.mlp.act/pow".
std::string node_block(const std::string& name, const std::string& module);

}  // namespace rooflens
