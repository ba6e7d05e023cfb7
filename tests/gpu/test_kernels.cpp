// Each replay kernel against a host reference computed from the same inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "gpu_helpers.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemv.hpp"
#include "kernels/memory_kernels.hpp"
#include "kernels/weight_only.hpp"

using namespace gpu_test;
using namespace rooflens;
using namespace rooflens::kernels;

namespace {

// out[b][m][n] = sum_k a[b?][m][k] * w(b?, n, k) (+ bias[n]); w stored [n,k] or [k,n].
std::vector<float> host_gemm(const std::vector<float>& a, const std::vector<float>& w,
                             const std::vector<float>* bias, int64_t batch, int64_t m, int64_t n,
                             int64_t k, bool a_shared, bool b_shared, bool kn) {
  std::vector<float> out(static_cast<size_t>(batch * m * n));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = bias ? (*bias)[j] : 0;
        const float* ar = a.data() + (a_shared ? 0 : b * m * k) + i * k;
        const float* wb = w.data() + (b_shared ? 0 : b * n * k);
        for (int64_t q = 0; q < k; ++q)
          s += static_cast<double>(ar[q]) * (kn ? wb[q * n + j] : wb[j * k + q]);
        out[static_cast<size_t>((b * m + i) * n + j)] = static_cast<float>(s);
      }
  return out;
}

struct GemmCase {
  Precision p;
  bool kn, bias, b_shared;
  double tol;
};

}  // namespace

TEST_CASE("cuBLASLt GEMM matches the host in every precision and layout") {
  CublasLt lt;
  const int64_t batch = 2, m = 48, n = 64, k = 96;
  for (GemmCase c : {GemmCase{Precision::fp32, true, false, true, 1e-4},
                     GemmCase{Precision::tf32, false, true, true, 2e-2},
                     GemmCase{Precision::bf16, true, true, false, 3e-2},
                     GemmCase{Precision::fp16, false, false, false, 1e-2},
                     GemmCase{Precision::fp8, false, false, true, 6e-2}}) {
    DYNAMIC_SECTION(precision_name(c.p) << (c.kn ? " kn" : " nk") << (c.bias ? " bias" : "")) {
      DType in = storage_dtype(c.p), out = c.p == Precision::fp8 ? DType::bf16 : in;
      Tensor a(in, batch * m * k, 11), w(in, (c.b_shared ? 1 : batch) * n * k, 12),
          bias(out, n, 13), d(out, batch * m * n, 14);
      GemmShape s;
      s.precision = c.p;
      s.out = out;
      s.dims = GemmDims{batch, m, n, k};
      s.b_shared = c.b_shared;
      s.bias = c.bias;
      s.b_kn = c.kn;
      Gemm g(lt, s);
      g.run(a.get(), w.get(), d.get(), c.bias ? bias.get() : nullptr, nullptr);
      auto hb = bias.host();
      auto want = host_gemm(a.host(), w.host(), c.bias ? &hb : nullptr, batch, m, n, k, false,
                            c.b_shared, c.kn);
      CHECK(max_rel_error(d.host(), want, 0.5) < c.tol);
    }
  }
}

TEST_CASE("GEMV (decode-step GEMM) matches the host for 1 to 8 rows, with and without bias") {
  const int64_t n = 100, k = 264;
  for (int64_t m : {1, 3, 8})
    for (DType dt : {DType::bf16, DType::f32}) {
      DYNAMIC_SECTION("m=" << m << " " << dtype_name(dt)) {
        Tensor x(dt, m * k, 15), w(dt, n * k, 16), bias(dt, n, 17), y(dt, m * n, 18);
        REQUIRE(gemv_supported(dt, m, k, x.get(), w.get()));
        gemv(x.get(), w.get(), m == 3 ? bias.get() : nullptr, y.get(), dt, m, n, k, nullptr);
        auto hb = bias.host();
        auto want =
            host_gemm(x.host(), w.host(), m == 3 ? &hb : nullptr, 1, m, n, k, false, true, false);
        CHECK(max_rel_error(y.host(), want, 0.5) < (dt == DType::f32 ? 1e-4 : 2e-2));
      }
    }
  CHECK_FALSE(gemv_supported(DType::bf16, 9, 264, nullptr, nullptr));
  CHECK_FALSE(
      gemv_supported(DType::bf16, 1, 260, nullptr, nullptr));  // k not whole 16-byte vectors
}

namespace {

// W [n, k] from the replay's packed tiles (kernels/weight_only.hpp) and its scales, each weight
// rounded to bf16 as both kernels dequantize it.
std::vector<float> host_weight_only(int bits, const std::vector<float>& packed,
                                    const std::vector<float>& scales, int64_t n, int64_t k,
                                    int64_t group) {
  std::vector<float> w(static_cast<size_t>(n * k));
  int64_t kt = weight_only_tile_k(bits), zero = int64_t{1} << (bits - 1);
  for (int64_t rt = 0; rt < n / 16; ++rt)
    for (int64_t ct = 0; ct < k / kt; ++ct)
      for (int lane = 0; lane < 32; ++lane)
        for (int v = 0; v < 128 / bits; ++v) {
          TilePosition p = tile_position(bits, lane, v);
          auto byte = static_cast<int64_t>(
              packed[static_cast<size_t>(tile_offset(bits, k, rt, ct) + 16 * lane + p.byte)]);
          int64_t q = (byte >> p.shift) & ((int64_t{1} << bits) - 1);
          int64_t row = rt * 16 + p.row, kk = ct * kt + p.kk;
          w[static_cast<size_t>(row * k + kk)] =
              round_to_bf16(static_cast<float>(q - zero) *
                            scales[static_cast<size_t>(row * (k / group) + kk / group)]);
        }
  return w;
}

}  // namespace

TEST_CASE(
    "weight-only int4/int8: the tensor-core GEMV and the dequantized weights match the host") {
  const int64_t n = 96, k = 512;
  for (int bits : {4, 8})
    for (int64_t group : {int64_t{32}, int64_t{128}, k})
      for (int64_t m : {1, 5, 8, 13, 40, 64}) {
        DYNAMIC_SECTION(bits << "-bit, groups of " << group << ", m=" << m) {
          Tensor x(DType::bf16, m * k, 21), q(DType::u8, n * k * bits / 8, 22, 256),
              sc(DType::bf16, n * (k / group), 23), bias(DType::bf16, n, 24),
              y(DType::bf16, m * n, 25), dense(DType::bf16, n * k, 26);
          std::vector<float> w = host_weight_only(bits, q.host(), sc.host(), n, k, group);
          REQUIRE(weight_only_gemv_supported(DType::bf16, bits, m, n, k, group, x.get(), q.get()));
          bool with_bias = m == 5 || m == 40;
          weight_only_gemv(x.get(), q.get(), sc.get(), with_bias ? bias.get() : nullptr, y.get(),
                           DType::bf16, bits, m, n, k, group, nullptr);
          auto hb = bias.host();
          auto want =
              host_gemm(x.host(), w, with_bias ? &hb : nullptr, 1, m, n, k, false, true, false);
          // Outputs of ~9 summed in fp32, written in bf16.
          CHECK(max_rel_error(y.host(), want, 1.0) < 1e-2);
          dequantize_weights(q.get(), sc.get(), dense.get(), DType::bf16, bits, n, k, group,
                             nullptr);
          CHECK(max_rel_error(dense.host(), w, 1e-3) < 1e-6);  // the same bf16 weights
        }
      }
  // Groups below one mma step (16 k), k not whole tiles or groups, more rows than the GEMV takes.
  CHECK_FALSE(weight_only_layout_supported(4, 512, 8));
  CHECK_FALSE(weight_only_layout_supported(4, 544, 32));
  CHECK_FALSE(weight_only_layout_supported(8, 144, 32));
  CHECK_FALSE(weight_only_gemv_supported(DType::bf16, 4, 65, 96, 512, 128, nullptr, nullptr));
}

TEST_CASE("weight-only int4/int8: the CUDA-core GEMV on row-major packing matches the host") {
  const int64_t n = 100, k = 1024;
  for (int bits : {4, 8})
    for (int64_t group : {int64_t{32}, int64_t{128}})
      for (int64_t m : {1, 3, 8}) {
        DYNAMIC_SECTION(bits << "-bit, groups of " << group << ", m=" << m) {
          Tensor x(DType::bf16, m * k, 31), q(DType::u8, n * k * bits / 8, 32, 256),
              sc(DType::bf16, n * (k / group), 33), bias(DType::bf16, n, 34),
              y(DType::bf16, m * n, 35);
          // Row j's weights in order; 4-bit: two a byte, the low nibble first. Exact in fp32.
          std::vector<float> hq = q.host(), hs = sc.host(), w(static_cast<size_t>(n * k));
          int64_t zero = int64_t{1} << (bits - 1);
          for (int64_t at = 0; at < n * k; ++at) {
            auto byte = static_cast<int64_t>(hq[static_cast<size_t>(bits == 4 ? at / 2 : at)]);
            int64_t v = bits == 4 ? (at % 2 ? byte >> 4 : byte & 0xF) : byte;
            w[static_cast<size_t>(at)] = static_cast<float>(v - zero) *
                                         hs[static_cast<size_t>(at / group)];  // row-major groups
          }
          REQUIRE(
              weight_only_gemv_rows_supported(DType::bf16, bits, m, k, group, x.get(), q.get()));
          weight_only_gemv_rows(x.get(), q.get(), sc.get(), m == 3 ? bias.get() : nullptr, y.get(),
                                DType::bf16, bits, m, n, k, group, nullptr);
          auto hb = bias.host();
          auto want =
              host_gemm(x.host(), w, m == 3 ? &hb : nullptr, 1, m, n, k, false, true, false);
          CHECK(max_rel_error(y.host(), want, 1.0) < 1e-2);
        }
      }
  CHECK_FALSE(weight_only_gemv_rows_supported(DType::bf16, 4, 9, 1024, 128, nullptr, nullptr));
}

TEST_CASE("element-wise with broadcast matches the host: rows, per-row scales, NCHW biases") {
  Tensor a(DType::f32, 4 * 3 * 8, 1), b(DType::f32, 3 * 1, 2), out(DType::f32, 4 * 3 * 8, 3);
  elementwise(EwOp::add, {{a.get(), DType::f32, {4, 3, 8}}, {b.get(), DType::f32, {3, 1}}},
              out.get(), DType::f32, {4, 3, 8}, nullptr);
  auto ha = a.host(), hb = b.host(), ho = out.host();
  double worst = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int q = 0; q < 8; ++q)
        worst = std::max(
            worst, std::abs(ho[(i * 3 + j) * 8 + q] - (ha[(i * 3 + j) * 8 + q] + hb[j])) * 1.0);
  CHECK(worst < 1e-6);

  // A bias add over rows (vector loads of both operands) and an innermost dim that is not a
  // whole number of vectors (the scalar walk).
  for (auto [rows, cols, dt] : {std::tuple{6, 24, DType::bf16}, std::tuple{5, 7, DType::f32}}) {
    Tensor m(dt, rows * cols, 41), bias(dt, cols, 42), sum(dt, rows * cols, 43);
    elementwise(EwOp::add, {{m.get(), dt, {rows, cols}}, {bias.get(), dt, {cols}}}, sum.get(), dt,
                {rows, cols}, nullptr);
    auto hm = m.host(), hbias = bias.host(), hs = sum.host();
    std::vector<float> want(hm.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) want[r * cols + c] = hm[r * cols + c] + hbias[c];
    CHECK(max_rel_error(hs, want, 0.05) < 1e-2);
  }

  // A squeeze-excitation scale: [4, 6, 1, 1] times [4, 6, 7, 7], rows of 49 (not whole vectors),
  // the per-row operand first and second.
  {
    Tensor se(DType::bf16, 4 * 6, 44), img(DType::bf16, 4 * 6 * 49, 45),
        prod(DType::bf16, 4 * 6 * 49, 46);
    auto hse = se.host(), himg = img.host();
    std::vector<float> want(himg.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = hse[i / 49] * himg[i];
    for (bool se_first : {true, false}) {
      EwOperand s_op{se.get(), DType::bf16, {4, 6, 1, 1}},
          i_op{img.get(), DType::bf16, {4, 6, 7, 7}};
      std::vector<EwOperand> ops =
          se_first ? std::vector<EwOperand>{s_op, i_op} : std::vector<EwOperand>{i_op, s_op};
      elementwise(EwOp::mul, ops, prod.get(), DType::bf16, {4, 6, 7, 7}, nullptr);
      CHECK(max_rel_error(prod.host(), want, 0.05) < 1e-2);
    }
    // A convolution's per-channel bias [6, 1, 1] over NCHW: rows indexed (image, channel).
    Tensor bias(DType::bf16, 6, 47);
    auto hbias = bias.host();
    for (size_t i = 0; i < want.size(); ++i) want[i] = himg[i] + hbias[(i / 49) % 6];
    elementwise(EwOp::add,
                {{img.get(), DType::bf16, {4, 6, 7, 7}}, {bias.get(), DType::bf16, {6, 1, 1}}},
                prod.get(), DType::bf16, {4, 6, 7, 7}, nullptr);
    CHECK(max_rel_error(prod.host(), want, 0.05) < 1e-2);
  }
}

TEST_CASE("element-wise GELU, SiLU, Where and casts (fp8 too) match the host") {
  Tensor x(DType::bf16, 4096, 4), y(DType::bf16, 4096, 5);  // the vectorized path
  elementwise(EwOp::gelu, {{x.get(), DType::bf16, {4096}}}, y.get(), DType::bf16, {4096}, nullptr);
  auto hx = x.host(), hy = y.host();
  std::vector<float> want(hx.size());
  for (size_t i = 0; i < hx.size(); ++i)
    want[i] = 0.5f * hx[i] * (1 + std::erf(hx[i] / std::sqrt(2.f)));
  CHECK(max_rel_error(hy, want, 0.05) < 1e-2);
  elementwise(EwOp::swish, {{x.get(), DType::bf16, {4096}}}, y.get(), DType::bf16, {4096},
              nullptr);  // fast division
  hy = y.host();
  for (size_t i = 0; i < hx.size(); ++i) want[i] = hx[i] / (1 + std::exp(-hx[i]));
  CHECK(max_rel_error(hy, want, 0.05) < 1e-2);

  Tensor cond(DType::boolean, 64, 6), p(DType::f16, 64, 7), q(DType::f16, 64, 8),
      r(DType::f16, 64, 9);
  elementwise(EwOp::where,
              {{cond.get(), DType::boolean, {64}},
               {p.get(), DType::f16, {64}},
               {q.get(), DType::f16, {64}}},
              r.get(), DType::f16, {64}, nullptr);
  auto hc = cond.host(), hp = p.host(), hq = q.host(), hr = r.host();
  for (int i = 0; i < 64; ++i) CHECK(hr[i] == (hc[i] != 0 ? hp[i] : hq[i]));

  Tensor src(DType::f32, 100, 10), dst(DType::bf16, 100, 11);
  elementwise(EwOp::cast, {{src.get(), DType::f32, {100}}}, dst.get(), DType::bf16, {100}, nullptr);
  CHECK(max_rel_error(dst.host(), src.host()) < 1e-2);
  // To fp8 e4m3 (a W8A8 GEMM's activations): 3 mantissa bits, a relative step of 1/8 at most.
  Tensor act(DType::bf16, 4096, 12), act8(DType::f8e4m3fn, 4096, 13);
  elementwise(EwOp::cast, {{act.get(), DType::bf16, {4096}}}, act8.get(), DType::f8e4m3fn, {4096},
              nullptr);
  CHECK(max_rel_error(act8.host(), act.host(), 0.05) < 0.07);
}

namespace {

// Host norm of each row of x (+ skip), times gamma, plus beta.
std::vector<float> host_norm(const std::vector<float>& x, const std::vector<float>* skip,
                             const std::vector<float>& g, const std::vector<float>* b, int64_t rows,
                             int64_t cols, bool rms) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> v(static_cast<size_t>(cols));
    double mean = 0, sq = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += v[c] = x[r * cols + c] + (skip ? (*skip)[r * cols + c] : 0.f);
    mean = rms ? 0 : mean / cols;
    for (double e : v) sq += (e - mean) * (e - mean);
    double inv = 1 / std::sqrt(sq / cols + 1e-5);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>((v[c] - mean) * inv * g[c] + (b ? (*b)[c] : 0.f));
  }
  return y;
}

}  // namespace

TEST_CASE("row kernels: softmax and norms on vector, warp and block rows") {
  // 300: whole 16-byte vectors (the vector kernel); 301: a warp per row; 1501: a block per row.
  for (int64_t cols : {300, 301, 1501}) {
    DYNAMIC_SECTION("cols=" << cols) {
      const int64_t rows = 37;
      Tensor x(DType::f32, rows * cols, 21), y(DType::f32, rows * cols, 22),
          g(DType::f32, cols, 23), b(DType::f32, cols, 24);
      auto hx = x.host(), hg = g.host(), hb = b.host();
      softmax_rows(x.get(), y.get(), DType::f32, rows, cols, false, nullptr);
      auto hy = y.host();
      for (int64_t r = 0; r < rows; ++r) {
        double m = -1e30, s = 0;
        for (int64_t c = 0; c < cols; ++c) m = std::max<double>(m, hx[r * cols + c]);
        for (int64_t c = 0; c < cols; ++c) s += std::exp(hx[r * cols + c] - m);
        for (int64_t c = 0; c < cols; ++c)
          REQUIRE(std::abs(hy[r * cols + c] - std::exp(hx[r * cols + c] - m) / s) < 1e-5);
      }
      for (bool rms : {false, true}) {
        norm_rows(x.get(), nullptr, g.get(), rms ? nullptr : b.get(), y.get(), DType::f32, rows,
                  cols, rms, nullptr);
        CHECK(max_rel_error(y.host(),
                            host_norm(hx, nullptr, hg, rms ? nullptr : &hb, rows, cols, rms),
                            0.5) < 1e-4);
      }
    }
  }
  SECTION("bf16 RMS norm with a residual input, rows of 4096") {
    const int64_t rows = 3, cols = 4096;
    Tensor x(DType::bf16, rows * cols, 25), skip(DType::bf16, rows * cols, 26),
        g(DType::bf16, cols, 27), y(DType::bf16, rows * cols, 28);
    norm_rows(x.get(), skip.get(), g.get(), nullptr, y.get(), DType::bf16, rows, cols, true,
              nullptr);
    auto hs = skip.host();
    CHECK(max_rel_error(y.host(), host_norm(x.host(), &hs, g.host(), nullptr, rows, cols, true),
                        0.5) < 2e-2);
  }
}

TEST_CASE("row kernels: reductions and top-k") {
  const int64_t rows = 37, cols = 300;
  Tensor x(DType::f32, rows * cols, 21);
  auto hx = x.host();
  Tensor red(DType::f32, rows, 25);
  reduce_rows(x.get(), red.get(), DType::f32, rows, cols, RowReduce::mean, nullptr);
  auto hr = red.host();
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += hx[r * cols + c];
    CHECK(std::abs(hr[r] - s / cols) < 1e-5);
  }
  // A middle dim: [5, 3, 300] summed over its 3 (expert parallelism's combine of top-3 rows).
  const int64_t outer = 5, k = 3, inner = 300;
  Tensor y(DType::f32, outer * k * inner, 29), sum(DType::f32, outer * inner, 30);
  reduce_middle(y.get(), sum.get(), DType::f32, outer, k, inner, RowReduce::sum, nullptr);
  auto hy = y.host(), hsum = sum.host();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += hy[(o * k + j) * inner + i];
      CHECK(std::abs(hsum[o * inner + i] - s) < 1e-5);
    }
  Tensor vals(DType::f32, rows * 4, 26), idx(DType::i64, rows * 4, 27);
  topk_rows(x.get(), vals.get(), static_cast<int64_t*>(idx.get()), DType::f32, rows, cols, 4,
            nullptr);
  auto hv = vals.host(), hi = idx.host();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(hx.begin() + r * cols, hx.begin() + (r + 1) * cols);
    std::sort(row.rbegin(), row.rend());
    for (int j = 0; j < 4; ++j) {
      CHECK(hv[r * 4 + j] == row[j]);
      CHECK(hx[r * cols + static_cast<int64_t>(hi[r * 4 + j])] == row[j]);
    }
  }
}

TEST_CASE("copies: transposes, a concat half, concat and split in one launch") {
  Tensor x(DType::f32, 2 * 3 * 4, 31), y(DType::f32, 24, 32);
  strided_copy(x.get(), y.get(), 4, {4, 3, 2}, {1, 4, 12}, {6, 2, 1}, 0, 0,
               nullptr);  // (2,3,4) -> perm (2,1,0)
  auto hx = x.host(), hy = y.host();
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) CHECK(hy[(c * 3 + b) * 2 + a] == hx[(a * 3 + b) * 4 + c]);

  // Tiled transposes: (37, 45) -> (45, 37) in fp32, and the last two dims of (2, 33, 40) in bf16.
  Tensor mat(DType::f32, 37 * 45, 44), matt(DType::f32, 37 * 45, 45);
  strided_copy(mat.get(), matt.get(), 4, {37, 45}, {45, 1}, {1, 37}, 0, 0, nullptr);
  auto hmat = mat.host(), hmatt = matt.host();
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 45; ++j) REQUIRE(hmatt[j * 37 + i] == hmat[i * 45 + j]);
  Tensor t3(DType::bf16, 2 * 33 * 40, 46), t3t(DType::bf16, 2 * 33 * 40, 47);
  strided_copy(t3.get(), t3t.get(), 2, {2, 33, 40}, {33 * 40, 40, 1}, {33 * 40, 1, 33}, 0, 0,
               nullptr);
  auto h3 = t3.host(), h3t = t3t.host();
  for (int bb = 0; bb < 2; ++bb)
    for (int i = 0; i < 33; ++i)
      for (int j = 0; j < 40; ++j)
        REQUIRE(h3t[bb * 1320 + j * 33 + i] == h3[bb * 1320 + i * 40 + j]);
  // A concat half: rows of 64 bf16 into the second half of rows of 128 (16-byte elements).
  Tensor part(DType::bf16, 3 * 64, 48), whole(DType::bf16, 3 * 128, 49);
  strided_copy(part.get(), whole.get(), 2, {3, 64}, {64, 1}, {128, 1}, 0, 64, nullptr);
  auto hpart = part.host(), hw = whole.host();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 64; ++c) REQUIRE(hw[r * 128 + 64 + c] == hpart[r * 64 + c]);

  // Concat and Split in one launch: 16-byte elements (parts of 64 and 128 bf16), then scalar
  // ones (parts of 3 and 5), and more parts than one launch takes (11 parts of 1 fp32 column).
  for (auto cols : {std::vector<int64_t>{64, 128, 64}, std::vector<int64_t>{3, 5},
                    std::vector<int64_t>(11, 1)}) {
    int64_t total = 0, rows_n = 5;
    for (int64_t c : cols) total += c;
    DType dt = cols.size() == 11 ? DType::f32 : DType::bf16;
    int eb = dt == DType::f32 ? 4 : 2;
    Tensor src(dt, rows_n * total, 51), back(dt, rows_n * total, 52);
    std::vector<Tensor> pieces;
    pieces.reserve(cols.size());
    std::vector<void*> ptrs;
    for (size_t j = 0; j < cols.size(); ++j)
      pieces.emplace_back(dt, rows_n * cols[j], 60 + static_cast<int>(j));
    for (auto& t : pieces) ptrs.push_back(t.get());
    concat_split(src.get(), ptrs, cols, rows_n, eb, true, nullptr);
    concat_split(back.get(), ptrs, cols, rows_n, eb, false, nullptr);
    auto hs = src.host(), hb = back.host();
    int64_t c0 = 0;
    for (size_t j = 0; j < cols.size(); ++j) {
      auto hp = pieces[j].host();
      for (int64_t r = 0; r < rows_n; ++r)
        for (int64_t c = 0; c < cols[j]; ++c)
          REQUIRE(hp[r * cols[j] + c] == hs[r * total + c0 + c]);
      c0 += cols[j];
    }
    for (int64_t i = 0; i < rows_n * total; ++i) REQUIRE(hb[i] == hs[i]);
  }
}

TEST_CASE("copies: gather and rotary embedding against host references") {
  Tensor table(DType::bf16, 50 * 16, 33), ids(DType::i64, 7, 34, 50), rows(DType::bf16, 7 * 16, 35);
  gather(table.get(), ids.get(), DType::i64, rows.get(), 2, 1, 50, 7, 16, nullptr);
  auto ht = table.host(), hi = ids.host(), hr = rows.host();
  for (int j = 0; j < 7; ++j)
    for (int c = 0; c < 16; ++c) CHECK(hr[j * 16 + c] == ht[static_cast<int>(hi[j]) * 16 + c]);
  Tensor narrow(DType::bf16, 7 * 3, 50);  // rows of 3 elements: not whole vectors
  gather(table.get(), ids.get(), DType::i64, narrow.get(), 2, 1, 50 * 16 / 3, 7, 3, nullptr);
  auto hn = narrow.host();
  for (int j = 0; j < 7; ++j)
    for (int c = 0; c < 3; ++c) CHECK(hn[j * 3 + c] == ht[static_cast<int>(hi[j]) * 3 + c]);

  // Rotary embedding against a host reference: the vector path (fp32 with d 8; bf16 with d 128,
  // half of it rotated, in (B, H, S, D) layout) and the scalar one (d 6).
  struct RopeCase {
    DType dt;
    int64_t d, rot;
    bool bhsd;
  };
  for (RopeCase rc : {RopeCase{DType::f32, 8, 8, false}, RopeCase{DType::bf16, 128, 64, true},
                      RopeCase{DType::f32, 6, 6, false}}) {
    const int64_t batch = 2, seq = 5, heads = 2, maxpos = 10, d = rc.d, half = rc.rot / 2,
                  rows = batch * seq * heads;
    Tensor q(rc.dt, rows * d, 36), pos(DType::i64, batch * seq, 37, maxpos),
        cs(rc.dt, maxpos * half, 38), sn(rc.dt, maxpos * half, 39), out(rc.dt, rows * d, 40);
    rope(q.get(), static_cast<const int64_t*>(pos.get()), cs.get(), sn.get(), out.get(), rc.dt,
         rows, heads, seq, d, rc.rot, rc.bhsd, nullptr);
    auto hq = q.host(), hp = pos.host(), hc = cs.host(), hs = sn.host(), ho = out.host();
    float tol = rc.dt == DType::bf16 ? 2e-2f : 1e-6f;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t token = rc.bhsd ? (r / (heads * seq)) * seq + r % seq : r / heads;
      int64_t p = static_cast<int64_t>(hp[token]);
      for (int64_t j = 0; j < half; ++j) {
        float c = hc[p * half + j], s = hs[p * half + j], a = hq[r * d + j],
              b = hq[r * d + j + half];
        REQUIRE(std::abs(ho[r * d + j] - (a * c - b * s)) <= tol);
        REQUIRE(std::abs(ho[r * d + j + half] - (b * c + a * s)) <= tol);
      }
      for (int64_t j = rc.rot; j < d; ++j) REQUIRE(ho[r * d + j] == hq[r * d + j]);
    }
  }
}

TEST_CASE("copies: max pooling and im2col against host references") {
  Tensor img(DType::f32, 1 * 2 * 6 * 6, 41), pooled(DType::f32, 2 * 3 * 3, 42);
  pool2d(img.get(), pooled.get(), DType::f32, Pool2d{1, 2, 6, 6, 3, 3, 3, 3, 2, 2, 1, 1, true},
         nullptr);
  auto hm = img.host(), hpool = pooled.host();
  for (int c = 0; c < 2; ++c)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        float m = -1e30f;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            int yy = oy * 2 - 1 + ky, xx = ox * 2 - 1 + kx;
            if (yy >= 0 && yy < 6 && xx >= 0 && xx < 6) m = std::max(m, hm[(c * 6 + yy) * 6 + xx]);
          }
        CHECK(hpool[(c * 3 + oy) * 3 + ox] == m);
      }

  Tensor col(DType::f32, 2 * 9 * 3 * 3, 43);
  im2col(img.get(), col.get(), DType::f32, 2, 6, 6, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, nullptr);
  auto hcol = col.host();
  for (int ch = 0; ch < 2; ++ch)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx)
        for (int oy = 0; oy < 3; ++oy)
          for (int ox = 0; ox < 3; ++ox) {
            int yy = oy * 2 - 1 + ky, xx = ox * 2 - 1 + kx;
            float want = yy >= 0 && yy < 6 && xx >= 0 && xx < 6 ? hm[(ch * 6 + yy) * 6 + xx] : 0.f;
            CHECK(hcol[(((ch * 3 + ky) * 3 + kx) * 3 + oy) * 3 + ox] == want);
          }
}

TEST_CASE("depthwise convolution matches the host: stride, padding, dilation, bias") {
  // 2 images x 3 channels of 7x9: 3x3, stride 2, pad 1; 5x5 dilated 2 (both unrolled); 2x3 (any
  // window); 7x7 pad 3 (ConvNeXt's) and 5x5 stride 2 pad 2, each also four outputs a thread
  // (a row of 9 is two groups of four and a ragged one).
  struct Case {
    int kh, kw, sh, sw, ph, pw, dh, dw;
  };
  for (Case k :
       {Case{3, 3, 2, 2, 1, 1, 1, 1}, Case{5, 5, 1, 1, 4, 4, 2, 2}, Case{2, 3, 1, 2, 0, 1, 1, 1},
        Case{7, 7, 1, 1, 3, 3, 1, 1}, Case{5, 5, 2, 2, 2, 2, 1, 1}, Case{3, 3, 1, 1, 1, 1, 1, 1}})
    for (bool rows : {false, true}) {
      int n = 2, c = 3, h = 7, w = 9;
      int oh = (h + 2 * k.ph - k.dh * (k.kh - 1) - 1) / k.sh + 1,
          ow = (w + 2 * k.pw - k.dw * (k.kw - 1) - 1) / k.sw + 1;
      Tensor x(DType::f32, n * c * h * w, 51), wt(DType::f32, c * k.kh * k.kw, 52),
          bias(DType::f32, c, 53), y(DType::f32, n * c * oh * ow, 54);
      rooflens::kernels::DepthwiseConv2d dims{n,    c,    h,    w,    oh,   ow,   k.kh,
                                              k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw};
      if (rows && !rooflens::kernels::depthwise_rows_takes(dims)) continue;
      INFO(k.kh << "x" << k.kw << " stride " << k.sh << (rows ? ", four outputs a thread" : ""));
      rooflens::kernels::depthwise_conv2d(x.get(), wt.get(), bias.get(), y.get(), DType::f32, dims,
                                          nullptr, rows);
      auto hx = x.host(), hw = wt.host(), hb = bias.host(), hy = y.host();
      std::vector<float> want(hy.size());
      for (int i = 0; i < n; ++i)
        for (int ch = 0; ch < c; ++ch)
          for (int oy = 0; oy < oh; ++oy)
            for (int ox = 0; ox < ow; ++ox) {
              float acc = hb[ch];
              for (int ky = 0; ky < k.kh; ++ky)
                for (int kx = 0; kx < k.kw; ++kx) {
                  int yy = oy * k.sh - k.ph + ky * k.dh, xx = ox * k.sw - k.pw + kx * k.dw;
                  if (yy >= 0 && yy < h && xx >= 0 && xx < w)
                    acc += hx[((i * c + ch) * h + yy) * w + xx] * hw[(ch * k.kh + ky) * k.kw + kx];
                }
              want[((i * c + ch) * oh + oy) * ow + ox] = acc;
            }
      CHECK(gpu_test::max_rel_error(hy, want) <
            5e-5);  // fp32 sums of up to 49 products in another order
    }
}
