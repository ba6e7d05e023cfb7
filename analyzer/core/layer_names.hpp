#pragma once
// Layer numbers in node names and module paths, folded so repeated blocks share one name: the
// block view of the terminal, the compare tables and the HTML (through the JSON's `block`).
#include <string>

namespace rooflens {

// Every part between '.' or '/' that is all digits becomes '*':
// "model.layers.12.mlp.down_proj" -> "model.layers.*.mlp.down_proj", "/h.3/attn" -> "/h.*/attn".
std::string fold_layer_numbers(const std::string& name);

}  // namespace rooflens
