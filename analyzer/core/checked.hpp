#pragma once
// Checked 64-bit arithmetic for products of dims and cost totals: an overflow means the input
// describes something absurd, so it is an InputError, never a wrapped number.
#include <cstdint>
#include <span>
#include <string_view>

#include "analyzer/core/errors.hpp"

namespace rooflens {

[[noreturn]] void throw_overflow(std::string_view what);

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what = "value") {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what = "value") {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

inline int64_t checked_product(std::span<const int64_t> dims, std::string_view what = "shape") {
  int64_t r = 1;
  for (int64_t d : dims) r = checked_mul(r, d, what);
  return r;
}

// For a >= 0, b > 0; safe for any b (no a + b overflow).
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a - 1) / b + 1;
}

}  // namespace rooflens
