#include "profiler/trace/pytorch_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "analyzer/core/errors.hpp"

namespace rooflens::profiler {

using nlohmann::json;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Kineto writes ids as numbers; other writers of Chrome traces use strings ("stream 7").
uint64_t id_of(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (!s.empty() &&
        std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }) &&
        s.size() < 19)
      return std::stoull(s);
    return std::hash<std::string>{}(s) | (1ull << 63);  // never 0, never a small number
  }
  return 0;
}

uint64_t arg_id(const json& args, const char* key) {
  auto it = args.find(key);
  return it == args.end() ? 0 : id_of(*it);
}

enum class Category { kernel, memcpy, memset, runtime, driver, python, annotation, cpu_op, other };

// The aten ops whose "Input Dims" the trust checks read: attention, whose query says how many
// tokens a step ran (a prefill's sequence, decode's one new token) and with how many heads.
bool shapes_wanted(const std::string& op) {
  return op == "aten::scaled_dot_product_attention" ||
         op.rfind("aten::_scaled_dot_product_", 0) == 0 || op == "aten::_flash_attention_forward" ||
         op == "aten::_efficient_attention_forward";
}

// "Input Dims": one list of sizes per input ([] for a scalar or None); anything else is ignored.
std::vector<std::vector<int64_t>> input_dims(const json& args) {
  std::vector<std::vector<int64_t>> out;
  auto it = args.find("Input Dims");
  if (it == args.end() || !it->is_array()) return out;
  for (const json& d : *it) {
    std::vector<int64_t> dims;
    if (d.is_array())
      for (const json& n : d)
        if (n.is_number_integer()) dims.push_back(n.get<int64_t>());
    out.push_back(std::move(dims));
  }
  return out;
}

// A frame of the program's own Python ("transformers/cache_utils.py(129): update"): not PyTorch's
// (torch/...), not the interpreter's (<built-in ...>, <frozen ...>).
bool is_model_frame(const std::string& name) {
  return name.find(".py(") != std::string::npos && name.rfind("torch/", 0) != 0 &&
         name.find("/torch/") == std::string::npos && name[0] != '<';
}

Category category_of(const std::string& cat) {
  std::string c = lower(cat);
  if (c == "kernel") return Category::kernel;
  if (c == "gpu_memcpy" || c == "memcpy") return Category::memcpy;
  if (c == "gpu_memset" || c == "memset") return Category::memset;
  if (c == "cuda_runtime" || c == "runtime") return Category::runtime;
  if (c == "cuda_driver" || c == "driver") return Category::driver;
  if (c == "python_function") return Category::python;
  if (c == "user_annotation") return Category::annotation;
  if (c == "cpu_op") return Category::cpu_op;
  return Category::other;
}

}  // namespace

void PytorchTraceReader::event(json&& e) {
  ++events_;
  if (!e.is_object()) {
    ++skipped_;
    return;
  }
  auto ph = e.find("ph");
  if (ph == e.end() || !ph->is_string() || ph->get_ref<const std::string&>() != "X") return;
  auto cat = e.find("cat");
  auto name = e.find("name");
  if (cat == e.end() || !cat->is_string()) return;
  Category c = category_of(cat->get<std::string>());
  if (c == Category::other) return;
  if (c == Category::cpu_op) {  // only the shapes of a few ops; never counted as skipped
    auto a = e.find("args");
    if (name != e.end() && name->is_string() &&
        shapes_wanted(name->get_ref<const std::string&>()) && a != e.end() && a->is_object())
      if (auto dims = input_dims(*a); !dims.empty())
        trace_.op_shapes.push_back({name->get<std::string>(), std::move(dims)});
    return;
  }
  auto ts = e.find("ts");
  auto dur = e.find("dur");
  if (name == e.end() || !name->is_string() || ts == e.end() || !ts->is_number_integer() ||
      dur == e.end() || !dur->is_number_integer() || dur->get<int64_t>() < 0) {
    ++skipped_;
    return;
  }
  // Relative to baseTimeNanoseconds, added in finish(); kept signed until then.
  uint64_t start = static_cast<uint64_t>(ts->get<int64_t>()),
           end = start + static_cast<uint64_t>(dur->get<int64_t>());
  static const json kNoArgs = json::object();
  auto a = e.find("args");
  const json& args = a != e.end() && a->is_object() ? *a : kNoArgs;
  uint64_t pid = e.contains("pid") ? id_of(e["pid"]) : 0,
           tid = e.contains("tid") ? id_of(e["tid"]) : 0;
  std::string n = name->get<std::string>();
  switch (c) {
    case Category::kernel:
    case Category::memcpy:
    case Category::memset: {
      GpuActivity g;
      g.kind = c == Category::kernel   ? GpuActivity::Kind::kernel
               : c == Category::memcpy ? GpuActivity::Kind::memcpy
                                       : GpuActivity::Kind::memset;
      g.name = std::move(n);
      g.start_ns = start;
      g.end_ns = end;
      g.correlation_id = static_cast<uint32_t>(arg_id(args, "correlation"));
      g.stream = static_cast<uint32_t>(args.contains("stream") ? arg_id(args, "stream") : tid);
      g.device = static_cast<uint32_t>(args.contains("device") ? arg_id(args, "device") : pid);
      g.context = static_cast<uint32_t>(arg_id(args, "context"));
      g.bytes = arg_id(args, "bytes");
      trace_.activities.push_back(std::move(g));
      break;
    }
    case Category::runtime:
    case Category::driver:
      trace_.api_calls.push_back(
          {std::move(n), start, end, static_cast<uint32_t>(arg_id(args, "correlation")), pid, tid});
      break;
    case Category::python: {
      static const std::string kPrefix = "nn.Module: ";
      if (n.compare(0, kPrefix.size(), kPrefix) == 0)
        trace_.ranges.push_back({kModuleDomain, n.substr(kPrefix.size()), start, end, pid, tid});
      else if (is_model_frame(n))
        trace_.python_frames.push_back({"python", std::move(n), start, end, pid, tid});
      break;
    }
    case Category::annotation:
      trace_.ranges.push_back({kRecordFunctionDomain, std::move(n), start, end, pid, tid});
      break;
    case Category::cpu_op:
      break;
    case Category::other:
      break;
  }
}

void PytorchTraceReader::header(const std::string& key, json&& value) {
  if (key == "baseTimeNanoseconds" && value.is_number_integer()) {
    base_ns_ = value.get<int64_t>();
    saw_header_ = true;
  } else if (key == "deviceProperties" && value.is_array()) {
    saw_header_ = true;
    for (const json& d : value)
      if (d.is_object() && d.contains("name") && d["name"].is_string())
        trace_.devices.push_back({static_cast<uint32_t>(d.contains("id") ? id_of(d["id"]) : 0),
                                  d["name"].get<std::string>()});
  }
}

Trace PytorchTraceReader::finish(const std::string& name) {
  if (events_not_array_)
    throw InputError(fmt::format("{}: traceEvents is not an array: not a Chrome trace", name));
  auto shift = [&](uint64_t& t) {
    t += static_cast<uint64_t>(base_ns_);
  };  // modulo 2^64: relative times may be negative
  for (auto& a : trace_.activities) shift(a.start_ns), shift(a.end_ns);
  for (auto& c : trace_.api_calls) shift(c.start_ns), shift(c.end_ns);
  for (auto& r : trace_.ranges) shift(r.start_ns), shift(r.end_ns);
  for (auto& f : trace_.python_frames) shift(f.start_ns), shift(f.end_ns);
  trace_.source = "pytorch profiler";
  if (!trace_.devices.empty()) trace_.gpu = trace_.devices.front().name;
  if (skipped_ > 0)
    trace_.notes.push_back(
        fmt::format("{} trace events without a name, ts or dur were skipped", skipped_));
  return std::move(trace_);
}

}  // namespace rooflens::profiler
