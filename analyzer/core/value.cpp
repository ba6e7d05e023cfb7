#include "analyzer/core/value.hpp"

namespace rooflens {

std::vector<int64_t> Value::as_ints() const {
  if (!is_float) return ints;
  std::vector<int64_t> r;
  r.reserve(reals.size());
  for (double d : reals) r.push_back(static_cast<int64_t>(d));
  return r;
}

Value Value::filled(DType dtype, int64_t count, double x) {
  if (rooflens::is_float(dtype)) return of_reals(std::vector<double>(count, x));
  return of_ints(std::vector<int64_t>(count, static_cast<int64_t>(x)));
}

size_t broadcast_source_index(const Shape& in, const Shape& out, size_t out_index) {
  size_t src = 0, stride = 1;
  size_t rem = out_index;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t axis = out.size() - 1 - k;
    size_t coord = rem % out[axis];
    rem /= out[axis];
    if (k < in.size()) {
      size_t in_axis = in.size() - 1 - k;
      if (in[in_axis] != 1) src += coord * stride;
      stride *= in[in_axis];
    }
  }
  return src;
}

}  // namespace rooflens
