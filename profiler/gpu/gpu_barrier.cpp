#include "profiler/gpu/gpu_barrier.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "kernels/calibrate_kernels.hpp"
#include "kernels/cuda_check.hpp"

namespace rooflens::profiler {

HostFlags::HostFlags(int words) : bytes_(words * sizeof(unsigned)) {
  ROOFLENS_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), bytes_,
                                    cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(host_, 0, bytes_);
  try {
    ROOFLENS_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
  } catch (...) {
    cudaFreeHost(host_);  // no destructor runs for a constructor that throws
    throw;
  }
}

HostFlags::HostFlags(const std::string& shared_name, int words)
    : bytes_(words * sizeof(unsigned)), shared_(true) {
  // Every rank creates or opens the same object; a new one is zero-filled, and resizing an
  // existing one to the same size keeps what the others wrote.
  int fd = shm_open(shared_name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    throw kernels::CudaError(fmt::format("shared memory {} for the ranks' barrier: {}", shared_name,
                                         std::strerror(err)));
  }
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    throw kernels::CudaError(fmt::format("mapping {}: {}", shared_name, std::strerror(errno)));
  host_ = static_cast<unsigned*>(p);
  bool registered = false;
  try {
    ROOFLENS_CUDA_CHECK(
        cudaHostRegister(host_, bytes_, cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered = true;
    ROOFLENS_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
  } catch (...) {
    if (registered) cudaHostUnregister(host_);  // no destructor runs for a constructor that throws
    munmap(host_, bytes_);
    throw;
  }
}

HostFlags::~HostFlags() {
  if (shared_) {
    cudaHostUnregister(host_);
    munmap(host_, bytes_);
  } else {
    cudaFreeHost(host_);
  }
}

unsigned HostFlags::read(int i) const {
  return std::atomic_ref<unsigned>(host_[i]).load();
}

void HostFlags::write(int i, unsigned v) {
  std::atomic_ref<unsigned>(host_[i]).store(v);
}

void GpuBarrier::hold(int gpu, cudaStream_t s) {
  kernels::gpu_barrier(flags_.device(), gpu, gpus_ + hosts_, epoch_, s);
}

void GpuBarrier::check() const {
  if (flags_.read(gpus_ + hosts_) != 0)
    throw kernels::CudaError(
        "a GPU waited 10 s at the barrier before a collective's sample: another GPU or rank never "
        "reached it");
}

}  // namespace rooflens::profiler
