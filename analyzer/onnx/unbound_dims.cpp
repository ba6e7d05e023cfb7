#include "analyzer/onnx/unbound_dims.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rooflens {

namespace {

// --batch rewrites dim 0 of every input: it binds a dim that is dim 0 of each of them.
bool leads_every_input(const UnboundDim& d, const std::vector<std::string>& leading) {
  std::string as_file = d.name.empty() ? "unnamed" : "'" + d.name + "'";
  return d.index == 0 && !leading.empty() &&
         std::all_of(leading.begin(), leading.end(),
                     [&](const std::string& l) { return l == as_file; });
}

std::string where(const UnboundDim& d) {
  return d.name.empty() ? fmt::format("input '{}' dim {} (unnamed)", d.input, d.index)
                        : fmt::format("input '{}' dim {} '{}'", d.input, d.index, d.name);
}

}  // namespace

std::string unbound_dims_message(const std::string& path, const std::vector<UnboundDim>& all,
                                 const std::vector<std::string>& leading) {
  // A name shared by several inputs is one dim to bind: listed once, where it first appears.
  std::vector<UnboundDim> dims;
  for (const UnboundDim& d : all)
    if (d.name.empty() || std::none_of(dims.begin(), dims.end(),
                                       [&](const UnboundDim& x) { return x.name == d.name; }))
      dims.push_back(d);
  std::vector<std::string> places, flags;
  std::string batch;  // the dim --batch binds, if one leads every input
  bool unbindable = false;
  for (const UnboundDim& d : dims) {
    places.push_back(where(d));
    bool leads = leads_every_input(d, leading);
    if (leads) batch = d.name.empty() ? "dim 0" : "'" + d.name + "'";
    if (!d.name.empty())
      flags.push_back(fmt::format("--dim {}=N", d.name));
    else if (!leads)
      unbindable = true;
  }
  std::string how;
  if (!flags.empty())
    how = fmt::format("bind {} with {}", dims.size() == 1 ? "it" : "them", fmt::join(flags, " "));
  if (!batch.empty())
    how +=
        fmt::format("{}--batch N binds {} (dim 0 of every input)", how.empty() ? "" : "; ", batch);
  if (unbindable)
    how +=
        fmt::format("{}a dim with neither a size nor a name cannot be bound from the command line",
                    how.empty() ? "" : "; ");
  if (dims.size() == 1)
    return fmt::format("{}: {} is {}; {}", path, places[0],
                       dims[0].name.empty() ? "unbound" : "symbolic", how);
  return fmt::format("{}: {} input dims are unbound: {}; {}", path, dims.size(),
                     fmt::join(places, ", "), how);
}

}  // namespace rooflens
