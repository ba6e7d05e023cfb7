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
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](unsigned char c) { return std::isdigit(c); });
    out += digits ? "*" : part;
    if (j < name.size()) out += name[j];
    i = j + 1;
  }
  return out;
}

std::string node_block(const std::string& name, const std::string& module) {
  if (module.empty() || name.rfind(module + "/", 0) != 0) return fold_layer_numbers(name);
  std::string own = name.substr(module.size() + 1);
  size_t cut = own.find_last_not_of("0123456789");
  if (cut != std::string::npos && cut + 1 < own.size() && own[cut] == '_') own.erase(cut);
  return fold_layer_numbers(module) + "/" + own;
}

}  // namespace rooflens
