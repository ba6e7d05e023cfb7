// Module scopes of exported nodes (module_scopes.hpp), read for `compare`'s attribution by module.
#include "analyzer/onnx/module_scopes.hpp"

#include <google/protobuf/unknown_field_set.h>

namespace rooflens {
namespace {

// NodeProto.metadata_props (field 9, ONNX 1.16): through reflection where this build's ONNX knows
// the field, else from the unknown fields protobuf keeps for an older schema (Debian's 1.12).
std::vector<std::pair<std::string, std::string>> node_metadata(const onnx::NodeProto& np) {
  std::vector<std::pair<std::string, std::string>> out;
  if (const auto* field = np.GetDescriptor()->FindFieldByName("metadata_props")) {
    const auto* reflection = np.GetReflection();
    for (int i = 0; i < reflection->FieldSize(np, field); ++i) {
      const auto& entry = reflection->GetRepeatedMessage(np, field, i);
      const auto* d = entry.GetDescriptor();
      out.emplace_back(entry.GetReflection()->GetString(entry, d->FindFieldByName("key")),
                       entry.GetReflection()->GetString(entry, d->FindFieldByName("value")));
    }
    return out;
  }
  constexpr int kMetadataProps = 9;
  const google::protobuf::UnknownFieldSet& unknown = np.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& f = unknown.field(i);
    if (f.number() != kMetadataProps ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    google::protobuf::UnknownFieldSet entry;
    if (!entry.ParseFromString(f.length_delimited())) continue;
    std::pair<std::string, std::string> kv;
    for (int j = 0; j < entry.field_count(); ++j) {
      const auto& e = entry.field(j);
      if (e.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
      if (e.number() == 1) kv.first = e.length_delimited();
      if (e.number() == 2) kv.second = e.length_delimited();
    }
    out.push_back(std::move(kv));
  }
  return out;
}

}  // namespace

// The module path of a node as the exporter recorded it, for `compare`'s attribution by module:
// dynamo exports keep it in metadata_props (pkg.torch.onnx.name_scopes: the module paths from the
// root, then the FX node's own name; pkg.torch.onnx.class_hierarchy: their classes, aligned);
// TorchScript exports in the node name ("/layer1/layer1.0/conv1/Conv": scopes, then the op).
std::vector<std::pair<std::string, std::string>> module_scopes_of(const onnx::NodeProto& np) {
  // A Python list repr of strings: "['', 'layer1', 'layer1.0']".
  auto parse_list = [](const std::string& text) {
    std::vector<std::string> items;
    for (size_t i = 0; i < text.size(); ++i) {
      char q = text[i];
      if (q != '\'' && q != '"') continue;
      std::string item;
      for (++i; i < text.size() && text[i] != q; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        item += text[i];
      }
      items.push_back(std::move(item));
    }
    return items;
  };
  std::vector<std::string> paths, classes;
  for (const auto& [key, value] : node_metadata(np)) {
    if (key == "pkg.torch.onnx.name_scopes")
      paths = parse_list(value);
    else if (key == "pkg.torch.onnx.class_hierarchy")
      classes = parse_list(value);
  }
  std::vector<std::pair<std::string, std::string>> scopes;
  if (paths.size() >= 2 && paths[0].empty()) {
    for (size_t i = 0; i + 1 < paths.size(); ++i) {
      std::string cls = i < classes.size() ? classes[i] : "";
      if (auto dot = cls.rfind('.'); dot != std::string::npos) cls = cls.substr(dot + 1);
      scopes.emplace_back(paths[i], cls);
    }
    return scopes;
  }
  const std::string& name = np.name();
  if (name.size() < 2 || name[0] != '/') return scopes;
  scopes.emplace_back("", "");
  std::string path, previous;
  size_t start = 1;
  for (size_t slash = name.find('/', start); slash != std::string::npos;
       slash = name.find('/', start)) {
    std::string part = name.substr(start, slash - start);
    // A scope is an attribute name, or a container's child named with the scope above it
    // ("/layer1/layer1.0/...", "/features/features.0/features.0.0/...": child "0" each time).
    if (path.empty())
      path = part;
    else if (part.size() > previous.size() + 1 && part.rfind(previous + ".", 0) == 0)
      path += part.substr(previous.size());
    else
      path += "." + part;
    scopes.emplace_back(path, "");
    previous = std::move(part);
    start = slash + 1;
  }
  return scopes;
}

}  // namespace rooflens
