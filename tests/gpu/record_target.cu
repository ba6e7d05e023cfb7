// A CUDA program with known work, recorded by `rooflens record` in the GPU tests and the record
// benchmark. Default run, in order:
//   NVTX push "outer": kernel_a x3; push "inner": kernel_b x2, a 1 MiB HtoD memcpy, a 2 MiB memset
//   start/end range "across" in domain "rooflens-test", ended by a worker thread that launches
//   kernel_c x1 on its own stream inside its push range "worker"
//   push "graph": a CUDA graph of kernel_a then kernel_b, launched once
// then exits 0, or with --exit N exits N, or with --sigterm raises SIGTERM at the end.
// --bench N: N rounds of 100 back-to-back kernels of about 20 us; prints "kernel_ms X" (CUDA
// events around all rounds) and "wall_ms Y".
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(10);                                                                   \
    }                                                                                  \
  } while (0)

// Unmangled names: the test looks for them as written.
extern "C" __global__ void rooflens_test_kernel_a(float* x, int n, int spins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.f;
  for (int k = 0; k < spins; ++k) v = v * 0.999f + 1.0f;
  if (i < n) x[i] = v;
}
extern "C" __global__ void rooflens_test_kernel_b(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
extern "C" __global__ void rooflens_test_kernel_c(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 3.0f;
}

namespace {

constexpr int kN = 1 << 20;
constexpr int kThreads = 256, kBlocks = (kN + kThreads - 1) / kThreads;

void known_work(float* d, float* pinned) {
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  nvtxRangePushA("outer");
  for (int i = 0; i < 3; ++i) rooflens_test_kernel_a<<<kBlocks, kThreads, 0, s>>>(d, kN, 64);
  nvtxRangePushA("inner");
  for (int i = 0; i < 2; ++i) rooflens_test_kernel_b<<<kBlocks, kThreads, 0, s>>>(d, kN);
  CHECK_CUDA(cudaMemcpyAsync(d, pinned, 1 << 20, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemsetAsync(d, 0, 2 << 20, s));
  nvtxRangePop();
  nvtxRangePop();
  CHECK_CUDA(cudaStreamSynchronize(s));

  nvtxDomainHandle_t domain = nvtxDomainCreateA("rooflens-test");
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "across";
  nvtxRangeId_t across = nvtxDomainRangeStartEx(domain, &attr);
  std::thread worker([&] {
    cudaStream_t ws;
    CHECK_CUDA(cudaStreamCreate(&ws));
    nvtxRangePushA("worker");
    rooflens_test_kernel_c<<<kBlocks, kThreads, 0, ws>>>(d + kN, kN);
    nvtxRangePop();
    CHECK_CUDA(cudaStreamSynchronize(ws));
    nvtxDomainRangeEnd(domain, across);
    CHECK_CUDA(cudaStreamDestroy(ws));
  });
  worker.join();

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  rooflens_test_kernel_a<<<kBlocks, kThreads, 0, s>>>(d, kN, 64);
  rooflens_test_kernel_b<<<kBlocks, kThreads, 0, s>>>(d, kN);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  nvtxRangePushA("graph");
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  nvtxRangePop();
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(s));
}

void bench(float* d, int rounds) {
  cudaStream_t s;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaStreamCreate(&s));
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 50; ++i)
    rooflens_test_kernel_a<<<kBlocks, kThreads, 0, s>>>(d, kN, 256);  // warm-up
  CHECK_CUDA(cudaStreamSynchronize(s));
  auto t0 = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaEventRecord(start, s));
  for (int r = 0; r < rounds; ++r) {
    nvtxRangePushA("round");
    for (int i = 0; i < 100; ++i) rooflens_test_kernel_a<<<kBlocks, kThreads, 0, s>>>(d, kN, 256);
    nvtxRangePop();
  }
  CHECK_CUDA(cudaEventRecord(stop, s));
  CHECK_CUDA(cudaEventSynchronize(stop));
  auto t1 = std::chrono::steady_clock::now();
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  std::printf("kernel_ms %.4f\nwall_ms %.4f\n", ms,
              std::chrono::duration<double, std::milli>(t1 - t0).count());
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0, rounds = 0;
  bool sigterm = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--exit") && i + 1 < argc)
      exit_code = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--sigterm"))
      sigterm = true;
    else if (!std::strcmp(argv[i], "--bench") && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
  }
  float *d = nullptr, *pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&d, 2 * kN * sizeof(float)));
  CHECK_CUDA(cudaMallocHost(&pinned, 1 << 20));
  std::memset(pinned, 0, 1 << 20);
  if (rounds > 0)
    bench(d, rounds);
  else
    known_work(d, pinned);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (sigterm) std::raise(SIGTERM);
  return exit_code;
}
