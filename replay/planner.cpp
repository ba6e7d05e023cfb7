#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "analyzer/core/checked.hpp"
#include "replay/plan.hpp"

namespace rooflens::replay {

int64_t ReplayPlan::buffer_bytes() const {
  int64_t total = 0;
  for (const auto& b : inputs) total = checked_add(total, b.bytes);
  for (const auto& b : outputs) total = checked_add(total, b.bytes);
  return total;
}

namespace {

// Why a node is not replayed: thrown inside the planner, caught per node.
struct NotReplayed {
  std::string reason;
};

[[noreturn]] void refuse(std::string reason) {
  throw NotReplayed{std::move(reason)};
}

class Planner {
 public:
  Planner(const Graph& g, const NodeResult& r, std::optional<Precision> forced)
      : g_(g), n_(g.nodes[r.index]), r_(r), forced_(forced) {
    p_.node = r.index;
    p_.path = r.name;
    p_.precision = r.precision;
  }

  ReplayPlan plan() {
    const std::string& op = n_.op_type;
    OpFamily f = *r_.family;
    const KernelShape& ks = r_.cost.kernel;
    // A node between Q/DQ runs on the quantized tensors (analysis/qdq_fusion) while its graph
    // inputs are the dequantized floats: the replay has no kernel that reads what it would read.
    DType first = n_.input(0) >= 0 ? g_.tensors[n_.input(0)].dtype : DType::undefined;
    if ((r_.precision == Precision::int8 || r_.precision == Precision::fp8) && !forced_ &&
        is_float(first) && dtype_bits(first) > 8)
      refuse(
          fmt::format("runs as an {} kernel on quantized tensors (QDQ or QLinear): the replay "
                      "has no such kernel",
                      precision_name(r_.precision)));
    if (f == OpFamily::attention)
      attention();
    else if (ks.moe)
      moe();
    else if (f == OpFamily::gemm)
      gemm();
    else if (f == OpFamily::conv)
      conv();
    else if (op == "RotaryEmbedding")
      rope();
    else if (f == OpFamily::elementwise)
      elementwise();
    else if (f == OpFamily::softmax)
      softmax();
    else if (op == "BatchNormalization")
      batch_norm();
    else if (f == OpFamily::norm)
      layer_norm();
    else if (op == "TopK")
      topk();
    else if (f == OpFamily::reduce)
      reduce();
    else if (op == "GlobalAveragePool" || op == "GlobalMaxPool")
      global_pool();
    else if (op == "MaxPool" || op == "AveragePool")
      pool();
    else if (op == "Gather" && n_.domain.empty())
      gather();
    else if (op == "Concat" || op == "Split")
      concat_split();
    else if (op == "Transpose" || op == "Slice" || op == "Expand")
      copies();
    else
      refuse(fmt::format("no replay kernel for {}", r_.op));
    return std::move(p_);
  }

 private:
  const Graph& g_;
  const Node& n_;
  const NodeResult& r_;
  std::optional<Precision> forced_;
  ReplayPlan p_;

  const Tensor& tensor(int t) const { return g_.tensors[t]; }
  const Shape& in_shape(size_t i) const { return *tensor(n_.input(i)).shape; }
  const Shape& out_shape(size_t i = 0) const { return *tensor(n_.output(i)).shape; }

  DType dtype_of(const Tensor& t) const {
    if (forced_ && is_float(t.dtype)) return storage_dtype(*forced_);
    return t.dtype;
  }
  BufferSpec spec(const Tensor& t) const {
    if (!t.shape) refuse(fmt::format("tensor {} has no shape", t.name));
    BufferSpec b;
    b.dtype = dtype_of(t);
    b.shape = *t.shape;
    b.bytes = storage_bytes(b.dtype, checked_product(b.shape, "replay buffer"));
    return b;
  }
  static BufferSpec sized(DType d, Shape s) {
    BufferSpec b{d, std::move(s), 0, 0};
    b.bytes = storage_bytes(d, checked_product(b.shape, "replay buffer"));
    return b;
  }
  // Graph inputs and outputs as buffers; omitted optionals left out.
  void graph_buffers() {
    for (int t : n_.inputs)
      if (t >= 0) p_.inputs.push_back(spec(tensor(t)));
    for (int t : n_.outputs)
      if (t >= 0 && tensor(t).shape) p_.outputs.push_back(spec(tensor(t)));
  }
  static bool is_16bit_float(DType d) { return d == DType::f16 || d == DType::bf16; }
  static bool is_replay_float(DType d) { return d == DType::f32 || is_16bit_float(d); }
  void require_float(const BufferSpec& b, const char* what) const {
    if (!is_replay_float(b.dtype))
      refuse(fmt::format("{} in {}: the replay kernels take fp32, fp16 and bf16", what,
                         dtype_name(b.dtype)));
  }
  int element_bytes() const {
    int bits = dtype_bits(p_.inputs[0].dtype);
    if (bits % 8 || bits == 0) refuse("sub-byte copies");
    return bits / 8;
  }
  int64_t norm_axis(int64_t axis, size_t rank) const {
    int64_t r = static_cast<int64_t>(rank);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= std::max<int64_t>(r, 1)) refuse("axis out of range");
    return axis;
  }

  // ---- heavy kernels ------------------------------------------------------------------------

  void gemm() {
    const KernelShape& ks = r_.cost.kernel;
    if (n_.op_type == "MatMulNBits") return matmul_nbits();
    // Integer weights with their scales, as the analysis found them (the MatMul rule).
    if (ks.gemm && ks.gemm_weight_only && n_.input(1) >= 0)
      return weight_only_linear(tensor(n_.input(1)).dtype);
    if (!ks.gemm) refuse(fmt::format("{} with more than two operands is not one GEMM", r_.op));
    graph_buffers();
    DType a = p_.inputs[0].dtype, b = p_.inputs[1].dtype;
    bool fp8 = a == DType::f8e4m3fn && b == DType::f8e4m3fn;
    if (!fp8 && (a != b || !is_replay_float(a)))
      refuse(
          fmt::format("{} x {} GEMM: the replay runs fp32, tf32, fp16, bf16 and fp8 (e4m3) GEMMs",
                      dtype_name(a), dtype_name(b)));
    if (fp8) p_.precision = Precision::fp8;
    GemmPlan g;
    g.dims = *ks.gemm;
    const GemmDims& d = g.dims;
    int64_t a_elems = checked_product(p_.inputs[0].shape, "A"),
            b_elems = checked_product(p_.inputs[1].shape, "B");
    int64_t mk = checked_mul(d.m, d.k), kn = checked_mul(d.k, d.n);
    if (a_elems != mk && a_elems != checked_mul(d.batch, mk))
      refuse("A operand broadcast in a way one strided-batched GEMM cannot express");
    if (b_elems != kn && b_elems != checked_mul(d.batch, kn))
      refuse("B operand broadcast in a way one strided-batched GEMM cannot express");
    g.a_shared = d.batch > 1 && a_elems == mk;
    g.b_shared = b_elems == kn;
    // A config's Linear weights are stored [out, in] (the "TN" GEMM), an ONNX MatMul's B as
    // stored, [k, n], unless transposed.
    g.b_kn = !ks.gemm_b_transposed && g_.matmul_b == MatmulBLayout::k_n;
    if (fp8 && g.b_kn)
      refuse("fp8 GEMM with weights stored [k, n]: cuBLASLt's fp8 kernels take [n, k]");
    // Gemm's C input: a length-n bias becomes the epilogue; any other C is not one GEMM.
    if (p_.inputs.size() > 2) {
      if (checked_product(p_.inputs[2].shape, "C") != d.n || fp8)
        refuse("Gemm with a C other than a length-n bias");
      g.bias = true;
    }
    p_.kernel = g;
    p_.description = fmt::format("{} GEMM m={} n={} k={}{}", precision_name(p_.precision), d.m, d.n,
                                 d.k, d.batch > 1 ? fmt::format(" batch={}", d.batch) : "");
  }

  // A config's quantized Linear (GPTQ, AWQ, compressed-tensors, --weights int4/int8): x times an
  // [in, out] weight of 4 or 8 bits, its scales the next input; the group is what the scales'
  // count gives a row.
  void weight_only_linear(DType w) {
    const GemmDims& d = *r_.cost.kernel.gemm;
    int64_t group = d.k;  // per output channel unless the scales say otherwise
    if (n_.inputs.size() > 2 && n_.input(2) >= 0 && tensor(n_.input(2)).shape) {
      int64_t scales = checked_product(*tensor(n_.input(2)).shape, "scales");
      if (scales % d.n == 0 && scales / d.n > 0 && d.k % (scales / d.n) == 0)
        group = d.k / (scales / d.n);
    }
    weight_only(dtype_bits(w), group, -1);
  }
  // com.microsoft MatMulNBits(A, B, scales, zero_points, g_idx, bias).
  void matmul_nbits() {
    int64_t bits = n_.attr_int("bits", 4), block = n_.attr_int("block_size", 0);
    if (bits != 4 && bits != 8)
      refuse(fmt::format("MatMulNBits of {} bits: the replay's kernels take 4 and 8", bits));
    weight_only(static_cast<int>(bits), block, 5);
  }
  void weight_only(int bits, int64_t group, int bias_input) {
    const GemmDims& d = *r_.cost.kernel.gemm;
    p_.inputs.push_back(spec(tensor(n_.input(0))));
    require_float(p_.inputs[0], "weight-only GEMM activations");
    DType act = p_.inputs[0].dtype;
    if (d.batch != 1 || d.n % 16 != 0 || !weight_only_layout_supported(bits, d.k, group))
      refuse(
          fmt::format("{}-bit weight-only GEMM n={} k={} in groups of {}: the replay's kernels "
                      "take n in rows of 16, k in tiles of {}, groups of 16 or more dividing k",
                      bits, d.n, d.k, group, weight_only_tile_k(bits)));
    p_.inputs.push_back(sized(DType::u8, {d.n, d.k * bits / 8}));
    p_.inputs.back().index_bound = 256;  // every byte value
    p_.inputs.push_back(sized(act, {d.n, d.k / group}));
    bool bias = bias_input >= 0 && static_cast<int>(n_.inputs.size()) > bias_input &&
                n_.input(static_cast<size_t>(bias_input)) >= 0;
    if (bias) p_.inputs.push_back(sized(act, {d.n}));
    p_.outputs.push_back(spec(tensor(n_.output(0))));
    p_.kernel = WeightOnlyGemmPlan{d, bits, group, bias};
    p_.description = fmt::format("{}-bit weight-only GEMM m={} n={} k={}, groups of {}", bits, d.m,
                                 d.n, d.k, group);
  }

  void conv() {
    const ConvDims& c = *r_.cost.kernel.conv;
    if (c.transpose) refuse("ConvTranspose: no replay kernel");
    if (c.kernel.size() != 2 && c.kernel.size() != 1)
      refuse(fmt::format("{}-D convolution: the replay handles 1-D and 2-D", c.kernel.size()));
    graph_buffers();
    require_float(p_.inputs[0], "Conv");
    ConvPlan cp{c, false, p_.inputs.size() > 2};
    if (cp.bias && checked_product(p_.inputs[2].shape, "bias") != c.out_channels)
      refuse("Conv bias of a length other than the output channels");
    auto all = [](const std::vector<int64_t>& v, int64_t x) {
      return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
    };
    cp.pointwise = all(c.kernel, 1) && all(c.strides, 1) && all(c.pads, 0);
    p_.kernel = cp;
    p_.description = fmt::format(
        "{} convolution {}{}{}", precision_name(p_.precision), fmt::join(c.kernel, "x"),
        c.groups > 1 ? fmt::format(", groups {}", c.groups) : "", cp.bias ? " + bias" : "");
  }

  void attention() {
    const KernelShape& ks = r_.cost.kernel;
    if (!ks.attention) refuse("attention dims unknown");
    if (ks.gemm) refuse("com.microsoft Attention with its packed QKV projection: no replay kernel");
    const AttentionDims& d = *ks.attention;
    DType dt = dtype_of(tensor(n_.input(0)));
    if (!is_16bit_float(dt))
      refuse(fmt::format("{} attention: the replay runs fp16/bf16 attention", dtype_name(dt)));
    if (d.q_heads % d.kv_heads) refuse("query heads are not a multiple of KV heads");
    AttentionPlan ap{d, n_.attr_int("kv_shared", 0) != 0};
    // An fp8 (e4m3) cache, as the analysis found it: the whole cache is read in fp8, the new keys
    // written in first; a prefill over it runs fp8 attention (KernelShape::fp8_attention).
    bool fp8 = ks.attention_fp8_cache;
    DType kv = fp8 ? DType::f8e4m3fn : dt, q = ks.fp8_attention() ? kv : dt;
    if (fp8 && ap.v_in_k) refuse("attention over an fp8 latent cache (MLA): no replay kernel");
    if (fp8 && ap.decode() && !decode_group_shape(d, true))
      refuse("fp8-cache decode attention: the replay runs dim 64/128, up to 8 heads a KV");
    // A causal window as long as the keys hides none (Mistral's 4096 keys over a cache capped at
    // 4095) is none, which every kernel takes (cuDNN 9.14 refuses non-causal ones over 1,024 keys).
    if (ap.dims.window >= ap.dims.kv_len) ap.dims.window = 0;
    p_.inputs = {sized(q, {d.batch, d.q_len, d.q_heads, d.head_dim_qk}),
                 sized(kv, {d.batch, d.kv_heads, d.kv_len, d.head_dim_qk})};
    if (!ap.v_in_k) p_.inputs.push_back(sized(kv, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v}));
    // cuDNN's fp8 attention writes e4m3 on Hopper (TensorRT-LLM's fp8 context attention does too).
    p_.outputs = {sized(q, {d.batch, d.q_len, d.q_heads, d.head_dim_v})};
    p_.kernel = ap;
    p_.description = ap.decode() ? fmt::format("decode attention, {} q / {} kv heads, {} {}keys",
                                               d.q_heads, d.kv_heads, d.kv_len, fp8 ? "fp8 " : "")
                                 : fmt::format("{}{}attention, {} q / {} kv heads, {} x {}",
                                               fp8 ? "fp8 " : "", d.causal ? "causal " : "",
                                               d.q_heads, d.kv_heads, d.q_len, d.kv_len);
  }

  void moe() {
    const MoeDims& m = *r_.cost.kernel.moe;
    graph_buffers();
    for (size_t i : {0u, 2u})
      if (!is_16bit_float(p_.inputs[i].dtype))
        refuse(fmt::format("MoE with {} {}: the replay runs 16-bit experts",
                           i == 0 ? "activations" : "weights", dtype_name(p_.inputs[i].dtype)));
    if (p_.inputs[0].dtype != p_.inputs[2].dtype)
      refuse("MoE activations and weights differ in dtype");
    if (m.k > 8) refuse("MoE top-k above 8");
    if (n_.input(3) >= 0 || n_.input(5) >= 0) refuse("MoE with expert biases: no replay kernel");
    p_.kernel = MoePlan{m};
    p_.description = fmt::format("top-{} routing over {} experts, {} GEMMs per expert", m.k,
                                 m.experts, m.gated ? 3 : 2);
  }

  // ---- memory-bound kernels -------------------------------------------------------------------

  void elementwise() {
    auto ew = elementwise_op_from(n_.op_type);
    if (!ew || (!n_.domain.empty() && n_.domain != "rooflens"))
      refuse(fmt::format("no replay functor for {}", r_.op));
    graph_buffers();
    if (out_shape().size() > kMaxReplayRank) refuse("rank above 6");
    BufferSpec& out = p_.outputs[0];
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      const BufferSpec& b = p_.inputs[i];
      if (*ew == EwOp::where && i == 0) {
        if (b.dtype != DType::boolean) refuse("Where condition is not bool");
        continue;
      }
      if (*ew == EwOp::cast) {
        require_float(b, "Cast input");
        continue;
      }
      if (b.dtype != out.dtype)
        refuse(
            fmt::format("{} mixes {} and {}", r_.op, dtype_name(b.dtype), dtype_name(out.dtype)));
    }
    // fp8 e4m3 out of a Cast: the activations of a W8A8 GEMM, quantized before it.
    if (!(*ew == EwOp::cast && out.dtype == DType::f8e4m3fn)) require_float(out, r_.op.c_str());
    p_.kernel = ElementwisePlan{*ew};
    p_.description =
        fmt::format("element-wise {} ({} inputs, broadcast)", n_.op_type, p_.inputs.size());
  }

  void softmax() {
    if (n_.op_type != "Softmax" && n_.op_type != "LogSoftmax")
      refuse(fmt::format("no replay kernel for {}", r_.op));
    graph_buffers();
    require_float(p_.inputs[0], "Softmax");
    const Shape& s = in_shape(0);
    int64_t axis = norm_axis(n_.attr_int("axis", -1), s.size());
    if (axis != static_cast<int64_t>(s.size()) - 1)
      refuse("softmax over an axis other than the last");
    auto [rows, cols] = rows_cols(s, axis);
    p_.kernel = SoftmaxPlan{rows, cols, n_.op_type == "LogSoftmax"};
    p_.description = fmt::format("row softmax, {} rows of {}", rows, cols);
  }

  void layer_norm() {
    const std::string& op = n_.op_type;
    bool rms = op == "SimplifiedLayerNormalization" || op == "RMSNormalization" ||
               op == "SkipSimplifiedLayerNormalization";
    bool ln = op == "LayerNormalization" || op == "SkipLayerNormalization";
    if (!rms && !ln) refuse(fmt::format("no replay kernel for {}", r_.op));
    graph_buffers();
    require_float(p_.inputs[0], op.c_str());
    NormPlan np;
    np.rms = rms;
    np.residual = op.rfind("Skip", 0) == 0;
    size_t gamma = np.residual ? 2 : 1;
    np.beta = !rms && p_.inputs.size() > gamma + 1;
    const Shape& s = in_shape(0);
    std::tie(np.rows, np.cols) =
        rows_cols(s, np.residual ? static_cast<int64_t>(s.size()) - 1
                                 : norm_axis(n_.attr_int("axis", -1), s.size()));
    p_.kernel = np;
    p_.description = fmt::format("{}{} norm, {} rows of {}", np.residual ? "residual + " : "",
                                 rms ? "rms" : "layer", np.rows, np.cols);
  }

  void batch_norm() {
    graph_buffers();
    require_float(p_.inputs[0], "BatchNormalization");
    const Shape& s = in_shape(0);
    if (s.size() < 2) refuse("BatchNormalization input of rank < 2");
    BatchNormPlan b{s[1], checked_product(s, "x") / (s[0] * s[1])};
    p_.kernel = b;
    p_.description = fmt::format("batch norm (inference), {} channels", b.channels);
  }

  void reduce() {
    auto op = row_reduce_from(n_.op_type);
    if (!op) refuse(fmt::format("no replay kernel for {}", r_.op));
    graph_buffers();
    require_float(p_.inputs[0], n_.op_type.c_str());
    const Shape& s = in_shape(0);
    std::vector<int64_t> axes;
    if (auto a = n_.attr_ints("axes"))
      axes = *a;
    else if (n_.input(1) >= 0) {
      const Tensor& t = tensor(n_.input(1));
      if (!t.value) refuse("reduction axes unknown before the run");
      axes = t.value->as_ints();
    }
    if (axes.empty()) {
      if (n_.attr_int("noop_with_empty_axes", 0)) refuse("reduction with no axes is a copy");
      axes.resize(s.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    for (auto& a : axes) a = norm_axis(a, s.size());
    std::sort(axes.begin(), axes.end());
    for (size_t i = 1; i < axes.size(); ++i)
      if (axes[i] != axes[i - 1] + 1) refuse("reduction over axes that are not adjacent");
    // [rows, cols, inner]: the dims before the reduced block, the block, the dims after it.
    auto span = [&](size_t from, size_t to) {
      int64_t n = 1;
      for (size_t d = from; d < to; ++d) n = checked_mul(n, s[d], "reduction");
      return n;
    };
    size_t first = static_cast<size_t>(axes.front()), past = static_cast<size_t>(axes.back()) + 1;
    ReducePlan k{span(0, first), span(first, past), *op, span(past, s.size())};
    p_.kernel = k;
    p_.description = k.inner == 1
                         ? fmt::format("row {}, {} rows of {}", n_.op_type, k.rows, k.cols)
                         : fmt::format("{} over a middle dim, {} x {} outputs of {} values",
                                       n_.op_type, k.rows, k.inner, k.cols);
  }

  void global_pool() {
    graph_buffers();
    require_float(p_.inputs[0], n_.op_type.c_str());
    auto [rows, cols] = rows_cols(in_shape(0), 2);
    p_.kernel = ReducePlan{rows, cols,
                           n_.op_type == "GlobalAveragePool" ? RowReduce::mean : RowReduce::max};
    p_.description = fmt::format("row reduction, {} channels of {}", rows, cols);
  }

  void topk() {
    graph_buffers();
    require_float(p_.inputs[0], "TopK");
    const Shape& s = in_shape(0);
    if (norm_axis(n_.attr_int("axis", -1), s.size()) != static_cast<int64_t>(s.size()) - 1)
      refuse("TopK over an axis other than the last");
    const Tensor& kt = tensor(n_.input(1));
    if (!kt.value || kt.value->size() != 1) refuse("TopK k unknown before the run");
    TopKPlan t;
    t.k = kt.value->int_at(0);
    if (t.k > 32) refuse("TopK with k above 32");
    std::tie(t.rows, t.cols) = rows_cols(s, static_cast<int64_t>(s.size()) - 1);
    p_.kernel = t;
    p_.description = fmt::format("row top-{}, {} rows of {}", t.k, t.rows, t.cols);
  }

  void pool() {
    graph_buffers();
    require_float(p_.inputs[0], n_.op_type.c_str());
    const Shape& x = in_shape(0);
    if (x.size() != 4) refuse("pooling other than 2-D");
    if (n_.attr_string("auto_pad", "NOTSET") != "NOTSET") refuse("pooling with auto_pad");
    auto ks = n_.attr_ints("kernel_shape");
    if (!ks || ks->size() != 2) refuse("pooling without a 2-D kernel_shape");
    auto dil = n_.attr_ints("dilations");
    if (dil && std::any_of(dil->begin(), dil->end(), [](int64_t d) { return d != 1; }))
      refuse("dilated pooling");
    auto strides = n_.attr_ints("strides").value_or(std::vector<int64_t>{1, 1});
    auto pads = n_.attr_ints("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
    if (strides.size() != 2 || pads.size() != 4) refuse("pooling strides/pads are not 2-D");
    const Shape& y = out_shape();
    PoolPlan pp{Pool2d{x[0], x[1], x[2], x[3], y[2], y[3], (*ks)[0], (*ks)[1], strides[0],
                       strides[1], pads[0], pads[1], n_.op_type == "MaxPool"}};
    p_.kernel = pp;
    p_.description = fmt::format("{} {}x{} stride {}", n_.op_type, (*ks)[0], (*ks)[1], strides[0]);
  }

  void gather() {
    graph_buffers();
    const Shape& data = in_shape(0);
    int64_t axis = norm_axis(n_.attr_int("axis", 0), data.size());
    GatherPlan gp;
    gp.axis_len = data[axis];
    for (int64_t i = 0; i < axis; ++i) gp.outer = checked_mul(gp.outer, data[i]);
    for (size_t i = static_cast<size_t>(axis) + 1; i < data.size(); ++i)
      gp.inner = checked_mul(gp.inner, data[i]);
    if (p_.inputs[1].dtype != DType::i64 && p_.inputs[1].dtype != DType::i32)
      refuse("Gather indices other than int32/int64");
    p_.inputs[1].index_bound = gp.axis_len;
    gp.n_indices = checked_product(p_.inputs[1].shape, "idx");
    gp.elem_bytes = element_bytes();
    p_.kernel = gp;
    p_.description = fmt::format("gather {} rows of {} elements", gp.n_indices, gp.inner);
  }

  void rope() {
    graph_buffers();
    require_float(p_.inputs[0], "RotaryEmbedding");
    const Shape& x = in_shape(0);
    RopePlan rp;
    int64_t heads = x.size() == 4 ? x[1] : n_.attr_int("num_heads", 0);
    rp.head_dim = x.size() == 4 ? x[3] : heads > 0 ? x.back() / heads : x.back();
    if (heads <= 0) heads = x.back() / rp.head_dim;
    rp.rotary_dim = n_.attr_int("rotary_embedding_dim", 0);
    if (rp.rotary_dim <= 0 || rp.rotary_dim > rp.head_dim) rp.rotary_dim = rp.head_dim;
    if (rp.rotary_dim % 2) refuse("odd rotary dim");
    if (p_.inputs[1].dtype != DType::i64) refuse("position ids other than int64");
    if (p_.inputs[2].dtype != p_.inputs[0].dtype || p_.inputs[3].dtype != p_.inputs[0].dtype)
      refuse("cos/sin caches differ in dtype from x");
    p_.inputs[1].index_bound = p_.inputs[2].shape[0];  // positions index the cos/sin rows
    rp.heads = heads;
    rp.seq = x.size() == 4 ? x[2] : x[1];
    rp.bhsd = x.size() == 4;
    rp.rows = checked_product(x, "x") / rp.head_dim;
    p_.kernel = rp;
    p_.description =
        fmt::format("rotary embedding, {} of {} dims per head", rp.rotary_dim, rp.head_dim);
  }

  void concat_split() {
    graph_buffers();
    for (const auto& o : p_.outputs)
      if (o.shape.size() > kMaxReplayRank) refuse("rank above 6");
    ConcatSplitPlan cs;
    cs.split = n_.op_type == "Split";
    cs.elem_bytes = element_bytes();
    const Shape& whole = cs.split ? in_shape(0) : out_shape();
    int64_t axis = norm_axis(n_.attr_int("axis", 0), whole.size());
    int64_t inner =
        std::accumulate(whole.begin() + axis + 1, whole.end(), int64_t{1}, std::multiplies<>());
    if (cs.split) p_.inputs.resize(1);  // the split sizes input is a host constant
    for (const BufferSpec& part : cs.split ? p_.outputs : p_.inputs)
      cs.part_cols.push_back(checked_mul(part.shape[axis], inner));
    cs.outer =
        std::accumulate(whole.begin(), whole.begin() + axis, int64_t{1}, std::multiplies<>());
    p_.kernel = cs;
    p_.description = fmt::format("{}, {} parts in one launch", n_.op_type, cs.part_cols.size());
  }

  void copies() {
    graph_buffers();
    const std::string& op = n_.op_type;
    CopyPlan cp;
    cp.elem_bytes = element_bytes();
    for (const auto& o : p_.outputs)
      if (o.shape.size() > kMaxReplayRank) refuse("rank above 6");
    int out_base = static_cast<int>(p_.inputs.size());
    if (op == "Transpose") {
      const Shape& in = in_shape(0);
      std::vector<int64_t> perm(in.size());
      std::iota(perm.rbegin(), perm.rend(), 0);
      if (auto pa = n_.attr_ints("perm")) perm = *pa;
      auto src = contiguous_strides(in);
      CopyPart c{0, out_base, out_shape(), {}, contiguous_strides(out_shape()), 0, 0};
      for (int64_t pd : perm) c.src_strides.push_back(src[static_cast<size_t>(pd)]);
      cp.parts.push_back(std::move(c));
    } else if (op == "Slice") {
      const Shape& in = in_shape(0);
      auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
        if (n_.input(i) < 0) return std::nullopt;
        const Tensor& t = tensor(n_.input(i));
        if (!t.value) refuse("slice bounds unknown before the run");
        return t.value->as_ints();
      };
      auto starts = ints(1);
      if (!starts) refuse("Slice without starts input (opset < 10)");
      std::vector<int64_t> axes(starts->size());
      std::iota(axes.begin(), axes.end(), 0);
      if (auto a = ints(3)) axes = *a;
      std::vector<int64_t> steps(starts->size(), 1);
      if (auto s = ints(4)) steps = *s;
      auto src = contiguous_strides(in);
      CopyPart c{0, 1, out_shape(), src, contiguous_strides(out_shape()), 0, 0};
      for (size_t i = 0; i < axes.size() && i < starts->size(); ++i) {
        int64_t ax = norm_axis(axes[i], in.size()), st = (*starts)[i], step = steps[i],
                dim = in[ax];
        if (step == 0) refuse("slice step 0");
        if (st < 0) st += dim;
        st = std::clamp<int64_t>(st, 0, step > 0 ? dim : dim - 1);
        c.src_offset += st * src[ax];
        c.src_strides[ax] = src[ax] * step;
      }
      p_.inputs.resize(1);
      cp.parts.push_back(std::move(c));
    } else {  // Expand
      p_.inputs.resize(1);
      cp.parts.push_back({0, 1, out_shape(), broadcast_strides(in_shape(0), out_shape()),
                          contiguous_strides(out_shape()), 0, 0});
    }
    p_.kernel = cp;
    p_.description = fmt::format("strided copy ({})", op);
  }
};

// The all-reduce of a tensor-parallel layer's partial sums, in the activations' own type.
ReplayPlan collective_plan(const Graph& g, const NodeResult& r, std::optional<Precision> forced) {
  const Node& n = g.nodes[r.index];
  const Tensor& in = g.tensors[n.input(0)];
  if (!in.shape) throw NotReplayed{fmt::format("tensor {} has no shape", in.name)};
  ReplayPlan p;
  p.node = r.index;
  p.path = r.name;
  p.precision = r.precision;
  BufferSpec b{forced && is_float(in.dtype) ? storage_dtype(*forced) : in.dtype, *in.shape, 0, 0};
  std::string_view what = collective_name(r.cost.collective);
  if (b.dtype != DType::bf16 && b.dtype != DType::f16 && b.dtype != DType::f32)
    throw NotReplayed{fmt::format("an {} of {}: NCCL's replay takes fp32, fp16 and bf16", what,
                                  dtype_name(b.dtype))};
  b.bytes = storage_bytes(b.dtype, checked_product(b.shape, "replay buffer"));
  p.inputs.push_back(b);
  p.outputs.push_back(b);
  p.kernel = CollectivePlan{r.cost.collective, b.bytes, r.cost.collective_ranks};
  p.description =
      fmt::format("NCCL {} of {} B over {} GPUs", what, b.bytes, r.cost.collective_ranks);
  return p;
}

}  // namespace

std::vector<ReplayDecision> plan_replay(const Analysis& a, const Graph& g,
                                        std::optional<Precision> forced, int gpus) {
  std::vector<ReplayDecision> out;
  for (const NodeResult& r : a.nodes) {
    ReplayDecision d;
    if (r.status == NodeStatus::folded) {
      d.status = ReplayStatus::no_kernel;
      d.reason = "folded: computed before the run";
    } else if (r.status == NodeStatus::fused) {
      d.status = ReplayStatus::no_kernel;
      d.reason = r.reason;
    } else if (r.status == NodeStatus::not_costed) {
      d.reason = "not costed: " + r.reason;
    } else if (r.family == OpFamily::view ||
               (r.cost.flops == 0 && r.cost.bytes() == 0 && r.cost.collective_ranks == 0)) {
      d.status = ReplayStatus::no_kernel;
      d.reason = "view: no kernel";
    } else if (r.family == OpFamily::communication) {
      if (r.cost.collective_ranks == gpus) {
        try {
          d.plan = collective_plan(g, r, forced);
          d.status = ReplayStatus::measured;
        } catch (const NotReplayed& e) {
          d.reason = e.reason;
        }
      } else if (gpus == 1) {
        d.reason = fmt::format(
            "collective over {} GPUs; this replay runs on one (profile --tp {} replays it through "
            "NCCL)",
            r.cost.collective_ranks, r.cost.collective_ranks);
      } else {
        d.reason = fmt::format("collective over {} GPUs; this replay runs on {}",
                               r.cost.collective_ranks, gpus);
      }
    } else {
      try {
        d.plan = Planner(g, r, forced).plan();
        d.status = ReplayStatus::measured;
      } catch (const NotReplayed& e) {
        d.reason = e.reason;
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace rooflens::replay
