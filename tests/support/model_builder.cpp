#include "model_builder.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>

namespace rooflens::test {

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("rooflens-tests");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::import(const std::string& domain, int64_t version) {
  auto* o = model_.add_opset_import();
  o->set_domain(domain);
  o->set_version(version);
  return *this;
}

ModelBuilder& ModelBuilder::input(const std::string& name, DType t, std::vector<Dim> dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t));
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
  return *this;
}

ModelBuilder& ModelBuilder::weight(const std::string& name, DType t, std::vector<int64_t> dims) {
  auto* init = model_.mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(static_cast<int32_t>(t));
  for (int64_t d : dims) init->add_dims(d);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = init->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");  // never read
  return *this;
}

ModelBuilder& ModelBuilder::ints(const std::string& name, std::vector<int64_t> values) {
  auto* init = model_.mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) init->add_int64_data(v);
  return *this;
}

ModelBuilder& ModelBuilder::int_scalar(const std::string& name, int64_t value) {
  auto* init = model_.mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::INT64);
  init->add_int64_data(value);
  return *this;
}

ModelBuilder& ModelBuilder::floats(const std::string& name, std::vector<float> values) {
  auto* init = model_.mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(static_cast<int64_t>(values.size()));
  for (float v : values) init->add_float_data(v);
  return *this;
}

ModelBuilder& ModelBuilder::scalar(const std::string& name, float value) {
  auto* init = model_.mutable_graph()->add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_float_data(value);
  return *this;
}

ModelBuilder& ModelBuilder::node(const std::string& op, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs, std::vector<Attr> attrs,
                                 const std::string& domain) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  n->set_name(outputs.empty() ? op + std::to_string(counter_++) : outputs[0]);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  for (const Attr& a : attrs) {
    auto* p = n->add_attribute();
    p->set_name(a.name);
    if (auto* i = std::get_if<int64_t>(&a.value)) {
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(*i);
    } else if (auto* f = std::get_if<double>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(static_cast<float>(*f));
    } else if (auto* s = std::get_if<std::string>(&a.value)) {
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(*s);
    } else if (auto* is = std::get_if<std::vector<int64_t>>(&a.value)) {
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : *is) p->add_ints(v);
    } else if (auto* fs = std::get_if<std::vector<double>>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOATS);
      for (double v : *fs) p->add_floats(static_cast<float>(v));
    }
  }
  return *this;
}

std::string ModelBuilder::save() const {
  static std::atomic<int> seq{0};
  std::string path =
      "/tmp/rooflens_test_" + std::to_string(::getpid()) + "_" + std::to_string(seq++) + ".onnx";
  std::ofstream out(path, std::ios::binary);
  if (!model_.SerializeToOstream(&out)) throw std::runtime_error("cannot write " + path);
  return path;
}

Analysis analyze_model(const ModelBuilder& b, std::map<std::string, int64_t> dims,
                       std::optional<Precision> precision, const std::string& device) {
  std::string path = b.save();
  LoadOptions load;
  load.dims = std::move(dims);
  AnalysisOptions opt;
  opt.precision = precision;
  opt.device = device;
  try {
    Analysis a = analyze_onnx(path, load, opt);
    ::unlink(path.c_str());
    return a;
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
}

const NodeResult& node_named(const Analysis& a, const std::string& name) {
  for (const auto& n : a.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

std::string data_path(const std::string& relative) {
  return std::string(ROOFLENS_SOURCE_DIR) + "/" + relative;
}

Analysis analyze_built(GraphBuilder& b, int out) {
  b.output(out);
  return analyze_graph(b.finish(), AnalysisOptions{});
}

}  // namespace rooflens::test
