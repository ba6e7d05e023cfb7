#include "analyzer/onnx/loader.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/errors.hpp"
#include "analyzer/core/limits.hpp"
#include "analyzer/onnx/control_flow.hpp"
#include "analyzer/onnx/module_scopes.hpp"
#include "analyzer/onnx/unbound_dims.hpp"
#include "analyzer/onnx/wire.hpp"
#include "analyzer/ops/rule_registry.hpp"

namespace rooflens {
namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 23;
using limits::kMaxFunctionDepth;

DType checked_dtype(int32_t code, const std::string& what) {
  auto d = dtype_from_onnx(code);
  if (!d || *d == DType::undefined)
    throw InputError(fmt::format("{}: unknown element type {}", what, code));
  return *d;
}

Shape checked_dims(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  if (dims.size() > limits::kMaxRank)
    throw InputError(
        fmt::format("{}: rank {} exceeds the limit {}", what, dims.size(), limits::kMaxRank));
  Shape s(dims.begin(), dims.end());
  for (int64_t d : s) {
    if (d < 0) throw InputError(fmt::format("{}: negative dim {}", what, d));
    if (d > limits::kMaxDim)
      throw InputError(fmt::format("{}: dim {} exceeds the limit 2^40", what, d));
  }
  checked_product(s, what + " size");
  return s;
}

Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& where) {
  Attribute r;
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      r.kind = Attribute::Kind::i;
      r.i = a.i();
      break;
    case A::FLOAT:
      r.kind = Attribute::Kind::f;
      r.f = a.f();
      break;
    case A::STRING:
      r.kind = Attribute::Kind::s;
      r.s = a.s();
      break;
    case A::INTS:
      r.kind = Attribute::Kind::ints;
      r.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::FLOATS:
      r.kind = Attribute::Kind::floats;
      r.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::STRINGS:
      r.kind = Attribute::Kind::strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::TENSOR: {
      r.kind = Attribute::Kind::tensor;
      r.tensor_dtype = checked_dtype(a.t().data_type(), where);
      r.tensor_dims = checked_dims(a.t().dims(), where);
      r.tensor_value =
          onnx_wire::decode_tensor(a.t(), r.tensor_dtype, checked_product(r.tensor_dims));
      break;
    }
    case A::GRAPH:
    case A::GRAPHS:
      r.kind = Attribute::Kind::graph;
      break;
    default:
      r.kind = Attribute::Kind::other;
      break;
  }
  return r;
}

void check_model_header(const std::string& path, const onnx::ModelProto& model) {
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw InputError(fmt::format("{}: not an ONNX model (no graph nodes)", path));
  if (model.ir_version() <= 0)
    throw InputError(fmt::format("{}: not an ONNX model (ir_version missing)", path));
  if (model.graph().node_size() > limits::kMaxNodes)
    throw InputError(fmt::format("{}: {} nodes exceed the limit {}", path,
                                 model.graph().node_size(), limits::kMaxNodes));
}

// The model file's bytes, mapped read-only (or, for bytes given in memory, copied), kept while the
// graph lives so that an initializer's payload can be read when a rule asks for it.
class ModelBytes final : public StoredContents {
 public:
  static std::shared_ptr<ModelBytes> map(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    if (S_ISDIR(st.st_mode))
      throw InputError(fmt::format("{}: is a directory, not an ONNX file", path));
    if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{}: not a regular file", path));
    if (st.st_size == 0) throw InputError(fmt::format("{}: empty file, not an ONNX model", path));
    if (st.st_size >= INT_MAX)
      throw InputError(
          fmt::format("{}: {} bytes; a protobuf file must be under 2 GiB (keep the weights "
                      "as external data)",
                      path, st.st_size));
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    size_t size = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (p == MAP_FAILED)
      throw InputError(fmt::format("{}: cannot map: {}", path, std::strerror(err)));
    // Only headers are read, here and there: no read-ahead into the weights around them.
    ::madvise(p, size, MADV_RANDOM);
    auto m = std::shared_ptr<ModelBytes>(new ModelBytes);
    m->data_ = static_cast<const uint8_t*>(p);
    m->size_ = size;
    m->mapped_ = true;
    return m;
  }

  static std::shared_ptr<ModelBytes> copy(const std::string& bytes) {
    auto m = std::shared_ptr<ModelBytes>(new ModelBytes);
    m->copy_ = bytes;
    m->data_ = reinterpret_cast<const uint8_t*>(m->copy_.data());
    m->size_ = m->copy_.size();
    return m;
  }

  ~ModelBytes() override {
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Gives back the pages the walk over the file touched; they are read again if ever needed.
  void release_pages() const {
    if (mapped_) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
  }

  void add(int tensor, const onnx_wire::Payload& p, DType dtype, int64_t count) {
    payloads_[tensor] = {p, dtype, count};
  }

  std::optional<Value> read(int tensor) const override {
    auto it = payloads_.find(tensor);
    if (it == payloads_.end()) return std::nullopt;
    return onnx_wire::read_payload(data_, it->second.payload, it->second.dtype, it->second.count);
  }

 private:
  ModelBytes() = default;
  struct Stored {
    onnx_wire::Payload payload;
    DType dtype;
    int64_t count;
  };
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string copy_;
  std::unordered_map<int, Stored> payloads_;
};

class Converter {
 public:
  Converter(const std::string& path, const LoadOptions& opts, Graph& g, ModelBytes& file,
            const std::vector<std::optional<onnx_wire::Payload>>& payloads)
      : path_(path), opts_(opts), g_(g), file_(file), payloads_(payloads) {}

  void run(onnx::ModelProto& m) {
    g_.source = path_;
    g_.ir_version = m.ir_version();
    g_.producer =
        m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
    for (const auto& o : m.opset_import())
      g_.opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
    if (!g_.opsets.count(""))
      throw InputError(fmt::format("{}: model imports no default-domain opset", path_));
    int64_t v = g_.opsets[""];
    if (v < kMinOpset || v > kMaxOpset)
      throw InputError(
          fmt::format("{}: default-domain opset {} is outside the supported range {}-{}", path_, v,
                      kMinOpset, kMaxOpset));
    for (const auto& f : m.functions()) functions_[f.domain() + "::" + f.name()] = &f;

    const auto& graph = m.graph();
    for (int i = 0; i < graph.initializer_size(); ++i)
      add_initializer(graph.initializer(i),
                      static_cast<size_t>(i) < payloads_.size() ? payloads_[i] : std::nullopt);
    for (const auto& s : graph.sparse_initializer())
      throw InputError(
          fmt::format("{}: sparse initializer '{}' is not supported", path_, s.values().name()));
    for (const auto& in : graph.input()) add_input(in);
    for (const auto& vi : graph.value_info()) add_value_info(vi);
    if (!unbound_.empty()) throw UnboundDimsError(unbound_dims_message(path_, unbound_, dim0_));
    check_batch();
    check_bindings();
    for (const auto& node : graph.node()) add_node(node, "", {}, 0);
    for (const auto& out : graph.output()) {
      int t = g_.find(out.name());
      if (t < 0)
        throw InputError(fmt::format("{}: graph output '{}' names no tensor", path_, out.name()));
      g_.tensors[t].is_graph_output = true;
      g_.outputs.push_back(t);
    }
    check_dangling();
    topological_sort();
  }

 private:
  // `payload`: where the data the stripped copy left out lie in the file.
  void add_initializer(const onnx::TensorProto& init,
                       const std::optional<onnx_wire::Payload>& payload) {
    std::string what = fmt::format("{}: initializer '{}'", path_, init.name());
    if (g_.find(init.name()) >= 0) throw InputError(what + " is defined twice");
    Tensor t;
    t.name = init.name();
    t.dtype = checked_dtype(init.data_type(), what);
    t.shape = checked_dims(init.dims(), what);
    // Float scalars (eps, scales) are constants, not parameters.
    t.role = is_float(t.dtype) && !t.shape->empty() ? TensorRole::weight : TensorRole::constant;
    t.is_static = true;
    t.external_data = init.data_location() == onnx::TensorProto::EXTERNAL;
    // rooflens never reads external data; a location outside the model's folder is refused.
    for (const auto& kv : init.external_data())
      if (kv.key() == "location" && (kv.value().empty() || kv.value()[0] == '/' ||
                                     kv.value().find("..") != std::string::npos ||
                                     kv.value().find('\\') != std::string::npos))
        throw InputError(
            fmt::format("{} external data location '{}' points outside the model's folder; refused",
                        what, kv.value()));
    int64_t count = t.elements();
    if (!payload || t.external_data) {
      t.value = onnx_wire::decode_tensor(init, t.dtype, count);  // the data, if any, are still here
      g_.add_tensor(std::move(t));
      return;
    }
    int64_t want = storage_bytes(t.dtype, count);
    if (payload->raw_bytes >= 0 && dtype_bits(t.dtype) > 0 && payload->raw_bytes != want)
      throw InputError(fmt::format("{}: raw_data holds {} bytes; {} elements of {} take {}", what,
                                   payload->raw_bytes, count, dtype_name(t.dtype), want));
    t.value_in_file = count <= kMaxFoldedElements;
    DType dtype = t.dtype;
    int index = g_.add_tensor(std::move(t));
    if (count <= kMaxFoldedElements) file_.add(index, *payload, dtype, count);
  }

  void add_input(const onnx::ValueInfoProto& in) {
    if (g_.find(in.name()) >= 0) return;  // IR < 4 lists initializers as inputs too
    std::string what = fmt::format("{}: input '{}'", path_, in.name());
    if (!in.type().has_tensor_type())
      throw InputError(what + " is not a tensor (sequences and maps are not supported)");
    const auto& tt = in.type().tensor_type();
    Tensor t;
    t.name = in.name();
    t.role = TensorRole::input;
    t.dtype = checked_dtype(tt.elem_type(), what);
    if (!tt.has_shape()) throw InputError(what + " has no shape in the model");
    if (tt.shape().dim_size() > limits::kMaxRank)
      throw InputError(fmt::format("{} rank {} exceeds the limit {}", what, tt.shape().dim_size(),
                                   limits::kMaxRank));
    Shape s;
    if (opts_.batch && tt.shape().dim_size() == 0)
      throw InputError(
          fmt::format("{} is a scalar: --batch {} rewrites dim 0 of every input, and it has none; "
                      "bind dims with --dim",
                      what, *opts_.batch));
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (i == 0)  // as the file has it, for the unbound-dims message
        dim0_.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                        : d.has_dim_param() && !d.dim_param().empty() ? "'" + d.dim_param() + "'"
                                                                      : "unnamed");
      int64_t value;
      if (i == 0 && opts_.batch) {
        if (d.has_dim_value())
          leading_.emplace_back(in.name(), std::to_string(d.dim_value()));
        else if (d.has_dim_param() && !d.dim_param().empty())
          leading_.emplace_back(in.name(), "'" + d.dim_param() + "'");
        else
          leading_.emplace_back(in.name(), "unnamed");
        if (d.has_dim_param() && opts_.dims.count(d.dim_param()))
          throw InputError(
              fmt::format("{} dim 0 '{}' is bound twice: by --batch and by --dim {}=...", what,
                          d.dim_param(), d.dim_param()));
        value = *opts_.batch;
      } else if (d.has_dim_value()) {
        value = d.dim_value();
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        auto it = opts_.dims.find(d.dim_param());
        if (it == opts_.dims.end() && opts_.bind_unbound_dims > 0) {
          value = opts_.bind_unbound_dims;
        } else if (it == opts_.dims.end()) {
          unbound_.push_back(
              {in.name(), i, d.dim_param()});  // all of them in one message, after the inputs
          value = 1;
        } else {
          value = it->second;
          bound_.insert(d.dim_param());
        }
      } else if (opts_.bind_unbound_dims > 0) {
        value = opts_.bind_unbound_dims;
      } else {
        unbound_.push_back({in.name(), i, ""});
        value = 1;
      }
      if (value <= 0)
        throw InputError(fmt::format("{} dim {} is {}; dims must be positive", what, i, value));
      if (value > limits::kMaxDim)
        throw InputError(fmt::format("{} dim {} is {}, beyond the limit 2^40", what, i, value));
      s.push_back(value);
    }
    checked_product(s, what + " size");
    t.shape = std::move(s);
    g_.inputs.push_back(g_.add_tensor(std::move(t)));
  }

  // --batch: every input led with the same dim (its size, or its symbolic name), now rewritten.
  void check_batch() {
    if (!opts_.batch) return;
    if (leading_.empty())
      throw InputError(
          fmt::format("{}: --batch {}: the model has no inputs to rewrite", path_, *opts_.batch));
    for (const auto& [name, dim] : leading_)
      if (dim != leading_[0].second)
        throw InputError(
            fmt::format("{}: --batch {}: the inputs' leading dims disagree (input '{}' dim 0 is "
                        "{}, input '{}' dim 0 is "
                        "{}), so dim 0 is not one batch; bind dims with --dim",
                        path_, *opts_.batch, leading_[0].first, leading_[0].second, name, dim));
    std::vector<std::string> names;
    for (const auto& [name, dim] : leading_) names.push_back(name);
    g_.notes.push_back(fmt::format("--batch {}: dim 0 of {} input{} ({}) rewritten from {}",
                                   *opts_.batch, names.size(), names.size() == 1 ? "" : "s",
                                   fmt::join(names, ", "), leading_[0].second));
  }

  void check_bindings() {
    for (const auto& [name, value] : opts_.dims)
      if (!bound_.count(name))
        throw InputError(
            fmt::format("{}: --dim {} names no symbolic input dim of this model", path_, name));
    for (const auto& [name, value] : opts_.dims) g_.bound_dims.emplace_back(name, value);
  }

  int tensor_for(const std::string& name) {
    int t = g_.find(name);
    if (t >= 0) return t;
    Tensor x;
    x.name = name;
    return g_.add_tensor(std::move(x));
  }

  // `prefix` and `rename` scope a model-local function's body when it is inlined.
  void add_node(const onnx::NodeProto& np, const std::string& prefix,
                const std::map<std::string, std::string>& rename, int depth) {
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    auto fn = functions_.find(np.domain() + "::" + np.op_type());
    std::string node_name =
        prefix + (np.name().empty() ? fmt::format("{}_{}", np.op_type(), counter_++) : np.name());
    auto map_name = [&](const std::string& n) {
      if (n.empty()) return n;
      auto it = rename.find(n);
      return it != rename.end() ? it->second : prefix + n;
    };
    if (fn != functions_.end()) {
      if (depth >= kMaxFunctionDepth)
        throw InputError(
            fmt::format("{}: model-local functions nest deeper than {}", path_, kMaxFunctionDepth));
      inline_function(*fn->second, np, node_name + "/", map_name, depth);
      return;
    }
    if (domain.empty() && depth < kMaxFunctionDepth &&
        (np.op_type() == "If" || np.op_type() == "Loop" || np.op_type() == "Scan")) {
      SpliceTarget target{
          [&](const onnx::NodeProto& node, const std::string& p,
              const std::map<std::string, std::string>& r, int d) { add_node(node, p, r, d); },
          [&](const onnx::TensorProto& init) { add_initializer(init, std::nullopt); },
          [&](const std::string& name) { return constant_of(name); },
          [&](const std::string& name) { return stated_shape(name); },
          [&](std::string note) { g_.notes.push_back(std::move(note)); },
          path_};
      if (splice_control_flow(target, opts_, np, node_name, map_name, depth)) return;
    }
    if (!g_.opsets.count(domain))
      throw InputError(
          fmt::format("{}: node '{}' uses domain '{}', which the model does not import", path_,
                      node_name, domain));
    if (!is_known_domain(domain))
      throw InputError(
          fmt::format("{}: node '{}' uses unknown domain '{}' (known: ai.onnx, ai.onnx.ml, "
                      "com.microsoft)",
                      path_, node_name, domain));
    if (static_cast<int64_t>(g_.nodes.size()) >= opts_.max_nodes)
      throw InputError(fmt::format("{}: more than {} nodes; refused", path_, opts_.max_nodes));
    Node n;
    n.name = node_name;
    n.op_type = np.op_type();
    if (prefix.empty()) n.module_scopes = module_scopes_of(np);
    n.domain = domain;
    n.opset = g_.opsets[domain];
    int index = static_cast<int>(g_.nodes.size());
    for (const auto& in : np.input()) {
      std::string mapped = map_name(in);
      n.inputs.push_back(mapped.empty() ? -1 : tensor_for(mapped));
    }
    for (const auto& out : np.output()) {
      std::string mapped = map_name(out);
      if (mapped.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int t = tensor_for(mapped);
      Tensor& x = g_.tensors[t];
      if (x.producer >= 0 || x.role != TensorRole::activation)
        throw InputError(
            fmt::format("{}: tensor '{}' is produced twice (node '{}')", path_, mapped, node_name));
      x.producer = index;
      n.outputs.push_back(t);
    }
    if (!builtin_rules().find(domain, np.op_type())) {
      // Kept for the ONNX library's shape inference of this one node (foreign_node_shapes).
      onnx::NodeProto copy = np;
      for (int i = 0; i < copy.input_size(); ++i) copy.set_input(i, map_name(np.input(i)));
      for (int i = 0; i < copy.output_size(); ++i) copy.set_output(i, map_name(np.output(i)));
      n.foreign_proto = copy.SerializeAsString();
    }
    for (const auto& a : np.attribute()) {
      std::string where = fmt::format("{}: node '{}' attribute '{}'", path_, node_name, a.name());
      Attribute attr = a.has_ref_attr_name() && !a.ref_attr_name().empty()
                           ? resolve_ref(a)
                           : convert_attribute(a, where);
      n.attrs.emplace(a.name(), std::move(attr));
    }
    g_.nodes.push_back(std::move(n));
  }

  Attribute resolve_ref(const onnx::AttributeProto& a) {
    auto it = call_attrs_.find(a.ref_attr_name());
    return it == call_attrs_.end() ? Attribute{} : it->second;
  }

  void inline_function(const onnx::FunctionProto& f, const onnx::NodeProto& call,
                       const std::string& prefix,
                       const std::function<std::string(const std::string&)>& outer, int depth) {
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? outer(call.input(i)) : "";
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() ? outer(call.output(i)) : prefix + f.output(i);
    auto saved = call_attrs_;
    call_attrs_.clear();
    for (const auto& a : call.attribute())
      call_attrs_[a.name()] = convert_attribute(a, prefix + a.name());
    for (const auto& o : f.opset_import())
      if (!g_.opsets.count(o.domain())) g_.opsets[o.domain()] = o.version();
    for (const auto& body : f.node()) add_node(body, prefix, rename, depth + 1);
    call_attrs_ = saved;
  }

  // value_info's dims where every one is known (a number, or a name --dim binds): what a Scan's
  // length is read from when its input is computed. Only the splicer reads them.
  void add_value_info(const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& shape = vi.type().tensor_type().shape();
    if (shape.dim_size() > limits::kMaxRank) return;
    Shape s;
    for (const auto& d : shape.dim()) {
      int64_t v = -1;
      if (d.has_dim_value()) {
        v = d.dim_value();
      } else if (d.has_dim_param()) {
        auto it = opts_.dims.find(d.dim_param());
        if (it != opts_.dims.end()) v = it->second;
      }
      if (v <= 0 || v > limits::kMaxDim) return;
      s.push_back(v);
    }
    stated_shapes_[vi.name()] = std::move(s);
  }

  std::optional<Shape> stated_shape(const std::string& name) const {
    int t = name.empty() ? -1 : g_.find(name);
    if (t >= 0 && g_.tensors[t].producer < 0 && g_.tensors[t].shape) return g_.tensors[t].shape;
    auto it = stated_shapes_.find(name);
    if (it != stated_shapes_.end()) return it->second;
    return std::nullopt;
  }

  // The known contents of an outer tensor (an initializer or a folded constant), else nullopt.
  std::optional<Value> constant_of(const std::string& name) {
    int t = name.empty() ? -1 : g_.find(name);
    if (t < 0 || g_.tensors[t].producer >= 0) return std::nullopt;
    if (g_.tensors[t].value) return g_.tensors[t].value;
    return file_.read(t);
  }

  void check_dangling() {
    for (const Node& n : g_.nodes)
      for (int t : n.inputs)
        if (t >= 0 && g_.tensors[t].producer < 0 && g_.tensors[t].role == TensorRole::activation)
          throw InputError(
              fmt::format("{}: node '{}' input '{}' names no tensor (not a graph input, "
                          "initializer or node output)",
                          path_, n.name, g_.tensors[t].name));
    for (int t : g_.outputs)
      if (g_.tensors[t].producer < 0 && g_.tensors[t].role == TensorRole::activation)
        throw InputError(
            fmt::format("{}: graph output '{}' is produced by no node", path_, g_.tensors[t].name));
  }

  // Kahn's algorithm, stable: nodes keep file order where the edges allow. A leftover node
  // means a cycle.
  void topological_sort() {
    size_t n = g_.nodes.size();
    std::vector<int> pending(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; ++i)
      for (int t : g_.nodes[i].inputs)
        if (t >= 0 && g_.tensors[t].producer >= 0) {
          ++pending[i];
          users[g_.tensors[t].producer].push_back(static_cast<int>(i));
        }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(static_cast<int>(i));
    std::vector<int> order;
    order.reserve(n);
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (pending[i] > 0)
          throw InputError(
              fmt::format("{}: the graph has a cycle through node '{}'", path_, g_.nodes[i].name));
    }
    std::vector<Node> sorted;
    sorted.reserve(n);
    std::vector<int> new_index(n);
    for (size_t k = 0; k < n; ++k) new_index[order[k]] = static_cast<int>(k);
    for (int i : order) sorted.push_back(std::move(g_.nodes[i]));
    g_.nodes = std::move(sorted);
    for (Tensor& t : g_.tensors)
      if (t.producer >= 0) t.producer = new_index[t.producer];
    for (size_t k = 0; k < n; ++k)
      for (int t : g_.nodes[k].inputs)
        if (t >= 0) g_.tensors[t].consumers.push_back(static_cast<int>(k));
  }

  const std::string& path_;
  const LoadOptions& opts_;
  Graph& g_;
  ModelBytes& file_;
  const std::vector<std::optional<onnx_wire::Payload>>& payloads_;
  std::set<std::string> bound_;
  std::vector<UnboundDim> unbound_;
  std::vector<std::string> dim0_;  // every input's dim 0 as in the file
  std::vector<std::pair<std::string, std::string>>
      leading_;  // --batch: input, its dim 0 as in the file
  std::map<std::string, const onnx::FunctionProto*> functions_;
  std::map<std::string, Attribute> call_attrs_;
  std::map<std::string, Shape> stated_shapes_;  // value_info with every dim known
  int counter_ = 0;
};

}  // namespace

bool is_known_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx" || d == "ai.onnx.ml" || d == "com.microsoft" ||
         d == "ai.onnx.preview.training";
}

namespace {

// Both entry points: strip the payloads, parse what is left, convert; the graph keeps the bytes
// for the payloads a rule may still ask for.
Graph load(std::shared_ptr<ModelBytes> file, const std::string& name, const LoadOptions& options) {
  onnx_wire::StrippedModel stripped = onnx_wire::strip_payloads(file->data(), file->size(), name);
  file->release_pages();
  auto model = std::make_unique<onnx::ModelProto>();
  if (!model->ParseFromString(stripped.bytes))
    throw InputError(fmt::format(
        "{}: not a valid ONNX model (protobuf parse failed: truncated or not ONNX)", name));
  std::string().swap(stripped.bytes);
  check_model_header(name, *model);
  Graph g;
  Converter c(name, options, g, *file, stripped.initializers);
  c.run(*model);
  g.stored = std::move(file);
  return g;
}

}  // namespace

Graph load_onnx(const std::string& path, const LoadOptions& options) {
  return load(ModelBytes::map(path), path, options);
}

Graph load_onnx_bytes(const std::string& bytes, const std::string& name,
                      const LoadOptions& options) {
  if (bytes.empty()) throw InputError(fmt::format("{}: empty file, not an ONNX model", name));
  if (bytes.size() >= INT_MAX)
    throw InputError(fmt::format(
        "{}: not a valid ONNX model (protobuf parse failed: truncated or not ONNX)", name));
  return load(ModelBytes::copy(bytes), name, options);
}

}  // namespace rooflens
