#include "tests/support/decoder_model.hpp"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rooflens::bench {
namespace {

class Writer {
 public:
  Writer(onnx::GraphProto& g, bool inline_weights) : g_(g), inline_(inline_weights) {}

  std::string weight(const std::string& name, std::vector<int64_t> dims) {
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT16);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    params_ += n;
    if (inline_) {
      t->mutable_raw_data()->assign(static_cast<size_t>(n) * 2, '\0');
    } else {
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* kv = t->add_external_data();
      kv->set_key("location");
      kv->set_value("decoder.onnx.data");
      auto* off = t->add_external_data();
      off->set_key("offset");
      off->set_value(std::to_string(offset_));
      offset_ += n * 2;
    }
    return name;
  }

  std::string ints(const std::string& name, std::vector<int64_t> v) {
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }

  std::string scalar(const std::string& name, float v) {
    auto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT16);
    uint16_t h = v == 2.0f ? 0x4000 : v == 1e-6f ? 0x0011 : 0x3c00;  // 2, ~1e-6, 1
    t->mutable_raw_data()->assign(reinterpret_cast<const char*>(&h), 2);
    return name;
  }

  std::string node(const std::string& op, std::vector<std::string> in, const std::string& name,
                   std::vector<std::pair<std::string, int64_t>> int_attrs = {},
                   std::vector<std::pair<std::string, std::vector<int64_t>>> ints_attrs = {}) {
    auto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    n->add_output(name + "_out");
    for (auto& [k, v] : int_attrs) {
      auto* a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    for (auto& [k, v] : ints_attrs) {
      auto* a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
    }
    return name + "_out";
  }

  int64_t params() const { return params_; }

 private:
  onnx::GraphProto& g_;
  bool inline_;
  int64_t params_ = 0, offset_ = 0;
};

std::string rms_norm(Writer& w, const std::string& x, const std::string& p, int64_t hidden) {
  std::string sq = w.node("Pow", {x, "two"}, p + ".pow");
  std::string mean = w.node("ReduceMean", {sq, "last_axis"}, p + ".mean");
  std::string eps = w.node("Add", {mean, "eps"}, p + ".add_eps");
  std::string root = w.node("Sqrt", {eps}, p + ".sqrt");
  std::string norm = w.node("Div", {x, root}, p + ".div");
  return w.node("Mul", {norm, w.weight(p + ".weight", {hidden})}, p + ".scale");
}

}  // namespace

int64_t write_decoder(const std::string& path, const DecoderShape& s) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("rooflens-bench");
  auto* op = m.add_opset_import();
  op->set_version(18);
  auto* g = m.mutable_graph();
  g->set_name("decoder");
  auto* in = g->add_input();
  in->set_name("input_ids");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::INT64);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_param("seq");

  Writer w(*g, s.inline_weights);
  int64_t hd = s.hidden / s.heads;
  w.scalar("two", 2.0f);
  w.scalar("eps", 1e-6f);
  w.scalar("scale", 1.0f);
  w.ints("last_axis", {-1});
  w.ints("heads_shape", {0, 0, s.heads, hd});
  w.ints("merge_shape", {0, 0, s.hidden});
  std::string x =
      w.node("Gather", {w.weight("model.embed_tokens.weight", {s.vocab, s.hidden}), "input_ids"},
             "model.embed_tokens");
  for (int64_t l = 0; l < s.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l);
    std::string h = rms_norm(w, x, p + ".input_layernorm", s.hidden);
    auto proj = [&](const std::string& name, const std::string& input, int64_t in_dim,
                    int64_t out_dim) {
      return w.node("MatMul", {input, w.weight(p + name + ".weight", {in_dim, out_dim})}, p + name);
    };
    auto heads = [&](const std::string& t, const std::string& name, std::vector<int64_t> perm) {
      std::string r = w.node("Reshape", {t, "heads_shape"}, p + name + ".reshape");
      return w.node("Transpose", {r}, p + name + ".transpose", {}, {{"perm", perm}});
    };
    std::string q = heads(proj(".self_attn.q_proj", h, s.hidden, s.hidden), ".q", {0, 2, 1, 3});
    std::string k = heads(proj(".self_attn.k_proj", h, s.hidden, s.hidden), ".k", {0, 2, 3, 1});
    std::string v = heads(proj(".self_attn.v_proj", h, s.hidden, s.hidden), ".v", {0, 2, 1, 3});
    std::string scores = w.node("MatMul", {q, k}, p + ".self_attn.scores");
    std::string scaled = w.node("Mul", {scores, "scale"}, p + ".self_attn.scale");
    std::string probs = w.node("Softmax", {scaled}, p + ".self_attn.softmax", {{"axis", -1}});
    std::string ctx = w.node("MatMul", {probs, v}, p + ".self_attn.context");
    std::string merged =
        w.node("Reshape",
               {w.node("Transpose", {ctx}, p + ".ctx.transpose", {}, {{"perm", {0, 2, 1, 3}}}),
                "merge_shape"},
               p + ".ctx.reshape");
    std::string attn = proj(".self_attn.o_proj", merged, s.hidden, s.hidden);
    x = w.node("Add", {x, attn}, p + ".attn_residual");
    std::string h2 = rms_norm(w, x, p + ".post_attention_layernorm", s.hidden);
    std::string gate = proj(".mlp.gate_proj", h2, s.hidden, s.intermediate);
    std::string up = proj(".mlp.up_proj", h2, s.hidden, s.intermediate);
    std::string silu =
        w.node("Mul", {gate, w.node("Sigmoid", {gate}, p + ".mlp.sigmoid")}, p + ".mlp.silu");
    std::string down =
        proj(".mlp.down_proj", w.node("Mul", {silu, up}, p + ".mlp.mul"), s.intermediate, s.hidden);
    x = w.node("Add", {x, down}, p + ".mlp_residual");
  }
  std::string out = w.node(
      "MatMul",
      {rms_norm(w, x, "model.norm", s.hidden), w.weight("lm_head.weight", {s.hidden, s.vocab})},
      "lm_head");
  g->add_output()->set_name(out);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!m.SerializeToOstream(&f)) throw std::runtime_error("cannot write " + path);
  return w.params();
}

}  // namespace rooflens::bench
