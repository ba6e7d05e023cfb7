#include "kernels/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda_check.hpp"

namespace rooflens::kernels {

namespace {
constexpr size_t kWorkspace = 64ull << 20;

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f8e4m3fn:
      return CUDA_R_8F_E4M3;
    default:
      throw CudaError(fmt::format("no cuBLASLt type for {}", dtype_name(d)));
  }
}
}  // namespace

CublasLt::CublasLt() {
  ROOFLENS_CUBLAS_CHECK(cublasLtCreate(&handle_));
  ROOFLENS_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspace));
  workspace_bytes_ = kWorkspace;
}

CublasLt::~CublasLt() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

struct Gemm::Impl {
  const CublasLt* lt = nullptr;
  GemmShape shape;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t wl = nullptr, al = nullptr, dl = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  int selected = 0;
  ~Impl() {
    if (dl) cublasLtMatrixLayoutDestroy(dl);
    if (al) cublasLtMatrixLayoutDestroy(al);
    if (wl) cublasLtMatrixLayoutDestroy(wl);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

static void batch_layout(cublasLtMatrixLayout_t l, int64_t batch, int64_t stride) {
  int count = static_cast<int>(batch);
  ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                         &count, sizeof(count)));
  ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
}

Gemm::Gemm(const CublasLt& lt, const GemmShape& s, int max_algorithms)
    : impl_(std::make_unique<Impl>()) {
  Impl& g = *impl_;
  g.lt = &lt;
  g.shape = s;
  const GemmDims& d = s.dims;
  DType in = storage_dtype(s.precision);
  DType out = s.precision == Precision::fp8 ? (s.out == DType::f16 ? DType::f16 : DType::bf16) : in;
  g.shape.out = out;
  cublasComputeType_t compute =
      s.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ROOFLENS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&g.op, compute, CUDA_R_32F));
  if (s.b_kn && s.precision == Precision::fp8)
    throw ReplayUnsupported("fp8 GEMMs need weights stored [n, k]");
  cublasOperation_t t = s.b_kn ? CUBLAS_OP_N : CUBLAS_OP_T, n = CUBLAS_OP_N;
  ROOFLENS_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
  ROOFLENS_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
  if (s.bias) {
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
    ROOFLENS_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    cudaDataType_t bt = cuda_type(out);
    ROOFLENS_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
  }
  // Column-major view of the row-major product: D^T (n x m) = W (n x k) . A^T (k x m).
  if (s.b_kn)
    ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.wl, cuda_type(in), d.n, d.k, d.n));
  else
    ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.wl, cuda_type(in), d.k, d.n, d.k));
  int64_t lda = s.a_row_stride > 0 ? s.a_row_stride : d.k,
          ldd = s.d_row_stride > 0 ? s.d_row_stride : d.n;
  ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.al, cuda_type(in), d.k, d.m, lda));
  ROOFLENS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.dl, cuda_type(out), d.n, d.m, ldd));
  if (d.batch > 1) {
    batch_layout(g.wl, d.batch,
                 s.b_shared             ? 0
                 : s.b_batch_stride > 0 ? s.b_batch_stride
                                        : d.n * d.k);
    batch_layout(g.al, d.batch,
                 s.a_shared             ? 0
                 : s.a_batch_stride > 0 ? s.a_batch_stride
                                        : d.m * lda);
    batch_layout(g.dl, d.batch, s.d_batch_stride > 0 ? s.d_batch_stride : d.m * ldd);
  }
  cublasLtMatmulPreference_t pref;
  ROOFLENS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = lt.workspace_bytes();
  ROOFLENS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  std::vector<cublasLtMatmulHeuristicResult_t> results(
      static_cast<size_t>(std::max(max_algorithms, 1)));
  int found = 0;
  cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt.handle(), g.op, g.wl, g.al, g.dl, g.dl, pref,
                                     static_cast<int>(results.size()), results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      g.algos.push_back(results[static_cast<size_t>(i)]);
  if (g.algos.empty())
    throw ReplayUnsupported(fmt::format("cuBLASLt has no {} algorithm for m={} n={} k={} batch={}",
                                        precision_name(s.precision), d.m, d.n, d.k, d.batch));
}

Gemm::~Gemm() = default;

int Gemm::algorithm_count() const {
  return static_cast<int>(impl_->algos.size());
}
void Gemm::select(int algorithm) {
  impl_->selected = algorithm;
}
int Gemm::selected() const {
  return impl_->selected;
}

std::string Gemm::algorithm_label(int algorithm) const {
  const cublasLtMatmulAlgo_t& a = impl_->algos[static_cast<size_t>(algorithm)].algo;
  auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t which) {
    uint32_t v = 0;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&a, which, &v, sizeof(v), &written);
    return v;
  };
  return fmt::format("algo {}, tile id {}, split-K {}", attr(CUBLASLT_ALGO_CONFIG_ID),
                     attr(CUBLASLT_ALGO_CONFIG_TILE_ID), attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
}

void Gemm::run(const void* a, const void* b, void* d, const void* bias, cudaStream_t s) const {
  const Impl& g = *impl_;
  if (g.shape.bias)
    ROOFLENS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                         &bias, sizeof(bias)));
  float alpha = 1.f, beta = 0.f;
  ROOFLENS_CUBLAS_CHECK(cublasLtMatmul(g.lt->handle(), g.op, &alpha, b, g.wl, a, g.al, &beta, d,
                                       g.dl, d, g.dl,
                                       &g.algos[static_cast<size_t>(g.selected)].algo,
                                       g.lt->workspace(), g.lt->workspace_bytes(), s));
}

}  // namespace rooflens::kernels
