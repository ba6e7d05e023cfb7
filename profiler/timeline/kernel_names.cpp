#include "profiler/timeline/kernel_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace rooflens::profiler {

std::string demangle_kernel(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::string short_kernel_name(const std::string& demangled) {
  std::string s = demangled;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  // Drop the parameter list: the last top-level parenthesis group.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      else if (s[i] == '(' && --depth == 0) {
        s = s.substr(0, i);
        break;
      }
    }
  }
  // Inside template arguments, "a::b::Name" reads as "Name".
  std::string out;
  int angle = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') ++angle;
    if (c == '>') --angle;
    if (angle > 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      while (!out.empty() && (std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_')) out.pop_back();
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

bool is_copy_kernel(const std::string& name) {
  std::string l = name;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l.find("copy") != std::string::npos || l.find("concat") != std::string::npos || l.find("catarray") != std::string::npos ||
         l.rfind("memcpy", 0) == 0;
}

}  // namespace rooflens::profiler
