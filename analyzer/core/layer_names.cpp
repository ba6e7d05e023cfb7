#include "analyzer/core/layer_names.hpp"

#include <algorithm>
#include <cctype>

namespace rooflens {

std::string fold_layer_numbers(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = name.find_first_of("./", i);
    if (j == std::string::npos) j = name.size();
    std::string part = name.substr(i, j - i);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); });
    out += digits ? "*" : part;
    if (j < name.size()) out += name[j];
    i = j + 1;
  }
  return out;
}

}  // namespace rooflens
