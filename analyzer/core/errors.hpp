#pragma once
// Errors that reach the user. InputError is a problem with what the user gave us (file, flag,
// config): the CLI prints its one line and exits 2. Anything else is our bug: exit 1.
#include <stdexcept>
#include <string>

namespace rooflens {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rooflens
