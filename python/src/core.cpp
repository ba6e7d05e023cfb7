// rooflens._core: the C++ analyzer as a Python extension. Every call runs the code the command
// line runs (cli/): analyze and compare parse the same flags and return the same result JSON
// (docs/json.md) the CLI's --json writes; the Python side builds its Result from that document.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/core/errors.hpp"
#include "analyzer/hw/device.hpp"
#include "cli/compare_command.hpp"
#include "cli/entry.hpp"
#include "cli/model_args.hpp"
#include "cli/serve_command.hpp"
#include "reports/compare_report.hpp"
#include "reports/result_json.hpp"
#include "reports/saved_result.hpp"

namespace nb = nanobind;
using namespace rooflens;

namespace {

// Flags as argv for CLI11 (argv[0] is the program's name, as a shell gives it).
struct Argv {
  explicit Argv(const std::vector<std::string>& args) : strings{"rooflens"} {
    strings.insert(strings.end(), args.begin(), args.end());
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

// CLI11's parse errors are bad input too: the same one line the CLI prints, as an InputError.
void parse(CLI::App& app, const std::vector<std::string>& args) {
  Argv a(args);
  try {
    app.parse(a.argc(), a.argv());
  } catch (const CLI::ParseError& e) {
    throw InputError(std::string(e.what()) + " (see --help)");
  }
}

std::string json_text(const nlohmann::json& result) {
  std::ostringstream out;
  reports::write_json(out, result);
  return out.str();
}

// `rooflens analyze ARGS --json -`: the result document as text.
std::string analyze(const std::vector<std::string>& args) {
  CLI::App app;
  cli::ModelArgs model;
  cli::add_model_options(app, model);
  parse(app, args);
  nb::gil_scoped_release unlocked;
  return json_text(reports::result_json(cli::build_analysis(model, app)));
}

// `rooflens compare MODEL TIMELINE ARGS --json -`.
std::string compare(const std::vector<std::string>& args) {
  CLI::App app;
  cli::CompareArgs compare_args;
  cli::add_compare_options(app, compare_args);
  parse(app, args);
  nb::gil_scoped_release unlocked;
  return json_text(reports::result_json(cli::compare_run(compare_args, app).analysis));
}

// `rooflens serve CONFIG ARGS --json -`.
std::string serve(const std::vector<std::string>& args) {
  CLI::App app;
  cli::ServeArgs serve_args;
  cli::add_serve_options(app, serve_args);
  parse(app, args);
  nb::gil_scoped_release unlocked;
  return cli::serve_run(serve_args, app).result.dump();
}

std::string devices() {
  nlohmann::json list = nlohmann::json::array();
  for (const Device& d : builtin_devices()) list.push_back(reports::device_json(d));
  return list.dump();
}

// The terminal report of a result, as `rooflens report RESULT.json --top N --by ...` prints it.
std::string table(const std::string& result_text, int top, bool by_block) {
  nlohmann::json result = nlohmann::json::parse(result_text);
  std::ostringstream out;
  if (result.contains("compare"))
    reports::write_compare_table(out, result, top, by_block);
  else
    reports::write_table(out, result, top, by_block);
  return out.str();
}

std::string html(const std::string& result_text) {
  std::ostringstream out;
  reports::write_html(out, nlohmann::json::parse(result_text));
  return out.str();
}

// The whole command line in this process: the console script `rooflens`.
int run_cli(const std::vector<std::string>& args) {
  Argv a(args);
  int code;
  {
    nb::gil_scoped_release unlocked;
    code = cli::run(a.argc(), a.argv());
  }
  std::cout.flush();
  std::cerr.flush();
  return code;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "rooflens's C++ core; use the rooflens package, not this module";
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);
  m.def("analyze", &analyze, nb::arg("args"), "rooflens analyze ARGS: the result JSON as text");
  m.def("compare", &compare, nb::arg("args"),
        "rooflens compare MODEL TIMELINE ARGS: the result JSON as text");
  m.def("serve", &serve, nb::arg("args"), "rooflens serve CONFIG ARGS: the result JSON as text");
  m.def("devices", &devices, "the device database as a JSON array");
  m.def("table", &table, nb::arg("result"), nb::arg("top"), nb::arg("by_block"),
        "the terminal report of a result JSON");
  m.def("html", &html, nb::arg("result"), "the self-contained HTML report of a result JSON");
  m.def("run_cli", &run_cli, nb::arg("args"),
        "the rooflens command line (without the program name); returns its exit code");
  m.attr("version") = "0.1.0";
}
