#include "analyzer/core/cost.hpp"

namespace rooflens {

std::string_view family_name(OpFamily f) {
  switch (f) {
    case OpFamily::gemm:
      return "gemm";
    case OpFamily::conv:
      return "conv";
    case OpFamily::attention:
      return "attention";
    case OpFamily::elementwise:
      return "elementwise";
    case OpFamily::norm:
      return "norm";
    case OpFamily::softmax:
      return "softmax";
    case OpFamily::reduce:
      return "reduce";
    case OpFamily::pooling:
      return "pooling";
    case OpFamily::data_movement:
      return "data_movement";
    case OpFamily::view:
      return "view";
    case OpFamily::communication:
      return "communication";
  }
  return "?";
}

}  // namespace rooflens
