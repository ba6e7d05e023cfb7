#pragma once
// CUDA and cuBLAS status checks: a failure becomes a CudaError naming the call, so the harness
// can name the layer it happened in.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace rooflens::kernels {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A shape or dtype this GPU's libraries cannot run (no cuBLASLt algorithm, ...): the layer is
// skipped with this reason, the run goes on.
struct ReplayUnsupported : CudaError {
  using CudaError::CudaError;
};

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

#define ROOFLENS_CUDA_CHECK(call) ::rooflens::kernels::cuda_check((call), #call)
#define ROOFLENS_CUBLAS_CHECK(call) ::rooflens::kernels::cublas_check((call), #call)

// Lets `kernel` take `bytes` of dynamic shared memory on the current device. The attribute is set
// once per kernel and device (again only for more bytes): the call costs host time between a
// layer's launches.
template <class Kernel>
void allow_dynamic_smem(Kernel* kernel, size_t bytes) {
  static thread_local std::map<std::pair<const void*, int>, size_t> allowed;
  int device = 0;
  ROOFLENS_CUDA_CHECK(cudaGetDevice(&device));
  size_t& done = allowed[{reinterpret_cast<const void*>(kernel), device}];
  if (done >= bytes) return;
  ROOFLENS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  done = bytes;
}

// Device memory owned by one object.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) ROOFLENS_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr, o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace rooflens::kernels
