#include "analyzer/core/dtype.hpp"

#include "analyzer/core/checked.hpp"

namespace rooflens {

void throw_overflow(std::string_view what) {
  throw InputError(std::string(what) + " overflows 64 bits; the dims are absurd");
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
    case DType::u64:
    case DType::c64:
      return 64;
    case DType::c128:
      return 128;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 32;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 16;
    case DType::u8:
    case DType::i8:
    case DType::boolean:
    case DType::f8e4m3fn:
    case DType::f8e4m3fnuz:
    case DType::f8e5m2:
    case DType::f8e5m2fnuz:
      return 8;
    case DType::u4:
    case DType::i4:
    case DType::f4e2m1:
      return 4;
    case DType::undefined:
    case DType::string:
      return 0;
  }
  return 0;
}

bool is_float(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f64:
    case DType::f8e4m3fn:
    case DType::f8e4m3fnuz:
    case DType::f8e5m2:
    case DType::f8e5m2fnuz:
    case DType::f4e2m1:
      return true;
    default:
      return false;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::u8:
    case DType::i8:
    case DType::u16:
    case DType::i16:
    case DType::i32:
    case DType::i64:
    case DType::u32:
    case DType::u64:
    case DType::boolean:
    case DType::u4:
    case DType::i4:
      return true;
    default:
      return false;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::undefined:
      return "undefined";
    case DType::f32:
      return "float32";
    case DType::u8:
      return "uint8";
    case DType::i8:
      return "int8";
    case DType::u16:
      return "uint16";
    case DType::i16:
      return "int16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::string:
      return "string";
    case DType::boolean:
      return "bool";
    case DType::f16:
      return "float16";
    case DType::f64:
      return "float64";
    case DType::u32:
      return "uint32";
    case DType::u64:
      return "uint64";
    case DType::c64:
      return "complex64";
    case DType::c128:
      return "complex128";
    case DType::bf16:
      return "bfloat16";
    case DType::f8e4m3fn:
      return "float8e4m3fn";
    case DType::f8e4m3fnuz:
      return "float8e4m3fnuz";
    case DType::f8e5m2:
      return "float8e5m2";
    case DType::f8e5m2fnuz:
      return "float8e5m2fnuz";
    case DType::u4:
      return "uint4";
    case DType::i4:
      return "int4";
    case DType::f4e2m1:
      return "float4e2m1";
  }
  return "undefined";
}

std::optional<DType> dtype_from_onnx(int32_t code) {
  if (code < 0 || code > 23) return std::nullopt;
  return static_cast<DType>(code);
}

int64_t storage_bytes(DType t, int64_t elements) {
  int64_t bits = checked_mul(elements, dtype_bits(t), "tensor size in bits");
  return (bits + 7) / 8;
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    case Precision::fp8:
      return "fp8";
    case Precision::int8:
      return "int8";
  }
  return "fp32";
}

std::optional<Precision> precision_from_name(std::string_view n) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16,
                      Precision::fp8, Precision::int8})
    if (precision_name(p) == n) return p;
  return std::nullopt;
}

DType storage_dtype(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32:
      return DType::f32;
    case Precision::bf16:
      return DType::bf16;
    case Precision::fp16:
      return DType::f16;
    case Precision::fp8:
      return DType::f8e4m3fn;
    case Precision::int8:
      return DType::i8;
  }
  return DType::f32;
}

Precision precision_of(DType t) {
  switch (t) {
    case DType::f16:
      return Precision::fp16;
    case DType::bf16:
      return Precision::bf16;
    case DType::f8e4m3fn:
    case DType::f8e4m3fnuz:
    case DType::f8e5m2:
    case DType::f8e5m2fnuz:
      return Precision::fp8;
    case DType::i8:
    case DType::u8:
      return Precision::int8;
    default:
      return Precision::fp32;
  }
}

std::string_view math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::strict:
      return "strict";
    case MathMode::tf32_conv:
      return "tf32-conv";
    case MathMode::tf32:
      return "tf32";
  }
  return "strict";
}

std::optional<MathMode> math_mode_from_name(std::string_view name) {
  for (MathMode m : {MathMode::strict, MathMode::tf32_conv, MathMode::tf32})
    if (math_mode_name(m) == name) return m;
  return std::nullopt;
}

Precision math_precision(Precision p, bool is_conv, bool is_matmul, MathMode m,
                         bool device_has_tf32) {
  if (p != Precision::fp32 || !device_has_tf32) return p;
  bool tf32 = (is_conv && m != MathMode::strict) || (is_matmul && m == MathMode::tf32);
  return tf32 ? Precision::tf32 : p;
}

}  // namespace rooflens
