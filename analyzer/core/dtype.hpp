#pragma once
// Element types, numbered as ONNX's TensorProto.DataType so a loaded value maps directly.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rooflens {

enum class DType : int32_t {
  undefined = 0,
  f32 = 1,
  u8 = 2,
  i8 = 3,
  u16 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  string = 8,
  boolean = 9,
  f16 = 10,
  f64 = 11,
  u32 = 12,
  u64 = 13,
  c64 = 14,
  c128 = 15,
  bf16 = 16,
  f8e4m3fn = 17,
  f8e4m3fnuz = 18,
  f8e5m2 = 19,
  f8e5m2fnuz = 20,
  u4 = 21,
  i4 = 22,
  f4e2m1 = 23,
};

// Bits per element; 0 for undefined and string (their size is not a function of the shape).
int dtype_bits(DType t);
bool is_float(DType t);
bool is_integer(DType t);  // also bool
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_onnx(int32_t code);

// Bytes of `elements` elements, rounded up for sub-byte types; checked.
int64_t storage_bytes(DType t, int64_t elements);

// OCP microscaling (MXFP4): one e8m0 scale per this many elements along the reduction.
inline constexpr int64_t kMxfp4Block = 32;

// The precision a node computes in: picks the compute roof. tf32 stores fp32 but uses the
// tensor cores' tf32 mode.
enum class Precision { fp32, tf32, bf16, fp16, fp8, int8 };
std::string_view precision_name(Precision p);
std::optional<Precision> precision_from_name(std::string_view name);
DType storage_dtype(Precision p);
// The precision a float dtype from the file computes in when no --dtype is given.
Precision precision_of(DType t);

// How a runtime runs fp32 matrix products (--math): strict fp32; TF32 tensor cores for
// convolutions only, PyTorch's default (torch.backends.cudnn.allow_tf32 is on, matmul's is off);
// or TF32 for convolutions and matmuls, TensorRT's and ONNX Runtime's CUDA provider's default.
enum class MathMode { strict, tf32_conv, tf32 };
std::string_view math_mode_name(MathMode m);  // "strict", "tf32-conv", "tf32"
std::optional<MathMode> math_mode_from_name(std::string_view name);
// The precision an fp32 convolution or matmul computes in under `m`, on a device with TF32
// tensor cores; any other precision, or a device without TF32, stays as it is.
Precision math_precision(Precision p, bool is_conv, bool is_matmul, MathMode m,
                         bool device_has_tf32);

}  // namespace rooflens
