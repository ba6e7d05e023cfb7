#pragma once
// The one IR: ONNX models and (later) lowered transformer configs both become a Graph of nodes
// and tensors with concrete shapes and dtypes.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/value.hpp"

namespace rooflens {

enum class TensorRole {
  activation,  // produced by a node at run time
  input,       // a graph input the caller feeds
  weight,      // a float initializer: a parameter
  constant,    // an integer/bool initializer or a Constant node's output: not a parameter
};

struct Tensor {
  std::string name;
  DType dtype = DType::undefined;
  std::optional<Shape> shape;
  TensorRole role = TensorRole::activation;
  std::optional<Value> value;  // known contents (small tensors only); see Graph::value
  bool value_in_file = false;  // an initializer whose contents Graph::value reads on first use
  // Computable before the run from initializers and bound dims alone; such tensors are folded
  // by any real runtime, so the nodes producing them cost nothing on the GPU.
  bool is_static = false;
  bool external_data = false;  // initializer whose bytes live in a side file (never read)
  bool is_param = true;        // weights only: false for stored non-learnable tensors
  // A packed weight's parameters where they are not its elements (MatMulNBits' uint8 blobs: N x K).
  std::optional<int64_t> param_values;
  bool is_kv_cache = false;    // a KV cache input: reported as KV cache, not as activations
  int producer = -1;           // node index, -1 for inputs and initializers
  std::vector<int> consumers;  // node indices, in order, may repeat
  bool is_graph_output = false;

  int64_t elements() const;  // requires shape
  // The parameters a weight holds: its elements, or param_values where they differ.
  int64_t params() const { return param_values.value_or(elements()); }
};

struct Attribute {
  enum class Kind { i, f, s, ints, floats, strings, tensor, graph, other };
  Kind kind = Kind::other;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  // For tensor attributes (Constant's value): dtype, dims and contents when small.
  DType tensor_dtype = DType::undefined;
  Shape tensor_dims;
  std::optional<Value> tensor_value;
};

// What a lowered node is for where its op alone does not say: the training step prices a GEMM's
// bias add (part of addmm) and the residual stream's add (where gradients are summed) apart.
// kv_write: a decode step's write of its keys and values into the cache (transformers/lowering).
enum class NodeRole { none, bias_add, residual_add, kv_write };

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;        // "" for the default ONNX domain
  int64_t opset = 0;         // version of `domain` the model imports
  std::vector<int> inputs;   // tensor indices; -1 for an omitted optional input
  std::vector<int> outputs;  // tensor indices; -1 for an omitted optional output
  std::map<std::string, Attribute> attrs;
  std::string foreign_proto;  // serialized NodeProto of an op without a rule (ONNX inference)
  // The framework modules the node came from, root first: ("", "ResNet"), ("layer1", "Sequential"),
  // ("layer1.0", "Bottleneck"), ("layer1.0.conv1", "Conv2d"); from the exporter's scope metadata
  // (onnx_loader), class names where the file has them. Empty when unknown.
  std::vector<std::pair<std::string, std::string>> module_scopes;
  NodeRole role = NodeRole::none;

  int input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
  int output(size_t i) const { return i < outputs.size() ? outputs[i] : -1; }
  const Attribute* attr(const std::string& key) const;
  // The attribute if present; InputError if present with another kind.
  const Attribute* typed_attr(const std::string& key, Attribute::Kind kind) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& key) const;
  std::string display_op() const;  // "Conv" or "com.microsoft.Attention"
};

// Contents the loader left in the model file, read only where a rule asks for a constant.
class StoredContents {
 public:
  virtual ~StoredContents() = default;
  virtual std::optional<Value> read(int tensor) const = 0;
};

// How a graph stores the second operand of its MatMuls: as ONNX reads it, [k, n] (transposed only
// where an attribute says so), or as PyTorch's Linear keeps its weight, [n, k] ([out, in]): a
// config's lowering. The replay runs the GEMM on the layout the model stores.
enum class MatmulBLayout { k_n, n_k };

struct Graph {
  std::string source;    // file the graph came from
  std::string producer;  // e.g. "pytorch 2.11.0"
  MatmulBLayout matmul_b = MatmulBLayout::k_n;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain -> version
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // topological order once loaded
  std::vector<int> inputs;  // fed graph inputs (not initializers)
  std::vector<int> outputs;
  std::vector<std::pair<std::string, int64_t>> bound_dims;  // symbolic dims that were bound
  std::vector<std::string> notes;                           // loader remarks carried to the report
  std::shared_ptr<const StoredContents> stored;             // for tensors with value_in_file

  // The known contents of tensor `t` (nullptr: unknown or t < 0); an initializer's are read from
  // the model file the first time they are asked for.
  const Value* value(int t);

  int find(const std::string& name) const;  // -1 if absent
  int add_tensor(Tensor t);                 // index; name must be new
  int64_t default_opset() const;

 private:
  std::unordered_map<std::string, int> by_name_;
};

std::string shape_string(const Shape& s);

}  // namespace rooflens
