#pragma once
// Builds small ONNX models in memory and writes them to a temp file, so tests of rules,
// liveness and errors go through the real loader. Expected values in tests are computed by
// hand next to each check.
#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/ir/graph_builder.hpp"

namespace rooflens::test {

using Dim = std::variant<int64_t, std::string>;

struct Attr {
  std::string name;
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>> value;
};

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);
  ModelBuilder& import(const std::string& domain, int64_t version);
  ModelBuilder& input(const std::string& name, DType t, std::vector<Dim> dims);
  ModelBuilder& output(const std::string& name);
  // A float (or other) initializer whose data is left external: only dims and dtype matter.
  ModelBuilder& weight(const std::string& name, DType t, std::vector<int64_t> dims);
  ModelBuilder& ints(const std::string& name,
                     std::vector<int64_t> values);                   // 1-D int64 initializer
  ModelBuilder& scalar(const std::string& name, float value);        // float scalar initializer
  ModelBuilder& int_scalar(const std::string& name, int64_t value);  // 0-d int64 initializer
  ModelBuilder& floats(const std::string& name,
                       std::vector<float> values);  // 1-D float32 initializer
  ModelBuilder& node(const std::string& op, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, std::vector<Attr> attrs = {},
                     const std::string& domain = "");
  onnx::ModelProto& proto() { return model_; }
  std::string save() const;  // path of a temp file holding the model

 private:
  onnx::ModelProto model_;
  int counter_ = 0;
};

Analysis analyze_model(const ModelBuilder& b, std::map<std::string, int64_t> dims = {},
                       std::optional<Precision> precision = std::nullopt,
                       const std::string& device = "H100-SXM");
const NodeResult& node_named(const Analysis& a, const std::string& name);
// Marks `out` as the graph's output and analyzes what `b` built (default options).
Analysis analyze_built(GraphBuilder& b, int out);
std::string data_path(const std::string& relative);  // under the source tree

}  // namespace rooflens::test
