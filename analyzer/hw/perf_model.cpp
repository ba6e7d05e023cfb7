#include "analyzer/hw/perf_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "analyzer/core/errors.hpp"
#include "analyzer/core/formulas.hpp"

namespace rooflens {

namespace {

// Times of fp16 kernels are bf16's on the tensor cores this is measured on: tables are
// measured in bf16 and fp16 nodes read them (the key says which).
std::string tensor_dtype_key(Precision p) {
  if (p == Precision::fp16 || p == Precision::bf16) return "bf16";
  return std::string(precision_name(p));
}

int64_t element_bytes(Precision p) {
  return storage_bytes(storage_dtype(p), 1);
}

std::vector<double> ladder(double from, double to, double factor) {
  std::vector<double> v;
  for (double x = from; x <= to * 1.0000001; x *= factor) v.push_back(x);
  return v;
}

constexpr int64_t kStemMaxInputChannels = 4;  // RGB, RGBA

std::optional<std::string> conv_class(const ConvDims& c) {
  if (c.transpose || c.kernel.size() != 2) return std::nullopt;
  if (c.kernel[0] != c.kernel[1] || c.strides[0] != c.strides[1]) return std::nullopt;
  for (int64_t d : c.dilations)
    if (d != 1) return std::nullopt;
  int64_t k = c.kernel[0], s = c.strides[0];
  if (is_depthwise(c)) {
    if ((k == 3 || k == 5) && (s == 1 || s == 2)) return fmt::format("dw{}s{}", k, s);
    if (k == 7 && s == 1) return std::string("dw7s1");  // ConvNeXt's
    return std::nullopt;
  }
  if (c.groups != 1) {
    bool square = c.in_channels == c.out_channels;
    if (square && k == 3 && (s == 1 || s == 2)) return fmt::format("g3s{}", s);
    return std::nullopt;
  }
  // Patch embeddings: ViT's 14 and 16, ConvNeXt's and Swin's 4; downsampling by 2x2 stride 2.
  bool unpadded = c.pads == std::vector<int64_t>(c.pads.size(), 0);
  bool patch = k == s && (k == 2 || k == 4 || k == 14 || k == 16) && unpadded;
  if ((k == 1 && (s == 1 || s == 2)) || (k == 3 && (s == 1 || s == 2)) || (k == 7 && s == 2) ||
      patch)
    return fmt::format("k{}s{}", k, s);
  return std::nullopt;
}

// Table key parts: "gemm.bf16" -> {"gemm", "bf16"}.
std::vector<std::string> key_parts(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos;
       start = dot + 1, dot = key.find('.', start))
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

}  // namespace

bool is_depthwise_class(const std::string& cls) {
  return cls.rfind("dw", 0) == 0;
}

bool is_grouped_class(const std::string& cls) {
  return cls.rfind('g', 0) == 0;
}

int64_t grouped_image_side(int64_t channels) {
  if (channels <= 128) return 56;
  if (channels <= 256) return 28;
  if (channels <= 512) return 14;
  return 7;
}

int64_t depthwise_image_side(int64_t channels) {
  if (channels <= 48) return 112;
  if (channels <= 160) return 56;
  if (channels <= 320) return 28;
  if (channels <= 768) return 14;
  return 7;
}

std::optional<std::pair<int64_t, int64_t>> conv_kernel_stride(const std::string& cls) {
  size_t k = is_depthwise_class(cls)                           ? 2
             : cls.rfind('k', 0) == 0 || is_grouped_class(cls) ? 1
                                                               : std::string::npos;
  auto s = cls.find('s', k == std::string::npos ? 0 : k);
  if (k == std::string::npos || s == std::string::npos || s == k || s + 1 >= cls.size())
    return std::nullopt;
  try {
    return std::pair<int64_t, int64_t>{std::stoll(cls.substr(k, s - k)),
                                       std::stoll(cls.substr(s + 1))};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int64_t gemm_alignment(int64_t n, int64_t k) {
  for (int64_t a : {128, 64, 16, 8, 4, 2})
    if (n % a == 0 && k % a == 0) return a;
  return 1;
}

namespace {

std::optional<PerfQuery> attention_query(const AttentionDims& d, const KernelShape& ks,
                                         Precision p) {
  if (ks.gemm || (p != Precision::bf16 && p != Precision::fp16)) return std::nullopt;
  bool unequal = d.head_dim_qk != d.head_dim_v;
  if (unequal && d.q_len == 1) return std::nullopt;  // MLA's decode: no table of its kernels
  std::string dt = tensor_dtype_key(p);
  // Unequal depths (MLA's prefill: 192-deep scores, 128-deep values) do the work of both GEMMs at
  // their mean depth: the table there, beyond its grid scaled as the roofline scales. cuDNN's
  // kernel for DeepSeek-V3's prefill ran within 1-8% of that on an H200 (docs/profile.md).
  auto dd = static_cast<double>(d.head_dim_qk + d.head_dim_v) / 2;
  if (d.q_len == 1)
    return PerfQuery{"attn_decode." + dt + (ks.attention_fp8_cache ? ".kv_fp8" : ""),
                     {dd, static_cast<double>(d.q_heads / std::max<int64_t>(d.kv_heads, 1)),
                      static_cast<double>(d.batch * d.kv_heads), static_cast<double>(d.kv_len)}};
  // The square self-attention that executes as many scores per head.
  auto pairs = static_cast<double>(attention_pairs(d.q_len, d.kv_len, d.causal, d.window));
  double seq = d.causal ? (std::sqrt(1 + 8 * pairs) - 1) / 2 : std::sqrt(pairs);
  return PerfQuery{fmt::format("attn_prefill.{}.{}", ks.fp8_attention() ? "fp8" : dt,
                               d.causal ? "causal" : "full"),
                   {dd, static_cast<double>(d.batch * d.q_heads), seq}};
}

std::optional<PerfQuery> conv_query(const ConvDims& cv, Precision p) {
  auto cls = conv_class(cv);
  if (!cls || p == Precision::fp8 || p == Precision::int8) return std::nullopt;
  double pixels = static_cast<double>(cv.batch);
  for (int64_t o : cv.out_spatial) pixels *= static_cast<double>(o);
  // Depthwise kernels run on the CUDA cores: TF32 math is fp32's there.
  if (is_depthwise_class(*cls))
    return PerfQuery{
        fmt::format("conv.{}.{}", p == Precision::tf32 ? "fp32" : tensor_dtype_key(p), *cls),
        {pixels, static_cast<double>(cv.out_channels)}};
  if (is_grouped_class(*cls))
    return PerfQuery{fmt::format("conv.{}.{}", tensor_dtype_key(p), *cls),
                     {pixels, static_cast<double>(cv.out_channels),
                      static_cast<double>(cv.in_channels / cv.groups)}};
  // A 3x3 stride-2 stem on RGB is its own kernel: a few input channels over whole images.
  std::string stem = *cls == "k3s2" && cv.in_channels <= kStemMaxInputChannels ? ".stem" : "";
  return PerfQuery{
      fmt::format("conv.{}.{}{}", tensor_dtype_key(p), *cls, stem),
      {pixels, static_cast<double>(cv.out_channels), static_cast<double>(cv.in_channels)}};
}

std::optional<PerfQuery> gemm_query(const NodeCost& c, const GemmDims& g, Precision p) {
  const KernelShape& ks = c.kernel;
  if (p == Precision::int8) return std::nullopt;
  // Weight-only quantized GEMMs (int4/int8 weights dequantized in the kernel) are other kernels,
  // with tables of their own for 16-bit activations; narrower float weights under 16-bit
  // activations (fp8, fp4) have none.
  double dense_weight =
      static_cast<double>(g.n) * static_cast<double>(g.k) * static_cast<double>(element_bytes(p));
  if (ks.gemm_weight_only && c.read_weight > 0) {
    // Bytes a weight with its scales: 4-bit 0.5-0.53, 8-bit 1-1.03; fewer bits have no kernel.
    double per_weight = static_cast<double>(c.read_weight) / (dense_weight / element_bytes(p));
    if ((p != Precision::bf16 && p != Precision::fp16) || per_weight < 0.4) return std::nullopt;
    return PerfQuery{
        per_weight < 0.75 ? "woq.int4" : "woq.int8",
        {static_cast<double>(g.batch * g.m), static_cast<double>(g.n), static_cast<double>(g.k)}};
  }
  if (c.read_weight > 0 && static_cast<double>(c.read_weight) < 0.75 * dense_weight &&
      ks.gemm_b_shared)
    return std::nullopt;
  return PerfQuery{
      "gemm." + tensor_dtype_key(p),
      {static_cast<double>(gemm_alignment(g.n, g.k)), static_cast<double>(g.batch * g.m),
       static_cast<double>(g.n), static_cast<double>(g.k)}};
}

// Memory-bound kernels: by bytes, or (row kernels) by rows and the bytes of a row.
std::optional<PerfQuery> memory_query(const NodeCost& c, Precision p) {
  const KernelShape& ks = c.kernel;
  auto bytes = static_cast<double>(c.bytes());
  auto rows_cols = [&](const char* table) -> std::optional<PerfQuery> {
    if (ks.rows <= 0 || ks.cols <= 0) return std::nullopt;
    // Row kernels stream bytes: a row of fp32 costs what a row twice as long in bf16 does. Rows
    // that are not whole 16-byte vectors take the kernels' scalar path.
    int64_t row_bytes = ks.cols * element_bytes(p);
    double cols = static_cast<double>(row_bytes) / 2;
    return PerfQuery{table, {row_bytes % 16 == 0 ? 8.0 : 1.0, static_cast<double>(ks.rows), cols}};
  };
  if (bytes <= 0) return std::nullopt;
  switch (ks.memory) {
    case MemoryKernel::none:
      return std::nullopt;
    case MemoryKernel::elementwise:
      return PerfQuery{"mem.elementwise", {bytes}};
    case MemoryKernel::broadcast:
      return PerfQuery{"mem.broadcast", {bytes}};
    case MemoryKernel::transpose:
      return PerfQuery{"mem.transpose", {bytes}};
    case MemoryKernel::copy:
      return PerfQuery{"mem.copy", {bytes}};
    case MemoryKernel::gather:
      return PerfQuery{"mem.gather", {bytes}};
    case MemoryKernel::norm:
      return rows_cols("mem.norm");
    case MemoryKernel::softmax:
      return rows_cols("mem.softmax");
    case MemoryKernel::reduce:
      return rows_cols("mem.reduce");
  }
  return std::nullopt;
}

// The tables of each kernel's expert GEMMs: "<family>.bf16", "<family>.fp8".
const char* expert_table_family(ExpertKernel k) {
  switch (k) {
    case ExpertKernel::batched:
      return "moe";
    case ExpertKernel::grouped:
      return "moe_grouped";
    case ExpertKernel::fused:
      return "moe_fused";
  }
  return "moe";
}

bool is_expert_table_family(const std::string& family) {
  for (ExpertKernel k : {ExpertKernel::batched, ExpertKernel::grouped, ExpertKernel::fused})
    if (family == expert_table_family(k)) return true;
  return false;
}

}  // namespace

std::optional<PerfQuery> expert_gemm_query(Precision p, int64_t experts, int64_t rows, int64_t n,
                                           int64_t k) {
  if (p != Precision::bf16 && p != Precision::fp16 && p != Precision::fp8) return std::nullopt;
  if (experts <= 0 || rows <= 0 || n <= 0 || k <= 0) return std::nullopt;
  return PerfQuery{
      fmt::format("{}.{}", expert_table_family(ExpertKernel::batched), tensor_dtype_key(p)),
      {static_cast<double>(experts), static_cast<double>(rows), static_cast<double>(n),
       static_cast<double>(k)}};
}

std::optional<PerfQuery> mxfp4_expert_query(int64_t experts, int64_t rows, int64_t n, int64_t k) {
  if (experts <= 0 || rows <= 0 || n <= 0 || k <= 0) return std::nullopt;
  return PerfQuery{fmt::format("{}.mxfp4", expert_table_family(ExpertKernel::batched)),
                   {static_cast<double>(experts), static_cast<double>(rows), static_cast<double>(n),
                    static_cast<double>(k)}};
}

const char* expert_kernel_name(ExpertKernel k) {
  switch (k) {
    case ExpertKernel::batched:
      return "batched";
    case ExpertKernel::grouped:
      return "grouped";
    case ExpertKernel::fused:
      return "fused";
  }
  return "batched";
}

std::optional<ExpertKernel> expert_kernel_from_name(const std::string& name) {
  for (ExpertKernel k : {ExpertKernel::batched, ExpertKernel::grouped, ExpertKernel::fused})
    if (name == expert_kernel_name(k)) return k;
  return std::nullopt;
}

ExpertTables with_expert_kernel(std::shared_ptr<const PerfDatabase> db, ExpertKernel wanted) {
  if (!db || wanted == ExpertKernel::batched) return {db, ExpertKernel::batched};
  auto out = std::make_shared<PerfDatabase>(*db);
  bool any = false;
  for (const char* p : {"bf16", "fp8", "mxfp4"}) {
    auto own = db->tables.find(fmt::format("{}.{}", expert_table_family(wanted), p));
    if (own == db->tables.end()) continue;
    out->tables[fmt::format("{}.{}", expert_table_family(ExpertKernel::batched), p)] = own->second;
    any = true;
  }
  if (any) return {out, wanted};
  return with_expert_kernel(
      db, wanted == ExpertKernel::fused ? ExpertKernel::grouped : ExpertKernel::batched);
}

std::optional<PerfQuery> perf_query(const NodeCost& c, Precision p) {
  const KernelShape& ks = c.kernel;
  if (c.collective_ranks > 1 || ks.moe) return std::nullopt;
  if (ks.attention) return attention_query(*ks.attention, ks, p);
  if (ks.conv) return conv_query(*ks.conv, p);
  if (ks.gemm) return gemm_query(c, *ks.gemm, p);
  return memory_query(c, p);
}

GridWork grid_work(const std::string& table, const std::vector<double>& x) {
  std::vector<std::string> k = key_parts(table);
  auto dim = [](double v) { return static_cast<int64_t>(std::llround(v)); };
  GridWork w;
  // `count` GEMMs of m x n x k, each reading its operands and writing its output (fp8 writes bf16).
  auto gemms = [&](double count, double m, double n, double kk) {
    w.precision = *precision_from_name(k[1]);
    double eb = static_cast<double>(element_bytes(w.precision));
    w.flops = count * static_cast<double>(gemm_flops(GemmDims{1, dim(m), dim(n), dim(kk)}));
    w.bytes = count * ((m * kk + n * kk) * eb + m * n * (w.precision == Precision::fp8 ? 2 : eb));
    w.tensor_cores = w.precision != Precision::fp32;
  };
  if (k[0] == "gemm") {
    gemms(1, x[1], x[2], x[3]);
  } else if (is_expert_table_family(k[0]) && k[1] == "mxfp4") {
    // bf16 rows and outputs; half a byte a weight and one e8m0 scale byte per 32 weights.
    w.flops = x[0] * static_cast<double>(gemm_flops(GemmDims{1, dim(x[1]), dim(x[2]), dim(x[3])}));
    w.precision = Precision::bf16;
    w.bytes = x[0] * (2 * x[1] * x[3] + x[2] * x[3] * (0.5 + 1.0 / kMxfp4Block) + 2 * x[1] * x[2]);
    w.tensor_cores = true;
  } else if (is_expert_table_family(k[0])) {
    gemms(x[0], x[1], x[2], x[3]);
  } else if (k[0] == "woq") {  // bf16 activations; packed weights and a bf16 scale per 128
    double m = x[0], n = x[1], kk = x[2], bits = k[1] == "int4" ? 4 : 8;
    w.flops = static_cast<double>(gemm_flops(GemmDims{1, dim(m), dim(n), dim(kk)}));
    w.bytes = 2 * m * kk + n * kk * bits / 8 +
              2 * n * kk / static_cast<double>(kWeightOnlyTableGroup) + 2 * m * n;
    w.tensor_cores = true;
  } else if (k[0] == "attn_prefill") {
    double d = x[0], heads = x[1], s = x[2];
    AttentionDims a;
    a.q_heads = a.kv_heads = dim(heads);
    a.q_len = a.kv_len = dim(s);
    a.head_dim_qk = a.head_dim_v = dim(d);
    a.causal = k[2] == "causal";
    w.precision = k[1] == "fp8" ? Precision::fp8 : Precision::bf16;
    w.flops = static_cast<double>(attention_core(a).flops);
    w.bytes = 4 * heads * s * d * static_cast<double>(element_bytes(w.precision));
    w.tensor_cores = true;
  } else if (k[0] == "attn_decode") {
    double d = x[0], g = x[1], kvh = x[2], ctx = x[3];
    AttentionDims a;
    a.kv_heads = dim(kvh);
    a.q_heads = dim(kvh * g);
    a.kv_len = dim(ctx);
    a.head_dim_qk = a.head_dim_v = dim(d);
    w.flops = static_cast<double>(attention_core(a).flops);
    double cache = k.size() > 2 && k[2] == "kv_fp8" ? 1 : 2;  // bytes an element of K and V
    w.bytes = 2 * kvh * ctx * d * cache + 2 * kvh * g * d * 2;
    w.tensor_cores = true;
  } else if (k[0] == "conv") {
    // Dense: pixels, out, in. Depthwise: pixels, channels, one channel a group. Grouped: pixels,
    // channels, channels a group. Depthwise kernels run on the CUDA cores.
    w.precision = *precision_from_name(k[1]);
    auto [kernel, stride] = conv_kernel_stride(k[2]).value_or(std::pair<int64_t, int64_t>{1, 1});
    bool dw = is_depthwise_class(k[2]), grouped = is_grouped_class(k[2]);
    double pix = x[0], out = x[1], in = dw || grouped ? out : x[2];
    double per_group = dw ? 1 : grouped ? x[2] : in;  // input channels each output reads
    double eb = static_cast<double>(element_bytes(w.precision));
    auto kk = static_cast<double>(kernel * kernel), ss = static_cast<double>(stride * stride);
    w.flops =
        2 * static_cast<double>(conv_macs(1, dim(out), dim(pix), dim(per_group), kernel * kernel));
    w.bytes = (pix * ss * in + pix * out + out * per_group * kk) * eb;
    w.tensor_cores = !dw && w.precision != Precision::fp32;
  } else if (k[0] == "mem" && x.size() == 3) {
    w.bytes = 2 * x[1] * x[2] * 2;
  } else {
    w.bytes = x[0];
  }
  return w;
}

double ideal_seconds(const GridWork& w, const Device& d) {
  double roof = w.flops > 0 ? compute_unit(d, w.precision, w.tensor_cores).flops : 0;
  return roofline_seconds(w.flops, w.bytes, roof, d.hbm_bandwidth);
}

namespace {

// Prefill (causal and not) and decode attention, over a bf16 and an fp8 (e4m3) KV cache, the one
// serving engines keep in fp8. An fp8 cache is a decoder's: its prefill is causal.
void attention_grids(std::vector<TableGrid>& out, bool quick) {
  for (const char* table : {"bf16.causal", "bf16.full", "fp8.causal"})
    out.push_back(
        {fmt::format("attn_prefill.{}", table),
         {"d", "heads", "seq"},
         // Quick: fp8 attention at the head dim of the models that keep fp8 caches.
         {quick && table[0] == 'f' ? std::vector<double>{128} : std::vector<double>{64, 128},
          quick ? std::vector<double>{4, 16, 64} : ladder(1, 256, 4),
          quick ? std::vector<double>{128, 512, 2048, 8192} : ladder(128, 16384, 2)}});
  for (const char* cache : {"", ".kv_fp8"})
    out.push_back({fmt::format("attn_decode.bf16{}", cache),
                   {"d", "group", "kv_heads", "context"},
                   {{64, 128},
                    quick ? std::vector<double>{1, 8} : std::vector<double>{1, 4, 8},
                    quick ? std::vector<double>{1, 16, 256} : ladder(1, 1024, 4),
                    quick ? std::vector<double>{512, 4096, 32768} : ladder(256, 65536, 4)}});
}

// calibrate --quick: every class the full calibration measures in bf16, at a few points each: a
// node of any class is then predicted from a measured neighbour (or scaled from one beyond the
// grid), never from the bare roofline.
std::vector<TableGrid> quick_grids() {
  std::vector<TableGrid> out;
  out.push_back({"gemm.bf16",
                 {"align", "m", "n", "k"},
                 {{1, 128},
                  {1, 8, 64, 512, 4096, 65536},  // to a CNN's pixels as rows (ConvNeXt: 100,352)
                  {256, 1024, 4096, 16384, 65536},
                  {64, 256, 1024, 4096, 16384}}});  // k: to ConvNeXt's 96 channels
  attention_grids(out, true);
  // Pixels to a batch of 64 images at 56 x 56 (pointwise convolutions of MobileNets and
  // EfficientNets at large batches), channels from MobileNet's 16.
  out.push_back({"conv.bf16.k1s1",
                 {"pixels", "out", "in"},
                 {{49, 784, 12544, 200704}, {16, 64, 256, 1024}, {16, 64, 256, 1024}}});
  out.push_back({"conv.bf16.k3s1",
                 {"pixels", "out", "in"},
                 {{49, 784, 12544, 200704}, {64, 256, 1024}, {64, 256, 1024}}});
  out.push_back({"mem.elementwise", {"bytes"}, {ladder(4096, 1 << 30, 4)}});
  // Row kernels' time is not a power law in the rows: a few rows per decade.
  for (const char* cls : {"norm", "softmax", "reduce"})
    out.push_back({fmt::format("mem.{}", cls),
                   {"align", "rows", "cols"},
                   {{1, 8}, {1, 16, 256, 4096, 65536}, {64, 256, 1024, 4096}}});
  out.push_back({"gemm.fp8",
                 {"align", "m", "n", "k"},
                 {{128},
                  {1, 64, 4096},
                  {1024, 4096, 16384, 131072},
                  {1024, 4096, 16384}}});  // n: to a vocabulary
  for (const char* cls : {"k1s2", "k3s2"})
    out.push_back({fmt::format("conv.bf16.{}", cls),
                   {"pixels", "out", "in"},
                   {{196, 3136, 50176}, {64, 512}, {64, 512}}});
  for (const char* cls : {"k14s14", "k16s16"})  // ViT patch embeddings
    out.push_back({fmt::format("conv.bf16.{}", cls),
                   {"pixels", "out", "in"},
                   {{196, 3136, 50176}, {768, 1024}, {3}}});
  out.push_back({"conv.bf16.k3s2.stem", {"pixels", "out", "in"}, {{12544, 802816}, {16, 64}, {3}}});
  out.push_back({"conv.bf16.k7s2", {"pixels", "out", "in"}, {{12544, 401408}, {64}, {3}}});
  // Depthwise channels from MobileNet's 16 to ConvNeXt's 768.
  for (const char* cls : {"dw3s1", "dw3s2", "dw5s1", "dw5s2", "dw7s1"})
    out.push_back({fmt::format("conv.bf16.{}", cls),
                   {"pixels", "channels"},
                   {{196, 12544, 802816}, {16, 128, 1024}}});
  // 2x2 stride-2 downsampling between stages (ConvNeXt, Swin).
  out.push_back(
      {"conv.bf16.k2s2", {"pixels", "out", "in"}, {{196, 3136, 50176}, {128, 1024}, {128, 1024}}});
  for (const char* cls : {"g3s1", "g3s2"})  // grouped 3x3 (ResNeXt, RegNet)
    out.push_back({fmt::format("conv.bf16.{}", cls),
                   {"pixels", "channels", "width"},
                   {{196, 12544, 200704}, {128, 1024}, {8}}});
  // Steps of 4 as the element-wise ladder's: the knee where the bytes leave L2 is sharp.
  for (const char* cls : {"broadcast", "transpose", "copy", "gather"})
    out.push_back({fmt::format("mem.{}", cls), {"bytes"}, {ladder(4096, 1 << 30, 4)}});
  // fp32 graphs run their convolutions on TF32 by default (--math tf32-conv).
  // Pointwise layers reach ResNet's 2,048 channels.
  for (const char* cls : {"k1s1", "k1s2"})
    out.push_back({fmt::format("conv.tf32.{}", cls),
                   {"pixels", "out", "in"},
                   {{49, 784, 12544}, {64, 512, 2048}, {64, 512, 2048}}});
  for (const char* cls : {"k3s1", "k3s2"})
    out.push_back({fmt::format("conv.tf32.{}", cls),
                   {"pixels", "out", "in"},
                   {{49, 784, 12544}, {64, 512}, {64, 512}}});
  out.push_back({"conv.tf32.k7s2", {"pixels", "out", "in"}, {{12544, 401408}, {64}, {3}}});
  // Weight-only int4/int8 GEMMs: rows on both sides of each hand-over between the replay's three
  // kernels (the CUDA-core GEMV to 8 rows, the tensor-core one to 64, then dequantize + GEMM).
  for (const char* bits : {"int4", "int8"})
    out.push_back({fmt::format("woq.{}", bits),
                   {"m", "n", "k"},
                   {{1, 4, 16, 64, 256, 4096}, {1024, 4096, 16384}, {1024, 4096, 16384}}});
  // MoE experts at a decode's few rows an expert to a prefill's hundreds.
  for (const char* p : {"bf16", "fp8"})
    out.push_back({fmt::format("moe.{}", p),
                   {"experts", "rows", "n", "k"},
                   {{4, 32}, {2, 32, 512}, {512, 4096}, {512, 4096}}});
  return out;
}

// One precision's convolution classes: pointwise, 3x3, stems, depthwise (where the precision
// runs them on its own kernels), 2x2 downsampling, and patch embeddings.
void conv_grids(std::vector<TableGrid>& out, const char* p, bool patches, bool depthwise) {
  auto pow2 = [](double from, double to) { return ladder(from, to, 2); };
  std::vector<double> pixels = ladder(49, 200704, 4), channels = ladder(64, 4096, 4);
  // Stems and depthwise layers see whole images at large batches: 64 x 112 x 112 output pixels.
  std::vector<double> image_pixels = ladder(49, 3211264, 4);
  // Pointwise convolutions go down to MobileNets' 16 channels.
  out.push_back({fmt::format("conv.{}.k1s1", p),
                 {"pixels", "out", "in"},
                 {pixels, ladder(16, 4096, 4), ladder(16, 4096, 4)}});
  for (const char* cls : {"k1s2", "k3s1", "k3s2"})
    out.push_back(
        {fmt::format("conv.{}.{}", p, cls), {"pixels", "out", "in"}, {pixels, channels, channels}});
  // RGB stems: 3x3 stride 2 (MobileNet, EfficientNet) and 7x7 stride 2 (ResNet).
  out.push_back({fmt::format("conv.{}.k3s2.stem", p),
                 {"pixels", "out", "in"},
                 {image_pixels, {16, 32, 64}, {3}}});
  out.push_back({fmt::format("conv.{}.k7s2", p),
                 {"pixels", "out", "in"},
                 {image_pixels, channels, {3, 16, 64}}});
  // Depthwise: one filter per channel, the CUDA cores' work (TF32 nodes read fp32's). Grouped
  // 3x3 (ResNeXt, RegNet): 64 to 4,096 channels, 4 to 64 a group.
  if (depthwise) {
    for (const char* cls : {"dw3s1", "dw3s2", "dw5s1", "dw5s2", "dw7s1"})
      out.push_back({fmt::format("conv.{}.{}", p, cls),
                     {"pixels", "channels"},
                     {image_pixels, pow2(16, 1024)}});
    for (const char* cls : {"g3s1", "g3s2"})
      out.push_back({fmt::format("conv.{}.{}", p, cls),
                     {"pixels", "channels", "width"},
                     {ladder(49, 802816, 4), ladder(64, 4096, 4), {4, 16, 64}}});
  }
  // 2x2 stride 2 downsampling between stages (ConvNeXt, Swin).
  out.push_back(
      {fmt::format("conv.{}.k2s2", p), {"pixels", "out", "in"}, {pixels, channels, channels}});
  if (patches) {  // patch embeddings: RGB in, a few hundred to a few thousand patches per image
    for (const char* cls : {"k14s14", "k16s16"})
      out.push_back({fmt::format("conv.{}.{}", p, cls),
                     {"pixels", "out", "in"},
                     {ladder(49, 200704, 4), {256, 1024, 4096}, {3}}});
    out.push_back({fmt::format("conv.{}.k4s4", p),
                   {"pixels", "out", "in"},
                   {image_pixels, {64, 96, 128, 256}, {3}}});
  }
}

}  // namespace

std::vector<TableGrid> calibration_grids(bool quick) {
  if (quick) return quick_grids();
  std::vector<TableGrid> out;
  auto pow2 = [](double from, double to) { return ladder(from, to, 2); };
  // In order of how much time of common models they predict: a run cut short by its deadline
  // loses the least.
  std::vector<double> m = pow2(1, 16384), n = pow2(128, 131072), k = pow2(128, 32768);
  out.push_back({"gemm.bf16", {"align", "m", "n", "k"}, {{1, 8, 128}, m, n, k}});
  attention_grids(out, false);
  conv_grids(out, "bf16", true, true);
  for (const char* cls : {"elementwise", "broadcast", "transpose", "copy", "gather"})
    out.push_back({fmt::format("mem.{}", cls), {"bytes"}, {pow2(4096, 1 << 30)}});
  for (const char* cls : {"norm", "softmax", "reduce"})
    out.push_back({fmt::format("mem.{}", cls),
                   {"align", "rows", "cols"},
                   {{1, 8}, ladder(1, 65536, 4), ladder(64, 16384, 4)}});
  // MoE projections: a top-2-of-8 decode's 2 experts to 128 on a GPU (Qwen3, gpt-oss), one row
  // an expert to a prefill's thousand, expert widths from Qwen3-30B's 768 to Mixtral's 14,336.
  for (const char* p : {"bf16", "fp8"})
    out.push_back(
        {fmt::format("moe.{}", p),
         {"experts", "rows", "n", "k"},
         {{2, 8, 32, 128}, ladder(1, 1024, 4), ladder(512, 8192, 4), ladder(512, 8192, 4)}});
  // Weight-only int4/int8 GEMMs (GPTQ, AWQ, MatMulNBits): every row count from a decode's one to
  // a prefill's thousands; widths of 7B-70B layers.
  for (const char* bits : {"int4", "int8"})
    out.push_back({fmt::format("woq.{}", bits),
                   {"m", "n", "k"},
                   {pow2(1, 8192), pow2(512, 65536), pow2(512, 32768)}});
  for (const char* p : {"fp8", "tf32", "fp32"})
    out.push_back({fmt::format("gemm.{}", p), {"align", "m", "n", "k"}, {{128}, m, n, k}});
  conv_grids(out, "fp32", false, true);
  conv_grids(out, "tf32", false, false);
  return out;
}

std::vector<TableGrid> selected_grids(bool quick, const std::vector<std::string>& prefixes) {
  std::vector<TableGrid> all = calibration_grids(quick);
  if (prefixes.empty()) return all;
  std::vector<TableGrid> out;
  for (const std::string& p : prefixes) {
    bool any = false;
    for (const TableGrid& g : all)
      if (g.key.rfind(p, 0) == 0) {
        any = true;
        if (std::none_of(out.begin(), out.end(),
                         [&](const TableGrid& o) { return o.key == g.key; }))
          out.push_back(g);
      }
    if (!any) {
      std::vector<std::string> keys;
      for (const TableGrid& g : all) keys.push_back(g.key);
      throw InputError(fmt::format("--tables {}: no {}table starts so; the tables are {}", p,
                                   quick ? "quick " : "", fmt::join(keys, ", ")));
    }
  }
  return out;
}

bool grid_point_wanted(const std::string& table, const std::vector<double>& x, const Device& d,
                       double budget_s, int64_t memory_bytes) {
  GridWork w = grid_work(table, x);
  if (w.bytes > static_cast<double>(memory_bytes)) return false;
  double t = ideal_seconds(w, d);
  // Unaligned GEMMs run kernels several times slower than the roofline says.
  if (table.rfind("gemm.", 0) == 0 && x[0] < 8) t *= 5;
  return t <= budget_s;
}

}  // namespace rooflens
