#pragma once
// A vanilla PyTorch trace names module instances, not paths: "nn.Module: Linear_12" is the 13th
// Linear the profiler saw called (ids are per class, in order of first call). Their nesting in
// time gives the call tree; matching it to the model's module tree, level by level in call
// order, names each instance by its path. A ModuleList is never called (its children appear
// directly under the parent), a Dropout launches nothing and has no node: both are allowed for.
// A module called several times in one call of its parent (torchvision's Bottleneck calls its one
// `relu` three times) is matched call by call: TorchScript exports name the calls relu, relu_1,
// relu_2. A BatchNorm the export folded into its convolution has no node: its calls fold into the
// convolution's module beside it.
#include <map>
#include <string>
#include <vector>

#include "profiler/timeline/module_paths.hpp"
#include "profiler/trace/records.hpp"

namespace rooflens::profiler {

// "LlamaDecoderLayer_3" -> "LlamaDecoderLayer".
std::string instance_class(const std::string& instance);

struct InstanceMap {
  std::map<std::string, std::string> path;  // instance -> module path of its first call
  // (instance, k): the k-th call inside one call of its parent, where it differs from `path`.
  std::map<std::pair<std::string, int>, std::string> call_path;
  std::map<const NvtxRange*, int> call_index;  // each range's k
  std::vector<std::string> unmapped;  // instances called but matched to no module, in call order
  std::vector<std::string> folded;    // instances whose calls fold into a neighbour's module
  std::string root;                   // the instance taken as the model itself
  // The module path of one range (nullptr: none).
  const std::string* path_of(const NvtxRange& r) const;
};

// `module_ranges`: the trace's nn.Module ranges (any threads).
InstanceMap map_instances(const std::vector<const NvtxRange*>& module_ranges,
                          const ModelModules& model);

}  // namespace rooflens::profiler
