#pragma once
// A vanilla PyTorch trace names module instances, not paths: "nn.Module: Linear_12" is the 13th
// Linear the profiler saw called (ids are per class, in order of first call). Their nesting in
// time gives the call tree; matching it to the model's module tree, level by level in call
// order, names each instance by its path. A ModuleList is never called (its children appear
// directly under the parent), a Dropout launches nothing and has no node: both are allowed for.
#include <map>
#include <string>
#include <vector>

#include "profiler/timeline/module_paths.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// "LlamaDecoderLayer_3" -> "LlamaDecoderLayer".
std::string instance_class(const std::string& instance);

struct InstanceMap {
  std::map<std::string, std::string> path;  // instance -> module path
  std::vector<std::string> unmapped;  // instances called but matched to no module, in call order
  std::string root;                   // the instance taken as the model itself
};

// `module_ranges`: the trace's nn.Module ranges (any threads).
InstanceMap map_instances(const std::vector<const NvtxRange*>& module_ranges,
                          const ModelModules& model);

}  // namespace rooflens::profiler
