#include "cli/compare_command.hpp"

#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "profiler/timeline/module_compare.hpp"
#include "profiler/timeline/run_diff.hpp"
#include "profiler/trace/trace_io.hpp"
#include "reports/atomic_file.hpp"
#include "reports/compare_report.hpp"
#include "reports/format.hpp"
#include "reports/result_json.hpp"
#include "reports/run_diff_report.hpp"
#include "reports/saved_result.hpp"
#include "reports/sink.hpp"

namespace rooflens::cli {

void add_compare_options(CLI::App& cmd, CompareArgs& a) {
  add_model_options(cmd, a.model);
  cmd.add_option("timeline", a.timeline,
                 "a `rooflens record` file or a PyTorch profiler trace (.json, .json.gz)")
      ->required();
  cmd.add_option("after", a.after,
                 "a second timeline of the same model: what changed per module between the two");
  cmd.add_option("--trace", a.trace_path,
                 "write the timeline with the prediction on its own track (Chrome/Perfetto trace)");
  cmd.add_option(
      "--steps", a.steps,
      "the timeline holds N iterations: the last N of the repeating range, or N equal runs");
  cmd.add_flag("--force", a.force,
               "compare even where the timeline looks like a run of another model, phase or device "
               "(marked in the report)");
}

ComparedRun compare_run(const CompareArgs& a, const CLI::App& cmd) {
  if (a.steps < 0) throw InputError("--steps must be positive");
  Graph inferred;
  Analysis analysis = build_analysis(a.model, cmd, &inferred);
  profiler::Trace trace = profiler::read_timeline(a.timeline);
  profiler::TimelineComparison compared = profiler::compare_timeline(
      analysis, inferred, trace, {a.timeline, a.steps, a.force, cmd.count("--device") > 0});
  analysis = profiler::with_comparison(std::move(analysis), std::move(compared));
  return {std::move(analysis), std::move(trace)};
}

namespace {

// BEFORE and AFTER, each compared with the model as `compare` does, then set side by side.
int run_diff_command(const CompareArgs& a, const CLI::App& cmd) {
  for (const char* flag : {"--csv", "--html", "--trace"})
    if (cmd.count(flag))
      throw InputError(fmt::format(
          "{} writes one comparison: with two timelines, --json writes the diff", flag));
  if (a.steps < 0) throw InputError("--steps must be positive");
  Graph inferred;
  Analysis analysis = build_analysis(a.model, cmd, &inferred);
  auto compared = [&](const std::string& path) {
    return profiler::compare_timeline(analysis, inferred, profiler::read_timeline(path),
                                      {path, a.steps, a.force, cmd.count("--device") > 0});
  };
  profiler::TimelineComparison before = compared(a.timeline), after = compared(a.after);
  nlohmann::json diff =
      reports::run_diff_json(profiler::diff_runs(before, after, a.model.by == "block"));
  const ModelArgs& m = a.model;
  reports::OutputSet outputs;
  outputs.add("--json", m.json_path, [&](std::ostream& o) {
    o << nlohmann::json{{"model", analysis.model}, {"diff", diff}}.dump(1) << '\n';
  });
  outputs.write_all();
  if (outputs.takes_stdout()) return 0;
  std::ostringstream text;
  reports::write_run_diff(text, diff, m.top, table_options(m.by, m.top, m.width).width);
  std::cout << text.str();
  return 0;
}

}  // namespace

int run_compare_command(const CompareArgs& a, const CLI::App& cmd) {
  if (!a.after.empty()) return run_diff_command(a, cmd);
  ComparedRun run = compare_run(a, cmd);
  const Analysis& analysis = run.analysis;
  const profiler::Trace& trace = run.trace;
  const profiler::TimelineComparison* comparison = analysis.comparison.get();
  nlohmann::json result = reports::result_json(analysis);
  bool by_block = a.model.by == "block";
  const ModelArgs& m = a.model;
  reports::OutputSet outputs;
  outputs.add("--json", m.json_path,
              [&](std::ostream& o) { reports::JsonSink().write(o, analysis); });
  outputs.add("--csv", m.csv_path,
              [&](std::ostream& o) { reports::write_compare_csv(o, result, by_block); });
  outputs.add("--html", m.html_path, [&](std::ostream& o) { reports::write_html(o, result); });
  outputs.add("--trace", a.trace_path,
              [&](std::ostream& o) { reports::write_compare_trace(o, trace, *comparison); });
  outputs.write_all();
  if (outputs.takes_stdout()) return 0;  // the report on stdout stays parseable
  std::ostringstream text;
  reports::write_compare_table(text, result, m.top, by_block,
                               table_options(m.by, m.top, m.width).width);
  std::cout << text.str();
  return 0;
}

}  // namespace rooflens::cli
