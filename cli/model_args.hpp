#pragma once
// The options every command that reads a model shares (analyze, profile): the model path, ONNX
// dims and dtype, transformer workload flags, device or device profile, and the outputs.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/transformers/config.hpp"
#include "analyzer/transformers/lowering.hpp"
#include "reports/atomic_file.hpp"
#include "reports/result_json.hpp"

namespace rooflens::cli {

struct ModelArgs {
  std::string model;
  std::vector<std::string> dims;
  std::string dtype;
  std::string math = "tf32-conv";  // --math: how fp32 convolutions and matmuls run
  std::string device = "H100-SXM";
  std::string device_profile;
  int top = 15;
  std::string json_path, csv_path, html_path, trace_path;  // trace: analyze's predicted timeline
  bool strict = false;
  std::string by = "node";
  int width = 0;  // --width; 0: the terminal's when stdout is one, else 100
  // Transformer configs only.
  std::string phase = "prefill", attention = "flash", weights, activations, kv_dtype;
  std::string part = "text";
  std::string runtime;  // --runtime eager|graphs (empty: the kernels back to back)
  // ONNX control flow.
  std::string if_branch;
  int64_t loop_trips = 0;  // multimodal wrappers: text (the language model) or vision (the tower)
  int64_t batch = 1, seq = 2048, context = 2048, prompt = 2048, gen = 256, group_size = 128, tp = 1,
          ep = 1;
  // --phase train.
  std::string precision = "bf16-mixed", optimizer = "adamw", recompute = "none";
  int64_t grad_accum = 1, zero = 0, dp = 1;
  bool sp = false;
};

void add_model_options(CLI::App& cmd, ModelArgs& args);

// --by, --top and --width as the terminal report's options: the width is --width, else the
// terminal's when stdout is one, else 100. InputError on a bad value.
reports::TableOptions table_options(const std::string& by, int top, int width);
// A command's --width and --by flags (analyze, profile, compare, report share them).
void add_layout_options(CLI::App& cmd, std::string& by, int& width);

// The roofs a command predicts with: --device-profile FILE; --device-profile spec for the spec
// sheet; else the measured profile rooflens ships for --device, when it has one; else the spec
// sheet (nullptr). --device and a profile file exclude each other.
std::shared_ptr<const Device> device_from_flags(const std::string& device,
                                                const std::string& device_profile,
                                                const CLI::App& cmd);

// Analyzes the model or config. `inferred` receives the shape-bound graph; `calibrated`, when
// set, replaces --device and --device-profile (profile measures its own GPU).
Analysis build_analysis(const ModelArgs& args, const CLI::App& cmd, Graph* inferred = nullptr,
                        std::shared_ptr<const Device> calibrated = nullptr);

// The weights' dtype (--weights, else the config's quantization_config, else its dtype), the
// activations' and the KV cache's, with the source named in `l.weights_source`.
void choose_dtypes(const ModelArgs& args, const TransformerConfig& c, LoweringOptions& l);

// --dtype as a precision (nullopt when not given); InputError on a bad name.
std::optional<Precision> forced_precision(const ModelArgs& args);

// Writes --json/--csv/--html/--trace (atomically, "-" to stdout) and the command's own `outputs`,
// every one rendered from the one result JSON, and prints the terminal table unless a report
// went to standard output.
void write_outputs(const ModelArgs& args, const Analysis& a, reports::OutputSet outputs = {});
void write_outputs(const ModelArgs& args, const nlohmann::json& result,
                   reports::OutputSet outputs = {});

}  // namespace rooflens::cli
