#pragma once
// ONNX files at the wire level, with protobuf's own reader (CodedInputStream, WireFormatLite): the
// model's bytes are copied without the initializers' payloads, so a file of 1 GB of weights parses
// as the few hundred KB of its graph. Where each payload lies is recorded, and a payload is
// decoded later, only when a rule asks for that constant (a Reshape's shape, a Gather's indices).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/core/dtype.hpp"
#include "analyzer/core/value.hpp"

namespace onnx {
class TensorProto;
}

namespace rooflens::onnx_wire {

// The data fields of one initializer (raw_data or the typed repeated fields) as they lie in the
// file: [begin, end) spans the first to the last of them, tags included.
struct Payload {
  size_t begin = 0, end = 0;
  int64_t raw_bytes = -1;  // length of raw_data; -1 when the data is in typed fields
};

struct StrippedModel {
  std::string bytes;  // the ModelProto without the payloads below
  // One entry per initializer of the main graph, in file order (as ModelProto parses them);
  // nullopt where the initializer holds no data (external, or none at all).
  std::vector<std::optional<Payload>> initializers;
  int64_t skipped_bytes = 0;  // payload bytes left out, subgraphs and large Constant nodes included
};

// Copies `size` bytes of a ModelProto without initializer payloads (every graph, subgraphs too)
// and without the payloads of Constant nodes too large to fold (> kMaxFoldedElements), which no
// rule reads. Throws InputError naming `name` when the bytes are not well-formed protobuf.
StrippedModel strip_payloads(const uint8_t* data, size_t size, const std::string& name);

// The contents of an initializer whose payload `p` lies in `file`; nullopt when the data do not
// hold `count` elements of `dtype` or the dtype is one rooflens does not fold.
std::optional<Value> read_payload(const uint8_t* file, const Payload& p, DType dtype,
                                  int64_t count);

// Contents of a small inline tensor (a Constant node's value, a payload read back); nullopt
// when larger than kMaxFoldedElements, external, short, or of a dtype rooflens does not fold.
std::optional<Value> decode_tensor(const onnx::TensorProto& t, DType dtype, int64_t count);

}  // namespace rooflens::onnx_wire
