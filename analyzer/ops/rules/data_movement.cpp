// Data movement: views (Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout: zero bytes),
// copies (Transpose, Concat, Split, Slice, Gather*, Scatter*, Expand, Tile, Pad, Resize, ...)
// and the shape arithmetic exporters emit (Shape, Size, Constant, ConstantOfShape, Range),
// whose values are folded so later shapes become concrete.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analyzer/core/checked.hpp"
#include "analyzer/core/formulas.hpp"
#include "analyzer/ops/rules/common.hpp"

namespace rooflens {
namespace {

using rules::ints_of;

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// out[e] = in[source(e)] for a small known value; nullopt when unknown or too large.
template <typename F>
std::optional<Value> gather_value(const Value* in, int64_t out_count, F source) {
  if (!in || out_count > kMaxFoldedElements) return std::nullopt;
  Value v;
  v.is_float = in->is_float;
  for (int64_t e = 0; e < out_count; ++e) {
    int64_t s = source(e);
    if (in->is_float)
      v.reals.push_back(in->reals.at(s));
    else
      v.ints.push_back(in->ints.at(s));
  }
  return v;
}

std::optional<Value> copy_value(const InferContext& ctx, size_t i) {
  const Value* v = ctx.value(i);
  return v ? std::optional<Value>(*v) : std::nullopt;
}

NodeCost no_cost(const CostContext&) {
  return NodeCost{};
}
NodeCost copy_cost(const CostContext& ctx) {
  return rules::data_inputs_cost(ctx, {0});
}

// ---- views ----------------------------------------------------------------------------------

void infer_reshape(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> target = ctx.node().opset < 5 && !ctx.has_input(1)
                                    ? ctx.node().attr_ints("shape").value_or(std::vector<int64_t>{})
                                    : ints_of(ctx, 1, "target shape");
  bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  Shape out;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size()) ctx.fail("a 0 in the target shape copies a dim the input lacks");
      d = in[i];
    }
    if (d == -1) {
      if (infer_at >= 0) ctx.fail("more than one -1 in the target shape");
      infer_at = static_cast<int>(i);
      out.push_back(1);
      continue;
    }
    if (d < 0) ctx.fail(fmt::format("target shape has dim {}", d));
    out.push_back(d);
    known = checked_mul(known, d);
  }
  int64_t total = checked_product(in);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      ctx.fail(fmt::format("cannot reshape {} into {}", shape_string(in), fmt::join(target, ",")));
    out[infer_at] = total / known;
  } else if (known != total) {
    ctx.fail(fmt::format("cannot reshape {} ({} elements) into {}", shape_string(in), total,
                         shape_string(out)));
  }
  ctx.set_output(0, ctx.dtype(0), out, copy_value(ctx, 0));
}

void infer_squeeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  auto axes = rules::axes_from(ctx, "axes", 1);
  int64_t rank = static_cast<int64_t>(in.size());
  Shape out;
  std::vector<int64_t> norm;
  if (axes)
    for (int64_t a : *axes) norm.push_back(ctx.axis(a, rank));
  for (int64_t i = 0; i < rank; ++i) {
    bool listed = std::find(norm.begin(), norm.end(), i) != norm.end();
    if (listed && in[i] != 1) ctx.fail(fmt::format("cannot squeeze axis {} of size {}", i, in[i]));
    if (axes ? !listed : in[i] != 1) out.push_back(in[i]);
  }
  ctx.set_output(0, ctx.dtype(0), out, copy_value(ctx, 0));
}

void infer_unsqueeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  auto axes = rules::axes_from(ctx, "axes", 1);
  if (!axes) ctx.fail("Unsqueeze needs axes");
  int64_t rank = static_cast<int64_t>(in.size() + axes->size());
  std::vector<int64_t> norm;
  for (int64_t a : *axes) norm.push_back(ctx.axis(a, rank));
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(norm.begin(), norm.end(), i) != norm.end())
      out.push_back(1);
    else if (j < in.size())
      out.push_back(in[j++]);
    else
      ctx.fail("repeated unsqueeze axes");
  }
  ctx.set_output(0, ctx.dtype(0), out, copy_value(ctx, 0));
}

void infer_flatten(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) ctx.fail(fmt::format("axis {} is out of range", axis));
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) = checked_mul(i < axis ? a : b, in[i]);
  ctx.set_output(0, ctx.dtype(0), Shape{a, b}, copy_value(ctx, 0));
}

void infer_identity(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0), copy_value(ctx, 0));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::boolean, ctx.shape(0));  // Dropout mask
}

// ---- shape arithmetic ------------------------------------------------------------------------

void infer_shape(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = ctx.node().attr_int("start", 0), end = ctx.node().attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> v(in.begin() + start, in.begin() + end);
  ctx.set_output(0, DType::i64, Shape{static_cast<int64_t>(v.size())}, Value::of_ints(v));
}

void infer_size(InferContext& ctx) {
  ctx.set_output(0, DType::i64, Shape{}, Value::of_ints({checked_product(ctx.shape(0))}));
}

void infer_constant(InferContext& ctx) {
  using K = Attribute::Kind;
  const Node& n = ctx.node();
  if (const Attribute* a = n.typed_attr("value", K::tensor)) {
    ctx.set_output(0, a->tensor_dtype, a->tensor_dims, a->tensor_value);
  } else if (const Attribute* f = n.typed_attr("value_float", K::f)) {
    ctx.set_output(0, DType::f32, Shape{}, Value::of_reals({f->f}));
  } else if (const Attribute* fs = n.typed_attr("value_floats", K::floats)) {
    ctx.set_output(0, DType::f32, Shape{static_cast<int64_t>(fs->floats.size())},
                   Value::of_reals(fs->floats));
  } else if (const Attribute* i = n.typed_attr("value_int", K::i)) {
    ctx.set_output(0, DType::i64, Shape{}, Value::of_ints({i->i}));
  } else if (const Attribute* is = n.typed_attr("value_ints", K::ints)) {
    ctx.set_output(0, DType::i64, Shape{static_cast<int64_t>(is->ints.size())},
                   Value::of_ints(is->ints));
  } else {
    ctx.fail("Constant has no value attribute rooflens can read");
  }
}

void infer_constant_of_shape(InferContext& ctx) {
  Shape s = ints_of(ctx, 0, "shape");
  DType dt = DType::f32;
  double fill = 0;
  if (const Attribute* a = ctx.node().typed_attr("value", Attribute::Kind::tensor)) {
    dt = a->tensor_dtype;
    if (a->tensor_value && a->tensor_value->size() == 1) fill = a->tensor_value->real_at(0);
  }
  int64_t count = checked_product(s, "ConstantOfShape output");
  std::optional<Value> v;
  if (count <= kMaxFoldedElements) v = Value::filled(dt, count, fill);
  ctx.set_output(0, dt, s, std::move(v));
}

void infer_range(InferContext& ctx) {
  const Value &s = ctx.required_value(0, "start"), &l = ctx.required_value(1, "limit"),
              &d = ctx.required_value(2, "delta");
  if (s.size() != 1 || l.size() != 1 || d.size() != 1) ctx.fail("Range takes scalars");
  double start = s.real_at(0), limit = l.real_at(0), delta = d.real_at(0);
  if (delta == 0) ctx.fail("Range delta is 0");
  double n = std::ceil((limit - start) / delta);
  if (!(n < 9.0e18)) ctx.fail("Range has an absurd number of elements");
  int64_t count = std::max<int64_t>(static_cast<int64_t>(n), 0);
  std::optional<Value> v;
  if (count <= kMaxFoldedElements) {
    std::vector<double> xs;
    for (int64_t i = 0; i < count; ++i) xs.push_back(start + i * delta);
    v = is_float(ctx.dtype(0)) ? Value::of_reals(xs)
                               : Value::of_ints(std::vector<int64_t>(xs.begin(), xs.end()));
  }
  ctx.set_output(0, ctx.dtype(0), Shape{count}, std::move(v));
}

// ---- copies ----------------------------------------------------------------------------------

void infer_transpose(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  size_t rank = in.size();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm").value_or(std::vector<int64_t>{});
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank) ctx.fail("perm does not match the input rank");
  Shape out;
  for (int64_t p : perm) out.push_back(in.at(ctx.axis(p, static_cast<int64_t>(rank))));
  auto in_st = strides_of(in), out_st = strides_of(out);
  auto v = gather_value(ctx.value(0), checked_product(out), [&](int64_t e) {
    int64_t src = 0;
    for (size_t k = 0; k < rank; ++k) src += ((e / out_st[k]) % out[k]) * in_st[perm[k]];
    return src;
  });
  ctx.set_output(0, ctx.dtype(0), out, std::move(v));
}

void infer_concat(InferContext& ctx) {
  auto shapes = rules::input_shapes(ctx);
  if (shapes.empty()) ctx.fail("Concat has no inputs");
  int64_t rank = static_cast<int64_t>(shapes[0].size());
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), rank);
  Shape out = shapes[0];
  out[axis] = 0;
  for (const Shape& s : shapes) {
    if (static_cast<int64_t>(s.size()) != rank) ctx.fail("Concat inputs differ in rank");
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis && s[i] != out[i]) ctx.fail(fmt::format("Concat inputs differ in dim {}", i));
    out[axis] = checked_add(out[axis], s[axis]);
  }
  // Values: walk the output, pick the input that covers each position along `axis`.
  std::optional<Value> v;
  bool all_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && !ctx.value(i)) all_known = false;
  int64_t count = checked_product(out);
  if (all_known && count <= kMaxFoldedElements) {
    Value r;
    r.is_float = ctx.value(0)->is_float;
    auto out_st = strides_of(out);
    for (int64_t e = 0; e < count; ++e) {
      int64_t along = (e / out_st[axis]) % out[axis];
      size_t k = 0;
      for (; k < ctx.num_inputs(); ++k) {
        if (!ctx.has_input(k)) continue;
        if (along < ctx.shape(k)[axis]) break;
        along -= ctx.shape(k)[axis];
      }
      const Shape& s = ctx.shape(k);
      auto st = strides_of(s);
      int64_t src = 0;
      for (int64_t a = 0; a < rank; ++a)
        src += (a == axis ? along : (e / out_st[a]) % out[a]) * st[a];
      if (r.is_float)
        r.reals.push_back(ctx.value(k)->real_at(src));
      else
        r.ints.push_back(ctx.value(k)->int_at(src));
    }
    v = std::move(r);
  }
  ctx.set_output(0, ctx.dtype(0), out, std::move(v));
}

void infer_split(InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape& in = ctx.shape(0);
  int64_t axis = ctx.axis(n.attr_int("axis", 0), static_cast<int64_t>(in.size()));
  std::vector<int64_t> parts;
  if (ctx.has_input(1))
    parts = ints_of(ctx, 1, "split");
  else if (auto s = n.attr_ints("split"))
    parts = *s;
  size_t outputs = ctx.num_outputs();
  if (parts.empty()) {
    int64_t k = n.attr_int("num_outputs", static_cast<int64_t>(outputs));
    if (k <= 0) ctx.fail("Split into no outputs");
    int64_t chunk = ceil_div(in[axis], k);
    for (int64_t i = 0; i < k; ++i)
      parts.push_back(std::max<int64_t>(0, std::min(chunk, in[axis] - i * chunk)));
  }
  int64_t total = 0;
  for (int64_t p : parts) total = checked_add(total, p);
  if (total != in[axis] || parts.size() != outputs)
    ctx.fail(fmt::format("split sizes do not add up to {}", in[axis]));
  int64_t offset = 0;
  for (size_t o = 0; o < outputs; ++o) {
    Shape s = in;
    s[axis] = parts[o];
    std::optional<Value> v;
    if (in.size() == 1) {
      int64_t off = offset;
      v = gather_value(ctx.value(0), parts[o], [off](int64_t e) { return off + e; });
    }
    ctx.set_output(o, ctx.dtype(0), s, std::move(v));
    offset += parts[o];
  }
}

struct SliceSpec {
  Shape out;
  std::vector<int64_t> start, step;  // per input axis
};

SliceSpec slice_spec(const InferContext& ctx) {
  const Node& n = ctx.node();
  const Shape& in = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = n.attr_ints("starts").value_or(std::vector<int64_t>{});
    ends = n.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = n.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = ints_of(ctx, 1, "starts");
    ends = ints_of(ctx, 2, "ends");
    if (ctx.has_input(3)) axes = ints_of(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = ints_of(ctx, 4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  SliceSpec s{in, std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1)};
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = ctx.axis(axes[i], rank), dim = in[a], step = steps[i];
    if (step == 0) ctx.fail("slice step is 0");
    // ONNX: negative indices count from the end, then clamp (step > 0: [0, dim];
    // step < 0: start in [0, dim-1], end in [-1, dim-1]).
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      s.out[a] = e > b ? ceil_div(e - b, step) : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      s.out[a] = b > e ? ceil_div(b - e, -step) : 0;
    }
    s.start[a] = b;
    s.step[a] = step;
  }
  return s;
}

void infer_slice(InferContext& ctx) {
  SliceSpec s = slice_spec(ctx);
  const Shape& in = ctx.shape(0);
  auto in_st = strides_of(in), out_st = strides_of(s.out);
  auto v = gather_value(ctx.value(0), checked_product(s.out), [&](int64_t e) {
    int64_t src = 0;
    for (size_t k = 0; k < in.size(); ++k)
      src += (s.start[k] + ((e / out_st[k]) % s.out[k]) * s.step[k]) * in_st[k];
    return src;
  });
  ctx.set_output(0, ctx.dtype(0), s.out, std::move(v));
}

// Only the slice is read, not the whole input.
NodeCost cost_slice(const CostContext& ctx) {
  NodeCost c;
  ctx.read_input_part(c, 0, ctx.out_elements(0));
  ctx.write_all_outputs(c);
  c.parallel_tiles = elementwise_tiles(ctx.out_elements(0));
  c.kernel.memory = MemoryKernel::copy;
  return c;
}

void infer_gather(InferContext& ctx) {
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1);
  int64_t rank = static_cast<int64_t>(data.size());
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", 0), rank);
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  std::optional<Value> v;
  if (const Value* iv = ctx.value(1)) {
    int64_t inner = checked_product(Shape(data.begin() + axis + 1, data.end()));
    int64_t nidx = static_cast<int64_t>(iv->size());
    for (size_t k = 0; k < iv->size(); ++k) {
      int64_t i = iv->int_at(k);
      if (i < -data[axis] || i >= data[axis])
        ctx.fail(fmt::format("index {} is out of range for dim {}", i, data[axis]));
    }
    v = gather_value(ctx.value(0), checked_product(out), [&](int64_t e) {
      int64_t in_inner = e % inner, rest = e / inner;
      int64_t k = rest % nidx, outer = rest / nidx;
      int64_t i = iv->int_at(k);
      if (i < 0) i += data[axis];
      return (outer * data[axis] + i) * inner + in_inner;
    });
  }
  ctx.set_output(0, ctx.dtype(0), out, std::move(v));
}

// Embedding-style lookups read the indices and only the gathered rows.
NodeCost cost_gather(const CostContext& ctx) {
  NodeCost c;
  ctx.read_input_part(c, 0, std::min(ctx.out_elements(0), ctx.in_elements(0)));
  ctx.read_input(c, 1);
  ctx.write_all_outputs(c);
  c.parallel_tiles = elementwise_tiles(ctx.out_elements(0));
  c.kernel.memory = MemoryKernel::gather;
  return c;
}

void infer_gather_nd(InferContext& ctx) {
  const Shape &data = ctx.shape(0), &idx = ctx.shape(1);
  int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (idx.empty()) ctx.fail("GatherND indices need rank >= 1");
  int64_t last = idx.back();
  if (b + last > static_cast<int64_t>(data.size()))
    ctx.fail("GatherND index depth exceeds the data rank");
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + last, data.end());
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_expand(InferContext& ctx) {
  Shape target = ints_of(ctx, 1, "shape");
  Shape out = rules::broadcast(ctx, {ctx.shape(0), target});
  const Shape& in = ctx.shape(0);
  auto v = gather_value(ctx.value(0), checked_product(out),
                        [&](int64_t e) { return broadcast_source_index(in, out, e); });
  ctx.set_output(0, ctx.dtype(0), out, std::move(v));
}

void infer_tile(InferContext& ctx) {
  Shape in = ctx.shape(0);
  auto reps = ints_of(ctx, 1, "repeats");
  if (reps.size() != in.size()) ctx.fail("repeats does not match the input rank");
  for (size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0) ctx.fail("negative repeat");
    in[i] = checked_mul(in[i], reps[i]);
  }
  ctx.set_output(0, ctx.dtype(0), in);
}

void infer_pad(InferContext& ctx) {
  Shape s = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> pads = ctx.has_input(1)
                                  ? ints_of(ctx, 1, "pads")
                                  : ctx.node().attr_ints("pads").value_or(std::vector<int64_t>{});
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    for (int64_t a : ints_of(ctx, 3, "axes")) axes.push_back(ctx.axis(a, rank));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) ctx.fail("pads has the wrong length");
  for (size_t i = 0; i < axes.size(); ++i) {
    s[axes[i]] += pads[i] + pads[i + axes.size()];
    if (s[axes[i]] < 0) ctx.fail("padding removes more than the dim holds");
  }
  ctx.set_output(0, ctx.dtype(0), s);
}

void infer_resize(InferContext& ctx) {
  const Node& n = ctx.node();
  Shape in = ctx.shape(0);
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (auto a = n.attr_ints("axes"))
    for (int64_t x : *a) axes.push_back(ctx.axis(x, rank));
  else
    for (int64_t x = 0; x < rank; ++x) axes.push_back(x);
  Shape out = in;
  // Upsample-7 and Resize: scales attr (7), input 1 (Upsample-9, Resize-10), input 2 (Resize-11+);
  // sizes input 3.
  size_t scales_at = n.op_type == "Upsample" || n.opset < 11 ? 1 : 2;
  if (n.opset >= 11 && n.op_type == "Resize" && ctx.has_input(3) && !ctx.shape(3).empty() &&
      ctx.shape(3)[0] > 0) {
    auto sizes = ints_of(ctx, 3, "sizes");
    if (sizes.size() != axes.size()) ctx.fail("sizes does not match the resized axes");
    for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = sizes[i];
  } else {
    std::vector<double> scales;
    if (ctx.has_input(scales_at)) {
      const Value& v = ctx.required_value(scales_at, "scales");
      for (size_t i = 0; i < v.size(); ++i) scales.push_back(v.real_at(i));
    } else if (const Attribute* a = n.typed_attr("scales", Attribute::Kind::floats)) {
      scales = a->floats;
    }
    if (scales.size() != axes.size()) ctx.fail("scales does not match the resized axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0) || scales[i] > 1e6) ctx.fail("resize scale must be positive and finite");
      double d = std::floor(static_cast<double>(in[axes[i]]) * scales[i]);
      if (d > 4.0e18) ctx.fail("resized dim overflows 64 bits");
      out[axes[i]] = static_cast<int64_t>(d);
    }
  }
  ctx.set_output(0, ctx.dtype(0), out);
}

// Interpolating over d resized axes weights 2^d (linear) or 4^d (cubic) neighbours: one
// multiply each and one fewer add. Nearest does no arithmetic.
NodeCost cost_resize(const CostContext& ctx) {
  const Shape &in = ctx.in_shape(0), &out = ctx.out_shape(0);
  int64_t d = 0;
  for (size_t i = 0; i < in.size(); ++i) d += in[i] != out[i];
  std::string mode = ctx.node().attr_string("mode", "nearest");
  int64_t taps = mode == "linear" || mode == "bilinear" ? (1LL << d)
                 : mode == "cubic"                      ? (1LL << (2 * d))
                                                        : 0;
  NodeCost c = rules::data_inputs_cost(ctx, {0});
  c.flops = taps ? checked_mul(ctx.out_elements(0), 2 * taps - 1) : 0;
  return c;
}

void infer_scatter(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

NodeCost cost_scatter(const CostContext& ctx) {
  // Out of place: copy the data, then write the updates at the indices.
  NodeCost c = rules::data_inputs_cost(ctx, {0, 1, 2});
  c.written = checked_add(c.written, ctx.bytes_of(ctx.input(2)));
  return c;
}

void infer_depth_space(InferContext& ctx) {
  Shape s = ctx.shape(0);
  if (s.size() != 4) ctx.fail("input must be 4-D");
  int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) ctx.fail("blocksize must be positive");
  if (ctx.node().op_type == "DepthToSpace") {
    if (s[1] % (b * b)) ctx.fail("channels not divisible by blocksize^2");
    s = {s[0], s[1] / (b * b), s[2] * b, s[3] * b};
  } else {
    if (s[2] % b || s[3] % b) ctx.fail("spatial dims not divisible by blocksize");
    s = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
  }
  ctx.set_output(0, ctx.dtype(0), s);
}

void infer_one_hot(InferContext& ctx) {
  Shape s = ctx.shape(0);
  auto depth = ctx.required_value(1, "depth");
  if (depth.size() != 1) ctx.fail("OneHot depth must hold one value");
  int64_t rank = static_cast<int64_t>(s.size()) + 1;
  int64_t axis = ctx.axis(ctx.node().attr_int("axis", -1), rank);
  int64_t d = depth.int_at(0);
  if (d <= 0) ctx.fail("depth must be positive");
  s.insert(s.begin() + axis, d);
  ctx.set_output(0, ctx.dtype(2), s);
}

void infer_nonzero(InferContext& ctx) {
  ctx.shape(0);
  throw NotInferable{"NonZero's output size depends on the data"};
}

void same_shape(InferContext& ctx) {
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

}  // namespace

void register_data_movement_rules(RuleRegistry& r) {
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, void (*)(InferContext&)>>{
           {"Reshape", infer_reshape},
           {"Squeeze", infer_squeeze},
           {"Unsqueeze", infer_unsqueeze},
           {"Flatten", infer_flatten},
           {"Identity", infer_identity},
           {"Dropout", infer_identity}})
    r.add({"", name, OpFamily::view, fn, no_cost});
  r.add({"", "Shape", OpFamily::data_movement, infer_shape, no_cost});
  r.add({"", "Size", OpFamily::data_movement, infer_size, no_cost});
  r.add({"", "Constant", OpFamily::data_movement, infer_constant, no_cost});
  r.add({"", "ConstantOfShape", OpFamily::data_movement, infer_constant_of_shape,
         [](const CostContext& c) { return rules::data_inputs_cost(c, {}); }});
  r.add({"", "Range", OpFamily::data_movement, infer_range,
         [](const CostContext& c) { return rules::data_inputs_cost(c, {}); }});
  r.add({"", "Transpose", OpFamily::data_movement, infer_transpose, [](const CostContext& ctx) {
           NodeCost c = copy_cost(ctx);
           // Keeping the innermost axis in place, it moves whole contiguous rows: a copy.
           auto perm = ctx.node().attr_ints("perm");
           int64_t rank = static_cast<int64_t>(ctx.in_shape(0).size());
           bool rows_stay = perm ? !perm->empty() && perm->back() == rank - 1 : rank <= 1;
           c.kernel.memory = rows_stay ? MemoryKernel::copy : MemoryKernel::transpose;
           return c;
         }});
  r.add({"", "Concat", OpFamily::data_movement, infer_concat, [](const CostContext& c) {
           NodeCost k;
           c.read_all_inputs(k);
           c.write_all_outputs(k);
           k.parallel_tiles = elementwise_tiles(c.out_elements(0));
           k.kernel.memory = MemoryKernel::copy;
           return k;
         }});
  r.add({"", "Split", OpFamily::data_movement, infer_split, [](const CostContext& ctx) {
           NodeCost c = copy_cost(ctx);
           c.instructions = static_cast<double>(ctx.in_elements(0)) * kStridedSplitInstructions;
           return c;
         }});
  r.add({"", "Slice", OpFamily::data_movement, infer_slice, cost_slice});
  r.add({"", "Gather", OpFamily::data_movement, infer_gather, cost_gather});
  r.add({"", "GatherElements", OpFamily::data_movement,
         [](InferContext& c) { c.set_output(0, c.dtype(0), c.shape(1)); }, cost_gather});
  r.add({"", "GatherND", OpFamily::data_movement, infer_gather_nd, cost_gather});
  r.add({"", "ScatterND", OpFamily::data_movement, infer_scatter, cost_scatter});
  r.add({"", "ScatterElements", OpFamily::data_movement, infer_scatter, cost_scatter});
  r.add({"", "Expand", OpFamily::data_movement, infer_expand, copy_cost});
  r.add({"", "Tile", OpFamily::data_movement, infer_tile, copy_cost});
  r.add({"", "Pad", OpFamily::data_movement, infer_pad, copy_cost});
  r.add({"", "Resize", OpFamily::data_movement, infer_resize, cost_resize});
  r.add({"", "Upsample", OpFamily::data_movement, infer_resize, cost_resize});
  r.add({"", "DepthToSpace", OpFamily::data_movement, infer_depth_space, copy_cost});
  r.add({"", "SpaceToDepth", OpFamily::data_movement, infer_depth_space, copy_cost});
  r.add({"", "Trilu", OpFamily::data_movement, same_shape, copy_cost});
  r.add({"", "OneHot", OpFamily::data_movement, infer_one_hot,
         [](const CostContext& c) { return rules::data_inputs_cost(c, {0}); }});
  r.add({"", "NonZero", OpFamily::data_movement, infer_nonzero, copy_cost});
}

}  // namespace rooflens
