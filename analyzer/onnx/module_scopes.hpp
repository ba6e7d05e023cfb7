#pragma once
// The framework module a node of an exported graph came from, as the exporter recorded it: the
// path of module scopes from the root, with class names where the file has them.
#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

namespace rooflens {

// ("", "ResNet"), ("layer1", "Sequential"), ("layer1.0", "Bottleneck"), ...: from a dynamo
// export's metadata_props, else from a TorchScript export's node name; empty when neither says.
std::vector<std::pair<std::string, std::string>> module_scopes_of(const onnx::NodeProto& np);

}  // namespace rooflens
