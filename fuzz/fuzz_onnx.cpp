// libFuzzer target: bytes -> ONNX loader -> full analysis -> every report. A clean InputError is
// the expected outcome for bad bytes; anything else (crash, sanitizer report, other exception)
// is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "analyzer/analysis/analysis.hpp"
#include "analyzer/core/errors.hpp"
#include "reports/sink.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  rooflens::LoadOptions load;
  load.bind_unbound_dims = 3;  // reach the rules even when the model has symbolic dims
  // A few KiB of functions or a Loop's trip count can make millions of nodes; under ASan each
  // costs about 2 ms through every report, so past this the limit's error is what gets fuzzed.
  load.max_nodes = 1000;
  // Control flow spliced in: an If's else branch, a Loop unrolled three times (odd-sized inputs
  // set the flags, so both paths are explored).
  if (size % 2 == 1) {
    load.if_branch = rooflens::IfBranch::else_branch;
    load.loop_trips = 3;
  }
  try {
    rooflens::Analysis a =
        rooflens::analyze_graph(rooflens::load_onnx_bytes(bytes, "fuzz.onnx", load), {});
    std::ostringstream sink;
    rooflens::reports::TableSink(10).write(sink, a);
    rooflens::reports::TableSink(10, true).write(sink, a);
    rooflens::reports::JsonSink().write(sink, a);
    rooflens::reports::CsvSink().write(sink, a);
  } catch (const rooflens::InputError&) {
  }
  return 0;
}
