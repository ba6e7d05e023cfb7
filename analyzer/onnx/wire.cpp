#include "analyzer/onnx/wire.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "analyzer/core/errors.hpp"

namespace rooflens::onnx_wire {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// Field numbers in onnx.proto.
constexpr int kModelGraph = 7;
constexpr int kGraphNode = 1, kGraphInitializer = 5;
constexpr int kNodeOpType = 4, kNodeAttribute = 5, kNodeDomain = 7;
constexpr int kAttrTensor = 5, kAttrGraph = 6, kAttrTensors = 10, kAttrGraphs = 11;
constexpr int kTensorDims = 1;

// raw_data and the typed repeated fields; string_data stays in the graph (rooflens folds no
// strings).
bool is_data_field(int number) {
  return number == 4 || number == 5 || number == 7 || number == 9 || number == 10 || number == 11;
}

// Subgraphs nest at most this deep: protobuf's own parser stops at 100 nested messages, three a
// level.
constexpr int kMaxGraphDepth = 32;

struct Field {
  int number = 0;
  WireFormatLite::WireType type = WireFormatLite::WIRETYPE_VARINT;
  size_t start = 0;    // the tag's first byte
  size_t content = 0;  // length-delimited fields: the first byte after the length
  size_t end = 0;      // one past the field
  bool delimited() const { return type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED; }
};

void put_varint(std::string& out, uint64_t v) {
  uint8_t buf[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(v, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
}

void put_message(std::string& out, int number, const std::string& content) {
  put_varint(out, WireFormatLite::MakeTag(number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  put_varint(out, content.size());
  out += content;
}

class Stripper {
 public:
  Stripper(const uint8_t* base, const std::string& name) : base_(base), name_(name) {}

  StrippedModel run(size_t size) {
    StrippedModel m;
    each(0, size, [&](const Field& f) {
      if (f.number == kModelGraph && f.delimited())
        put_message(m.bytes, f.number, graph(f, 1, true));
      else
        copy(m.bytes, f);
    });
    m.initializers = std::move(initializers_);
    m.skipped_bytes = skipped_;
    return m;
  }

 private:
  // Calls `visit` with each field of the message in [begin, end), checking the wire format as it
  // goes.
  template <typename Visit>
  void each(size_t begin, size_t end, Visit&& visit) const {
    CodedInputStream in(base_ + begin, static_cast<int>(end - begin));
    for (;;) {
      Field f;
      f.start = begin + static_cast<size_t>(in.CurrentPosition());
      uint32_t tag = in.ReadTag();
      if (tag == 0) {  // the end, or a malformed tag
        if (f.start != end) bad();
        return;
      }
      f.number = WireFormatLite::GetTagFieldNumber(tag);
      f.type = WireFormatLite::GetTagWireType(tag);
      if (f.delimited()) {
        uint64_t length = 0;
        if (!in.ReadVarint64(&length)) bad();
        f.content = begin + static_cast<size_t>(in.CurrentPosition());
        if (length > end - f.content || !in.Skip(static_cast<int>(length))) bad();
      } else if (!WireFormatLite::SkipField(&in, tag)) {
        bad();
      }
      f.end = begin + static_cast<size_t>(in.CurrentPosition());
      visit(f);
    }
  }

  [[noreturn]] void bad() const {
    throw InputError(fmt::format(
        "{}: not a valid ONNX model (protobuf parse failed: truncated or not ONNX)", name_));
  }

  void copy(std::string& out, const Field& f) const {
    out.append(reinterpret_cast<const char*>(base_ + f.start), f.end - f.start);
  }

  std::string_view text(const Field& f) const {
    return {reinterpret_cast<const char*>(base_ + f.content), f.end - f.content};
  }

  // A GraphProto's content with every initializer's payload left out.
  std::string graph(const Field& g, int depth, bool main) {
    if (depth > kMaxGraphDepth) bad();
    std::string out;
    each(g.content, g.end, [&](const Field& f) {
      if (f.number == kGraphInitializer && f.delimited()) {
        std::optional<Payload> p = tensor(f, out, true);
        if (main) initializers_.push_back(p);
      } else if (f.number == kGraphNode && f.delimited()) {
        node(f, out, depth);
      } else {
        copy(out, f);
      }
    });
    return out;
  }

  // Nodes are copied as they are unless an attribute holds a subgraph (its initializers are
  // stripped) or the node is a Constant too large to fold (its payload is stripped).
  void node(const Field& n, std::string& out, int depth) {
    std::string_view op, domain;
    bool nested = false;
    each(n.content, n.end, [&](const Field& f) {
      if (!f.delimited()) return;
      if (f.number == kNodeOpType)
        op = text(f);
      else if (f.number == kNodeDomain)
        domain = text(f);
      else if (f.number == kNodeAttribute)
        each(f.content, f.end, [&](const Field& a) {
          nested =
              nested || (a.delimited() && (a.number == kAttrTensor || a.number == kAttrTensors ||
                                           a.number == kAttrGraph || a.number == kAttrGraphs));
        });
    });
    if (!nested) return copy(out, n);
    // Tensors of other nodes stay whole: the ONNX checker sees them when a node has no rule.
    bool constant = op == "Constant" && (domain.empty() || domain == "ai.onnx");
    std::string content;
    each(n.content, n.end, [&](const Field& f) {
      if (f.number != kNodeAttribute || !f.delimited()) return copy(content, f);
      std::string attribute;
      each(f.content, f.end, [&](const Field& a) {
        if (a.delimited() && (a.number == kAttrGraph || a.number == kAttrGraphs))
          put_message(attribute, a.number, graph(a, depth + 1, false));
        else if (constant && a.delimited() && (a.number == kAttrTensor || a.number == kAttrTensors))
          tensor(a, attribute, false);
        else
          copy(attribute, a);
      });
      put_message(content, f.number, attribute);
    });
    put_message(out, n.number, content);
  }

  // Appends TensorProto field `t` to `out`, without its data when `always` or when it holds more
  // elements than are ever folded. Returns where the data lay when left out.
  std::optional<Payload> tensor(const Field& t, std::string& out, bool always) {
    Payload p{SIZE_MAX, 0, -1};
    int64_t count = 1;
    bool count_known = true;
    each(t.content, t.end, [&](const Field& f) {
      if (is_data_field(f.number)) {
        p.begin = std::min(p.begin, f.start);
        p.end = std::max(p.end, f.end);
        if (f.number == 9 && f.delimited()) p.raw_bytes = static_cast<int64_t>(f.end - f.content);
      } else if (f.number == kTensorDims) {
        count_known = count_known && multiply_dims(f, count);
      }
    });
    bool has_data = p.begin != SIZE_MAX;
    if (!has_data || (!always && (!count_known || count <= kMaxFoldedElements))) {
      copy(out, t);
      return std::nullopt;
    }
    std::string content;
    each(t.content, t.end, [&](const Field& f) {
      if (!is_data_field(f.number)) copy(content, f);
    });
    skipped_ += static_cast<int64_t>(t.end - t.content - content.size());
    put_message(out, t.number, content);
    return p;
  }

  // Multiplies `count` by the dims in field `f` (packed or not); false on a negative dim or
  // overflow.
  bool multiply_dims(const Field& f, int64_t& count) const {
    auto times = [&](uint64_t raw) {
      auto d = static_cast<int64_t>(raw);
      return d >= 0 && !__builtin_mul_overflow(count, d, &count);
    };
    if (!f.delimited()) {
      CodedInputStream in(base_ + f.start, static_cast<int>(f.end - f.start));
      uint64_t v = 0;
      in.ReadTag();
      return in.ReadVarint64(&v) && times(v);
    }
    CodedInputStream in(base_ + f.content, static_cast<int>(f.end - f.content));
    while (in.CurrentPosition() < static_cast<int>(f.end - f.content)) {
      uint64_t v = 0;
      if (!in.ReadVarint64(&v) || !times(v)) return false;
    }
    return true;
  }

  const uint8_t* base_;
  const std::string& name_;
  std::vector<std::optional<Payload>> initializers_;
  int64_t skipped_ = 0;
};

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Appends `count` elements: from raw_data (stored as Raw) when present, else from the typed
// repeated field. False when raw_data is too short.
template <typename Raw, typename Repeated, typename Convert, typename Out>
bool append_elements(const onnx::TensorProto& t, int64_t count, const Repeated& typed,
                     Convert convert, Out& out) {
  if (!t.has_raw_data()) {
    for (auto x : typed) out.push_back(convert(static_cast<Raw>(x)));
    return true;
  }
  const std::string& raw = t.raw_data();
  if (raw.size() < static_cast<size_t>(count) * sizeof(Raw)) return false;
  for (int64_t i = 0; i < count; ++i) {
    Raw v;
    std::memcpy(&v, raw.data() + i * sizeof(Raw), sizeof(Raw));
    out.push_back(convert(v));
  }
  return true;
}

}  // namespace

StrippedModel strip_payloads(const uint8_t* data, size_t size, const std::string& name) {
  return Stripper(data, name).run(size);
}

std::optional<Value> decode_tensor(const onnx::TensorProto& t, DType dtype, int64_t count) {
  if (count > kMaxFoldedElements) return std::nullopt;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  Value v;
  v.is_float = is_float(dtype);
  auto real = [](auto x) { return static_cast<double>(x); };
  auto integer = [](auto x) { return static_cast<int64_t>(x); };
  bool ok;
  switch (dtype) {
    case DType::f32:
      ok = append_elements<float>(t, count, t.float_data(), real, v.reals);
      break;
    case DType::f64:
      ok = append_elements<double>(t, count, t.double_data(), real, v.reals);
      break;
    case DType::f16:
      ok = append_elements<uint16_t>(t, count, t.int32_data(), half_to_float, v.reals);
      break;
    case DType::bf16:
      ok = append_elements<uint16_t>(t, count, t.int32_data(), bf16_to_float, v.reals);
      break;
    case DType::i64:
      ok = append_elements<int64_t>(t, count, t.int64_data(), integer, v.ints);
      break;
    case DType::i32:
      ok = append_elements<int32_t>(t, count, t.int32_data(), integer, v.ints);
      break;
    case DType::i16:
      ok = append_elements<int16_t>(t, count, t.int32_data(), integer, v.ints);
      break;
    case DType::u16:
      ok = append_elements<uint16_t>(t, count, t.int32_data(), integer, v.ints);
      break;
    case DType::i8:
      ok = append_elements<int8_t>(t, count, t.int32_data(), integer, v.ints);
      break;
    case DType::u8:
    case DType::boolean:
      ok = append_elements<uint8_t>(t, count, t.int32_data(), integer, v.ints);
      break;
    case DType::u32:
      ok = append_elements<uint32_t>(t, count, t.uint64_data(), integer, v.ints);
      break;
    case DType::u64:
      ok = append_elements<uint64_t>(t, count, t.uint64_data(), integer, v.ints);
      break;
    default:
      return std::nullopt;
  }
  if (!ok || static_cast<int64_t>(v.size()) != count) return std::nullopt;
  return v;
}

std::optional<Value> read_payload(const uint8_t* file, const Payload& p, DType dtype,
                                  int64_t count) {
  if (count > kMaxFoldedElements) return std::nullopt;
  // Unpacked repeated fields spend at most 11 bytes an element (tag and varint): a longer span
  // holds something else, and is not parsed.
  if (p.end - p.begin > static_cast<size_t>(count) * 11 + 64) return std::nullopt;
  onnx::TensorProto t;
  if (!t.ParseFromArray(file + p.begin, static_cast<int>(p.end - p.begin))) return std::nullopt;
  return decode_tensor(t, dtype, count);
}

}  // namespace rooflens::onnx_wire
