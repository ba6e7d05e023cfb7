// The CLI as a Unix tool: "-" is standard output for every report file (and the terminal table
// stays out of it), every unbound input dim in one error line with the flags that bind it, and
// shell completion generated from the parser's own definition.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "analyzer/core/errors.hpp"
#include "analyzer/onnx/loader.hpp"
#include "cli_run.hpp"
#include "model_builder.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = scratch_dir("unix");
  return dir;
}

CliRun run(const std::string& args) {
  return run_cli(std::string(ROOFLENS_BIN) + " " + args, scratch());
}

std::string resnet() {
  return data_path("samples/resnet50-opset17.onnx");
}

}  // namespace

TEST_CASE("standard output: --json - writes the result there and nothing else", "[cli][unix]") {
  CliRun r = run("analyze " + resnet() + " --json -");
  REQUIRE(r.code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);  // throws if the table were mixed in
  CHECK(j.at("model").at("name") == "resnet50-opset17.onnx");
  CHECK_FALSE(fs::exists(fs::current_path() / "-"));  // no file named "-"
  // The same document as written to a file.
  fs::path file = scratch() / "r.json";
  REQUIRE(run("analyze " + resnet() + " --json " + file.string()).code == 0);
  CHECK(nlohmann::json::parse(slurp(file)) == j);
}

TEST_CASE("standard output: --csv -, --html - and --trace - on analyze and report", "[cli][unix]") {
  CliRun csv = run("analyze " + resnet() + " --csv -");
  REQUIRE(csv.code == 0);
  CHECK(csv.out.rfind("index,name,op,", 0) == 0);  // the CSV header first: no table before it
  CHECK(csv.out.find("Top ") == std::string::npos);
  CliRun trace = run("analyze " + resnet() + " --trace -");
  REQUIRE(trace.code == 0);
  CHECK(nlohmann::json::parse(trace.out).contains("traceEvents"));
  fs::path saved = scratch() / "saved.json";
  REQUIRE(run("analyze " + resnet() + " --json " + saved.string()).code == 0);
  CliRun html = run("report " + saved.string() + " --html -");
  REQUIRE(html.code == 0);
  CHECK(html.out.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.out.find("coverage:") ==
        std::string::npos);  // the terminal report's last line is not there
  // Two reports cannot share stdout: one line, exit 2, nothing written.
  fs::path other = scratch() / "other.csv";
  CliRun both = run("analyze " + resnet() + " --json - --csv " + other.string() + " --trace -");
  CHECK(both.code == 2);
  CHECK(both.err ==
        "rooflens: --json - and --trace -: only one output can go to standard output\n");
  CHECK(both.out.empty());
  CHECK_FALSE(fs::exists(other));
}

TEST_CASE(
    "every unbound input dim in one line, with --dim for each and --batch for the leading one",
    "[cli][unix][errors]") {
  // x[batch, seq, 64] and m[batch, seq]: two names, the first leading every input. Expected text
  // written by hand from that shape.
  ModelBuilder b;
  b.input("x", DType::f32, {std::string("batch"), std::string("seq"), int64_t{64}});
  b.input("m", DType::f32, {std::string("batch"), std::string("seq"), int64_t{1}});
  b.node("Mul", {"x", "m"}, {"y"}).output("y");
  fs::path model = scratch() / "two_dims.onnx";
  fs::rename(b.save(), model);
  CliRun r = run("analyze " + model.string());
  CHECK(r.code == 2);
  CHECK(r.err == "rooflens: " + model.string() +
                     ": 2 input dims are unbound: input 'x' dim 0 'batch', input 'x' dim 1 'seq'; "
                     "bind them with "
                     "--dim batch=N --dim seq=N; --batch N binds 'batch' (dim 0 of every input)\n");
  // With one bound, the other alone; with both, the analysis runs.
  CliRun one = run("analyze " + model.string() + " --batch 4");
  CHECK(one.code == 2);
  CHECK(one.err == "rooflens: " + model.string() +
                       ": input 'x' dim 1 'seq' is symbolic; bind it with --dim seq=N\n");
  CHECK(run("analyze " + model.string() + " --batch 4 --dim seq=16").code == 0);

  // A second input led by another dim: --batch binds neither, so it is not offered.
  ModelBuilder c;
  c.input("a", DType::f32, {std::string("n"), int64_t{8}})
      .input("b", DType::f32, {int64_t{8}, std::string("k")});
  c.node("MatMul", {"a", "b"}, {"y"}).output("y");
  fs::path model2 = scratch() / "no_batch.onnx";
  fs::rename(c.save(), model2);
  CliRun r2 = run("analyze " + model2.string());
  CHECK(r2.code == 2);
  CHECK(r2.err == "rooflens: " + model2.string() +
                      ": 2 input dims are unbound: input 'a' dim 0 'n', input 'b' dim 1 'k'; bind "
                      "them with --dim n=N --dim k=N\n");
}

TEST_CASE("shell completion is generated from the parser: every flag of --help is offered",
          "[cli][unix]") {
  for (const char* sub :
       {"analyze", "report", "compare", "profile", "calibrate", "record", "devices"}) {
    INFO(sub);
    // The flags the parser documents, read from its --help.
    CliRun help = run(std::string(sub) + " --help");
    REQUIRE(help.code == 0);
    // The flags the parser documents: an option line of --help starts with them ("  -h,--help",
    // "  --json TEXT"); flags named inside descriptions are not options of this command.
    std::set<std::string> flags;
    std::istringstream lines(help.out);
    std::regex option(R"(^\s+(?:-[a-zA-Z],)?(--[a-z][a-z0-9-]*))");
    std::smatch m;
    for (std::string line; std::getline(lines, line);)
      if (std::regex_search(line, m, option)) flags.insert(m[1]);
    REQUIRE_FALSE(flags.empty());
    CliRun bash = run("completion bash");
    REQUIRE(bash.code == 0);
    std::smatch line;
    REQUIRE(std::regex_search(bash.out, line,
                              std::regex("\n    " + std::string(sub) + "\\) opts=\"([^\"]*)\"")));
    std::string opts = " " + line[1].str() + " ";
    for (const std::string& f : flags) CHECK(opts.find(" " + f + " ") != std::string::npos);
    CliRun fish = run("completion fish");
    REQUIRE(fish.code == 0);
    for (const std::string& f : flags)
      CHECK(fish.out.find("'__fish_seen_subcommand_from " + std::string(sub) + "' -l " +
                          f.substr(2)) != std::string::npos);
  }
  // Each script parses in its shell, where the shell is installed.
  for (const char* shell : {"bash", "zsh", "fish"}) {
    INFO(shell);
    fs::path script = scratch() / (std::string("completion.") + shell);
    CliRun r = run(std::string("completion ") + shell);
    REQUIRE(r.code == 0);
    std::ofstream(script) << r.out;
    if (std::system((std::string("command -v ") + shell + " > /dev/null 2>&1").c_str()) != 0)
      continue;
    CHECK(std::system((std::string(shell) + " -n " + script.string()).c_str()) == 0);
  }
  CliRun bad = run("completion tcsh");
  CHECK(bad.code == 2);
  CHECK(bad.err == "rooflens: completion tcsh: expected bash, zsh or fish\n");
}
