#pragma once
// Small tensors whose contents are known at analysis time (shape arithmetic, scalar constants).
// Exporters compute shapes through long Shape/Gather/Concat chains; folding them needs values.
#include <cstdint>
#include <vector>

#include "analyzer/core/dtype.hpp"

namespace rooflens {

using Shape = std::vector<int64_t>;

// Values are kept only for tensors up to this many elements; larger ones stay "unknown value".
inline constexpr int64_t kMaxFoldedElements = 4096;

struct Value {
  bool is_float = false;
  std::vector<int64_t> ints;  // when !is_float
  std::vector<double> reals;  // when is_float

  size_t size() const { return is_float ? reals.size() : ints.size(); }
  int64_t int_at(size_t i) const { return is_float ? static_cast<int64_t>(reals[i]) : ints[i]; }
  double real_at(size_t i) const { return is_float ? reals[i] : static_cast<double>(ints[i]); }
  std::vector<int64_t> as_ints() const;

  static Value of_ints(std::vector<int64_t> v) { return Value{false, std::move(v), {}}; }
  static Value of_reals(std::vector<double> v) { return Value{true, {}, std::move(v)}; }
  // A value of `dtype` (float or integer kind follows the dtype).
  static Value filled(DType dtype, int64_t count, double x);
};

// Element of `v` for output index `out_index` of a broadcast over `out_shape`.
size_t broadcast_source_index(const Shape& in_shape, const Shape& out_shape, size_t out_index);

}  // namespace rooflens
