#pragma once
// The whole static analysis of one model on one device: per-node costs, roofline placement,
// totals, memory plan and coverage. Reports format this and never recompute it.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analysis/measurement.hpp"
#include "analyzer/core/cost.hpp"
#include "analyzer/hw/device.hpp"
#include "analyzer/hw/roofline.hpp"
#include "analyzer/ir/graph.hpp"
#include "analyzer/ir/liveness.hpp"
#include "analyzer/onnx/loader.hpp"

namespace rooflens {

struct AnalysisOptions {
  std::optional<Precision> precision;  // --dtype; nullopt: the file's dtypes
  std::string device = "H100-SXM";
  std::shared_ptr<const Device>
      calibrated;       // when set, used instead of `device` (--device-profile)
  bool strict = false;  // a node without a rule is an error
  // How fp32 convolutions and matmuls run (--math); the default is PyTorch's: TF32 convolutions.
  MathMode math = MathMode::tf32_conv;
  // What one run of the graph yields, for the throughput: by default its batch (dim 0 of the
  // first input) in samples; a transformer config's lowering says tokens.
  std::optional<double> items_per_run;
  std::string items_unit = "samples/s";
};
// The device an analysis runs against: the calibrated one when given, else the database entry.
Device resolve_device(const AnalysisOptions& options);

enum class NodeStatus {
  costed,      // a rule priced it
  folded,      // all inputs known before the run: a runtime pre-computes it, nothing on the GPU
  fused,       // runs inside another node's kernel (QDQ around an int8 kernel): costed there
  not_costed,  // no rule, or shapes unknown: listed, never counted as zero
};
std::string_view status_name(NodeStatus s);

struct NodeResult {
  int index = 0;
  std::string name;
  std::string
      module;  // the framework module it came from, where the file records it ("layer1.0.conv1")
  std::string op;  // display name, "com.microsoft.Attention" for other domains
  std::optional<OpFamily> family;
  NodeStatus status = NodeStatus::not_costed;
  std::string reason;  // why not costed
  Precision precision = Precision::fp32;
  NodeCost cost;
  int64_t params = 0;  // float weights first read by this node
  RooflinePoint roof;
  std::vector<std::string> input_shapes, output_shapes;
  std::optional<Measurement> measured;  // set by `rooflens profile`
};

struct OpTypeSummary {
  std::string op;
  int count = 0;
  double predicted_s = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
};

struct Totals {
  int64_t flops = 0, macs = 0, dense_flops = 0;
  int64_t read_act = 0, read_weight = 0, written = 0;
  int64_t params = 0;        // learnable float weights
  int64_t buffers = 0;       // float non-learnable state (BatchNorm running mean/var)
  int64_t weight_bytes = 0;  // params + buffers in the run dtype
  int64_t constants = 0;     // non-parameter initializers: integer/bool tensors, float scalars
  int64_t constant_bytes = 0;
  double predicted_s = 0;
  int64_t batch = 1;
  std::string batch_source;
  double throughput = 0;  // per second: batch / predicted_s samples (ONNX), tokens for configs
  std::string throughput_unit = "samples/s";
  // Nodes with a kernel by where their time came from: "measured table", "fitted", "roofline".
  std::map<std::string, int> prediction_sources;
};

// What the device must hold while the model runs, and whether it does: one formula for ONNX
// models (no KV cache) and transformer configs.
struct MemoryTotal {
  int64_t weight_bytes = 0, kv_cache_bytes = 0, activation_bytes = 0, total_bytes = 0,
          device_bytes = 0;
  bool fits = false;
};
MemoryTotal memory_total(int64_t weight_bytes, int64_t kv_cache_bytes, int64_t activation_bytes,
                         int64_t device_bytes);

struct Coverage {
  int total = 0, costed = 0, folded = 0, fused = 0, not_costed = 0;
  std::map<std::string, int> missing;  // op -> count
  std::string line() const;            // "412/415 nodes costed; not costed: RotaryEmbedding x3"
  // Some node runs but has no cost: every total (FLOPs, bytes, time) is a lower bound.
  bool partial() const { return not_costed > 0; }
  std::string partial_line() const;  // "partial: 412 of 415 nodes costed"
};

struct ModelInput {
  std::string name;
  DType dtype;
  Shape shape;
  bool kv_cache = false;
};

struct TransformerSummary;
struct TrainingSummary;
struct RuntimeSummary;
namespace profiler {
struct TimelineComparison;
}

struct Analysis {
  std::string model;       // the path as given
  std::string model_name;  // what a person calls it: model_display_name(model)
  std::string producer;
  int64_t opset = 0;
  std::vector<ModelInput> inputs;
  std::vector<std::pair<std::string, int64_t>> bound_dims;
  Device device;
  std::string device_requested;  // the --device name that picked `device`; empty when calibrated
  std::string dtype_label;  // "bf16 (--dtype)" or "file (float32)", with the math mode's effect
  MathMode math = MathMode::strict;
  int tf32_nodes = 0;  // fp32 nodes --math moved onto TF32 tensor cores
  std::vector<NodeResult> nodes;
  Totals totals;
  MemoryPlan memory;
  MemoryTotal memory_total;  // weights + KV cache + peak activations against the device
  std::vector<std::string> peak_tensor_names;  // matches memory.live_at_peak
  std::string peak_node_name;
  std::vector<OpTypeSummary> by_op;  // sorted by predicted time
  std::vector<std::pair<std::string, double>> by_family;
  Coverage coverage;
  std::vector<std::string> notes;
  std::shared_ptr<const TransformerSummary> transformer;           // set for transformer configs
  std::shared_ptr<const TrainingSummary> training;                 // set by --phase train
  std::shared_ptr<const RuntimeSummary> runtime;                   // set by --runtime
  std::shared_ptr<const ProfileSummary> profile;                   // set by `rooflens profile`
  std::shared_ptr<const profiler::TimelineComparison> comparison;  // set by `rooflens compare`
};

// The name a report shows for a model path, short whatever the folder: "resnet50.onnx" for
// /any/where/resnet50.onnx, "llama-2-7b/config.json" for a config (whose file name alone says
// nothing), a model folder by its own name.
std::string model_display_name(const std::string& path);

// `inferred`, when given, receives the graph with every shape bound (for re-costing).
Analysis analyze_graph(Graph graph, const AnalysisOptions& options, Graph* inferred = nullptr);
// An ONNX file loaded and analyzed; an If whose condition is not a constant, with no
// --if-branch, takes its costlier branch (analysis/onnx_file.cpp, docs/ops.md).
Analysis analyze_onnx(const std::string& path, const LoadOptions& load,
                      const AnalysisOptions& options, Graph* inferred = nullptr);

}  // namespace rooflens
