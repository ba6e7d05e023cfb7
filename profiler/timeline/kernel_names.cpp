#include "profiler/timeline/kernel_names.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <memory>

namespace rooflens::profiler {

std::string demangle_kernel(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::string short_kernel_name(const std::string& demangled) {
  std::string s = demangled;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  // Drop the parameter list: the last top-level parenthesis group.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')')
        ++depth;
      else if (s[i] == '(' && --depth == 0) {
        s = s.substr(0, i);
        break;
      }
    }
  }
  // Inside template arguments, "a::b::Name" reads as "Name".
  std::string out;
  int angle = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') ++angle;
    if (c == '>') --angle;
    if (angle > 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      while (!out.empty() &&
             (std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_'))
        out.pop_back();
      ++i;
      continue;
    }
    out += c;
  }
  return out;
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool is_copy_kernel(const std::string& name) {
  std::string l = lowercase(name);
  return l.find("copy") != std::string::npos || l.find("concat") != std::string::npos ||
         l.find("catarray") != std::string::npos || l.rfind("memcpy", 0) == 0;
}

namespace {

bool has_any(const std::string& s, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](const char* p) { return s.find(p) != std::string::npos; });
}

}  // namespace

bool finishing_kernel(const std::string& name) {
  return has_any(lowercase(name), {"splitkreduce", "lean_reduction", "combine"});
}

KernelClass kernel_class(const std::string& name) {
  std::string l = lowercase(name);
  // Inductor's Triton kernels name the ops they fused ("triton_poi_fused__scaled_dot_product_
  // cudnn_attention_add_arange..." prepares a mask): their kind is in the prefix. poi: pointwise;
  // per, red: reductions (a layer norm when they fused one); tem: a matmul template.
  if (l.rfind("triton_", 0) == 0) {
    if (l.rfind("triton_tem", 0) == 0) return KernelClass::gemm;
    if (l.rfind("triton_per", 0) == 0 || l.rfind("triton_red", 0) == 0)
      return has_any(l, {"layer_norm", "rms_norm", "batch_norm", "group_norm"}) ? KernelClass::norm
             : l.find("softmax") != std::string::npos ? KernelClass::softmax
                                                      : KernelClass::reduce;
    return KernelClass::elementwise;
  }
  // Attention before convolution: cuDNN's fused SDPA kernels are named "..._flash_fprop_...".
  // The split-KV combine and cuDNN's lean reduction finish an attention; they are not one more.
  if (has_any(l, {"sdpa", "flash_fwd", "flash_bwd", "flash_fprop", "flash_bprop", "fmha",
                  "attention", "flash_attn"}))
    return has_any(l, {"combine", "lean_reduction"}) ? KernelClass::reduce : KernelClass::attention;
  if (has_any(l, {"fprop", "dgrad", "wgrad", "convolve", "conv2d", "conv3d", "conv1d", "depthwise",
                  "winograd"}))
    return KernelClass::convolution;
  if (has_any(l, {"gemm", "gemv", "nvjet", "splitkreduce", "cublas", "cutlass", "xmma", "matmul"}))
    return KernelClass::gemm;
  if (has_any(l, {"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm",
                  "group_norm", "groupnorm"}))
    return KernelClass::norm;
  if (l.find("softmax") != std::string::npos) return KernelClass::softmax;
  if (is_copy_kernel(l) || has_any(l, {"nchwtonhwc", "nhwctonchw", "transpose"}))
    return KernelClass::copy;
  if (has_any(l, {"reduce", "reduction"})) return KernelClass::reduce;
  if (has_any(l, {"elementwise", "pointwise", "triton_poi"})) return KernelClass::elementwise;
  return KernelClass::other;
}

const char* kernel_class_name(KernelClass k) {
  switch (k) {
    case KernelClass::gemm:
      return "GEMM";
    case KernelClass::attention:
      return "attention";
    case KernelClass::convolution:
      return "convolution";
    case KernelClass::norm:
      return "norm";
    case KernelClass::softmax:
      return "softmax";
    case KernelClass::reduce:
      return "reduction";
    case KernelClass::elementwise:
      return "element-wise";
    case KernelClass::copy:
      return "copy";
    case KernelClass::other:
      return "other";
  }
  return "other";
}

}  // namespace rooflens::profiler
