#pragma once
// The one error line for a model whose inputs leave dims unbound: every such dim, and the flags
// that bind each (--dim NAME=N; --batch N where the dim leads every input).
#include <string>
#include <vector>

#include "analyzer/core/errors.hpp"

namespace rooflens {

// The model's own inputs leave dims unbound: no flag given caused it (not --batch's rewrite).
class UnboundDimsError : public InputError {
 public:
  using InputError::InputError;
};

struct UnboundDim {
  std::string input;  // the input's name
  int index = 0;      // which of its dims
  std::string name;   // the symbolic name; empty: the dim has neither a size nor a name
};

// `leading`: dim 0 of every input of rank >= 1 as the file has it ("'batch'", "8", "unnamed").
std::string unbound_dims_message(const std::string& path, const std::vector<UnboundDim>& dims,
                                 const std::vector<std::string>& leading);

}  // namespace rooflens
