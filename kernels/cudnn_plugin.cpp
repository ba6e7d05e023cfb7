// The cuDNN plugin: convolution and attention as cuDNN graphs (through the cuDNN frontend), every
// engine configuration the heuristics offer built, so the module can time them and keep the
// fastest. Built as its own shared library; see cudnn_plugin_api.hpp.
#include <cudnn_frontend.h>

#include <cmath>
#include <cstring>

#include "kernels/cudnn_plugin_api.hpp"

namespace rooflens::kernels::cudnn {

namespace {

namespace fe = cudnn_frontend;

// Engine configurations kept per graph, in the heuristics' order: the replay times each, and
// beyond the first few cuDNN's own ranking has never put a faster one.
constexpr int64_t kMaxPlans = 6;

fe::DataType_t fe_type(DType d) {
  switch (d) {
    case DType::f32:
      return fe::DataType_t::FLOAT;
    case DType::f16:
      return fe::DataType_t::HALF;
    case DType::bf16:
      return fe::DataType_t::BFLOAT16;
    default:
      return fe::DataType_t::NOT_SET;
  }
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Strides of logical [N, C, H, W] dims stored channels-last (N, H, W, C).
std::vector<int64_t> channels_last(const std::vector<int64_t>& d) {
  return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
}

// One fp32 scalar held in device memory (an fp8 graph's scales).
fe::graph::Tensor_attributes scalar(const char* name) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_dim({1, 1, 1, 1})
      .set_stride({1, 1, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

class GraphOperation : public Operation {
 public:
  GraphOperation(cudnnHandle_t h, std::shared_ptr<fe::graph::Graph> g,
                 std::vector<std::shared_ptr<fe::graph::Tensor_attributes>> io)
      : handle_(h), graph_(std::move(g)), io_(std::move(io)) {
    int64_t count = graph_->get_execution_plan_count();
    for (int64_t i = 0; i < count && static_cast<int64_t>(plans_.size()) < kMaxPlans; ++i) {
      int64_t ws = 0;
      if (graph_->get_workspace_size_plan_at_index(i, ws).is_good()) plans_.push_back({i, ws});
    }
  }
  int plan_count() const override { return static_cast<int>(plans_.size()); }
  std::string plan_name(int plan) const override {
    std::string name;
    if (graph_->get_plan_name_at_index(plans_[static_cast<size_t>(plan)].index, name).is_bad())
      return "?";
    return name;
  }
  int64_t workspace_bytes(int plan) const override {
    return plans_[static_cast<size_t>(plan)].workspace;
  }
  std::string execute(int plan, const std::vector<void*>& tensors, void* workspace,
                      void* stream) const override {
    if (cudnnSetStream(handle_, static_cast<cudaStream_t>(stream)) != CUDNN_STATUS_SUCCESS)
      return "cudnnSetStream failed";
    std::unordered_map<int64_t, void*> pack;
    for (size_t i = 0; i < io_.size() && i < tensors.size(); ++i)
      if (io_[i]) pack[io_[i]->get_uid()] = tensors[i];
    auto st = graph_->execute_plan_at_index(handle_, pack, workspace,
                                            plans_[static_cast<size_t>(plan)].index);
    return st.is_good() ? std::string() : st.get_message();
  }

 private:
  struct Plan {
    int64_t index, workspace;
  };
  cudnnHandle_t handle_;
  std::shared_ptr<fe::graph::Graph> graph_;
  std::vector<std::shared_ptr<fe::graph::Tensor_attributes>> io_;
  std::vector<Plan> plans_;
};

// validate .. build_plans(ALL); the first failing step's message, or "".
std::string build_all(fe::graph::Graph& g, cudnnHandle_t h, bool strict_fp32) {
  auto st = g.validate();
  if (st.is_good()) st = g.build_operation_graph(h);
  if (st.is_good()) st = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (st.is_good() && strict_fp32)
    g.deselect_numeric_notes(
        {fe::NumericalNote_t::TENSOR_CORE, fe::NumericalNote_t::DOWN_CONVERT_INPUTS});
  if (st.is_good()) st = g.check_support();
  if (st.is_good()) st = g.build_plans(fe::BuildPlanPolicy_t::ALL);
  return st.is_good() ? std::string() : st.get_message();
}

class CudnnPlugin : public Plugin {
 public:
  explicit CudnnPlugin(cudnnHandle_t h) : handle_(h) {}
  ~CudnnPlugin() override { cudnnDestroy(handle_); }
  int abi() const override { return kPluginAbi; }
  int64_t cudnn_version() const override { return static_cast<int64_t>(cudnnGetVersion()); }

  Built conv(const ConvSpec& s) override {
    if (fe_type(s.dtype) == fe::DataType_t::NOT_SET)
      return {nullptr, "cuDNN convolution takes fp32, fp16 and bf16"};
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe_type(s.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    std::vector<int64_t> xd{s.n, s.c, s.h, s.w}, wd{s.k, s.c / s.groups, s.kh, s.kw},
        yd{s.n, s.k, s.oh, s.ow};
    auto layout = [&](const std::vector<int64_t>& d) {
      return s.nhwc ? channels_last(d) : contiguous(d);
    };
    auto x =
        g->tensor(fe::graph::Tensor_attributes().set_name("x").set_dim(xd).set_stride(layout(xd)));
    auto w =
        g->tensor(fe::graph::Tensor_attributes().set_name("w").set_dim(wd).set_stride(layout(wd)));
    auto opts = fe::graph::Conv_fprop_attributes()
                    .set_name("conv")
                    .set_padding({s.pad_h, s.pad_w})
                    .set_stride({s.stride_h, s.stride_w})
                    .set_dilation({s.dil_h, s.dil_w});
    auto y = g->conv_fprop(x, w, opts);
    std::shared_ptr<fe::graph::Tensor_attributes> b;
    if (s.bias) {
      std::vector<int64_t> bd{1, s.k, 1, 1};
      b = g->tensor(
          fe::graph::Tensor_attributes().set_name("b").set_dim(bd).set_stride(contiguous(bd)));
      y = g->pointwise(
          y, b,
          fe::graph::Pointwise_attributes().set_name("bias").set_mode(fe::PointwiseMode_t::ADD));
    }
    y->set_output(true).set_dim(yd).set_stride(layout(yd)).set_data_type(fe_type(s.dtype));
    std::string err = build_all(*g, handle_, s.dtype == DType::f32 && !s.tensor_cores);
    if (!err.empty()) return {nullptr, err};
    auto op = std::make_unique<GraphOperation>(handle_, g, std::vector{x, w, y, b});
    if (op->plan_count() == 0) return {nullptr, "no engine configuration built"};
    return {std::move(op), ""};
  }

  Built sdpa(const SdpaSpec& s) override {
    if (!s.fp8 && s.dtype != DType::f16 && s.dtype != DType::bf16)
      return {nullptr, "cuDNN attention takes fp16, bf16 and fp8 (e4m3)"};
    if (s.fp8 && s.v_in_k) return {nullptr, "cuDNN's fp8 attention takes V apart from K"};
    const AttentionDims& d = s.dims;
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(s.fp8 ? fe::DataType_t::FP8_E4M3 : fe_type(s.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    // Logical dims [B, H, S, D]; strides say where each lies in memory.
    std::vector<int64_t> qd{d.batch, d.q_heads, d.q_len, d.head_dim_qk};
    std::vector<int64_t> qs{d.q_len * d.q_heads * d.head_dim_qk, d.head_dim_qk,
                            d.q_heads * d.head_dim_qk, 1};
    std::vector<int64_t> kd{d.batch, d.kv_heads, d.kv_len, d.head_dim_qk}, ks = contiguous(kd);
    std::vector<int64_t> vd{d.batch, d.kv_heads, d.kv_len, d.head_dim_v};
    std::vector<int64_t> vs = s.v_in_k ? ks : contiguous(vd);
    std::vector<int64_t> od{d.batch, d.q_heads, d.q_len, d.head_dim_v};
    std::vector<int64_t> os{d.q_len * d.q_heads * d.head_dim_v, d.head_dim_v,
                            d.q_heads * d.head_dim_v, 1};
    auto q = g->tensor(fe::graph::Tensor_attributes().set_name("q").set_dim(qd).set_stride(qs));
    auto k = g->tensor(fe::graph::Tensor_attributes().set_name("k").set_dim(kd).set_stride(ks));
    auto v = g->tensor(fe::graph::Tensor_attributes().set_name("v").set_dim(vd).set_stride(vs));
    auto opts =
        fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(false).set_attn_scale(
            1.0f / std::sqrt(static_cast<float>(d.head_dim_qk)));
    // Causal with fewer queries than keys: the queries are the last ones (bottom-right aligned).
    if (d.causal && d.q_len > 1) {
      if (d.q_len == d.kv_len)
        opts.set_causal_mask(true);
      else
        opts.set_causal_mask_bottom_right(true);
    }
    if (d.window > 0) opts.set_sliding_window_length(static_cast<int>(d.window));
    std::vector<std::shared_ptr<fe::graph::Tensor_attributes>> io{q, k, v};
    std::shared_ptr<fe::graph::Tensor_attributes> o;
    if (s.fp8) {
      std::vector<std::shared_ptr<fe::graph::Tensor_attributes>> in;
      for (const char* name :
           {"descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o"})
        in.push_back(g->tensor(scalar(name)));
      auto out = g->sdpa_fp8(q, k, v, in[0], in[1], in[2], in[3], in[4], in[5], opts);
      o = out[0];
      io.push_back(o);
      io.insert(io.end(), in.begin(), in.end());
      for (int i : {2, 3}) {  // amax of S and O: the next step's scales, written by the kernel
        out[static_cast<size_t>(i)]
            ->set_output(true)
            .set_dim({1, 1, 1, 1})
            .set_stride({1, 1, 1, 1});
        out[static_cast<size_t>(i)]->set_data_type(fe::DataType_t::FLOAT);
        io.push_back(out[static_cast<size_t>(i)]);
      }
    } else {
      o = g->sdpa(q, k, v, opts)[0];
      io.push_back(o);
    }
    o->set_output(true).set_dim(od).set_stride(os);
    std::string err = build_all(*g, handle_, false);
    if (!err.empty()) return {nullptr, err};
    // With V inside K the same pointer serves both; the module passes k twice.
    auto op = std::make_unique<GraphOperation>(handle_, g, std::move(io));
    if (op->plan_count() == 0) return {nullptr, "no engine configuration built"};
    return {std::move(op), ""};
  }

 private:
  cudnnHandle_t handle_;
};

}  // namespace
}  // namespace rooflens::kernels::cudnn

extern "C" __attribute__((visibility("default"))) rooflens::kernels::cudnn::Plugin*
rooflens_cudnn_plugin_create(std::string* error) {
  cudnnHandle_t h = nullptr;
  cudnnStatus_t st = cudnnCreate(&h);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (error) *error = std::string("cudnnCreate: ") + cudnnGetErrorString(st);
    return nullptr;
  }
  return new rooflens::kernels::cudnn::CudnnPlugin(h);
}
