#pragma once
// Kernel names as people read them: CUPTI reports the mangled name ("_ZN2at6native..."),
// PyTorch traces the demangled one ("void at::native::vectorized_elementwise_kernel<4, ...>(...)").
#include <string>

namespace rooflens::profiler {

// The demangled name (libstdc++'s demangler); names that are not mangled come back unchanged.
std::string demangle_kernel(const std::string& name);
// A demangled name without return type, parameter list and the namespaces inside its template
// arguments: "at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1ul>
// >".
std::string short_kernel_name(const std::string& demangled);
// The name in lower case (ASCII), for matching kernel and module names.
std::string lowercase(std::string s);
// Kernels and memcpys that only move data (cat, copy_, contiguous, memcpy).
bool is_copy_kernel(const std::string& name);

// What a kernel does, read from its name (cuBLAS/cuBLASLt nvjet and CUTLASS GEMMs, cuDNN and xmma
// convolutions, fused attention, PyTorch's native kernels): what the trust checks count per step.
enum class KernelClass {
  gemm,
  attention,
  convolution,
  norm,
  softmax,
  reduce,
  elementwise,
  copy,
  other
};
KernelClass kernel_class(const std::string& name);
// The second kernel one library call launches itself: cuBLASLt's split-K reduction, an
// attention's split-KV combine or cuDNN's lean reduction.
bool finishing_kernel(const std::string& name);
const char* kernel_class_name(KernelClass k);

}  // namespace rooflens::profiler
