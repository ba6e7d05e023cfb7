// Control flow in ONNX graphs: an If costs the branch its constant condition or --if-branch names,
// else the costlier of the two; a Loop its body once per iteration (a constant trip count or
// --loop-trips), a Scan once per step of its scanned axis; without a length the node stays not
// costed, never a zero. Models: scripts/gpu/make_control_flow_models.py (onnxruntime
// runs each). Expected FLOPs by hand: a [4,8] x [8,n] MatMul is 2 * 4 * 8 * n FLOPs.
#include <catch2/catch.hpp>

#include "analyzer/core/errors.hpp"
#include "cli_run.hpp"
#include "model_builder.hpp"
#include "scratch_dir.hpp"

using namespace rooflens;
using namespace rooflens::test;

namespace {

Analysis analyze(const std::string& name, LoadOptions load = {}) {
  return analyze_onnx(data_path("tests/data/onnx/control_flow/" + name + ".onnx"), load,
                      AnalysisOptions{});
}

int64_t matmul_flops(const Analysis& a, int* count = nullptr) {
  int64_t s = 0;
  for (const NodeResult& n : a.nodes)
    if (n.op == "MatMul") {
      s += n.cost.flops;
      if (count) ++*count;
    }
  return s;
}

bool has_note(const Analysis& a, const std::string& needle) {
  for (const std::string& n : a.notes)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE(
    "If: the branch a constant condition or --if-branch names is costed, and the report says which",
    "[loader][control-flow]") {
  LoadOptions then;
  then.if_branch = IfBranch::then_branch;
  Analysis t = analyze("if_dynamic", then);
  CHECK(t.coverage.not_costed == 0);
  CHECK(node_named(t, "choose/then/then_matmul").cost.flops == 2 * 4 * 8 * 16);
  CHECK(t.totals.params == 8 * 16);  // Wt only: the else branch does not run
  CHECK(has_note(t, "If 'choose': the then branch is costed (--if-branch)"));
  LoadOptions other;
  other.if_branch = IfBranch::else_branch;
  Analysis e = analyze("if_dynamic", other);
  CHECK(node_named(e, "choose/else/else_matmul").cost.flops == 2 * 4 * 8 * 16);
  CHECK(node_named(e, "choose/else/else_relu").status == NodeStatus::costed);
  // A constant condition (true) picks the then branch by itself.
  Analysis c = analyze("if_const");
  CHECK(c.coverage.not_costed == 0);
  CHECK(matmul_flops(c) == 2 * 4 * 8 * 16);
  CHECK(has_note(c, "the then branch is costed (its condition is a constant)"));
}

TEST_CASE("If: with no constant and no flag both branches are costed and the costlier is taken",
          "[loader][control-flow]") {
  // then = x @ Wt; else = relu(x) @ We: the same MatMul plus a ReLU over [4, 8], so else costs
  // more whatever the roofs.
  Analysis a = analyze("if_dynamic");
  CHECK(a.coverage.not_costed == 0);
  CHECK_FALSE(a.coverage.partial());
  CHECK(node_named(a, "choose/else/else_relu").status == NodeStatus::costed);
  CHECK(node_named(a, "choose/else/else_matmul").cost.flops == 2 * 4 * 8 * 16);
  CHECK(a.totals.params == 8 * 16);  // We only: one branch runs
  CHECK(has_note(a, "If 'choose': the else branch is costed (the costlier: then "));
  // --if-branch still names the cheaper one.
  LoadOptions then;
  then.if_branch = IfBranch::then_branch;
  CHECK(has_note(analyze("if_dynamic", then), "the then branch is costed (--if-branch)"));
}

TEST_CASE("Loop: the body costed per iteration, the trip count from a constant or --loop-trips",
          "[loader][control-flow]") {
  Analysis a = analyze("loop_const");  // M = 3
  int matmuls = 0;
  CHECK(matmul_flops(a, &matmuls) == 3 * 2 * 4 * 8 * 8);
  CHECK(matmuls == 3);
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.params == 8 * 8);  // W, read by every iteration, counted once
  CHECK(has_note(a, "Loop 'repeat': its body costed 3 times (a constant trip count"));
  Analysis open = analyze("loop_dynamic");
  CHECK(open.coverage.not_costed == 1);
  LoadOptions five;
  five.loop_trips = 5;
  Analysis b = analyze("loop_dynamic", five);
  CHECK(matmul_flops(b) == 5 * 2 * 4 * 8 * 8);
  CHECK(b.coverage.not_costed == 0);
  // The stacked scan output: 5 rows of [4, 8] fp32 written once, 640 bytes.
  CHECK(node_named(b, "repeat/stack_0").cost.written == 5 * 4 * 8 * 4);
}

TEST_CASE("Scan: the body costed once per step of the scanned axis", "[loader][control-flow]") {
  // h = tanh(h @ W + x_t) over 5 steps of [4, 8]: per step a [4,8] x [8,8] MatMul, 2*4*8*8 FLOPs.
  Analysis a = analyze("scan_input");
  int matmuls = 0;
  CHECK(matmul_flops(a, &matmuls) == 5 * 2 * 4 * 8 * 8);
  CHECK(matmuls == 5);
  CHECK(a.coverage.not_costed == 0);
  CHECK(a.totals.params == 8 * 8);
  CHECK(has_note(a, "Scan 'steps': its body costed 5 times (the scan inputs' stated length)"));
  // Each step's slice of x, [4, 8] fp32, is read and written once; the stacked h, 5 x [4, 8].
  CHECK(node_named(a, "steps/iter_3/slice_0").cost.written == 4 * 8 * 4);
  CHECK(node_named(a, "steps/stack_0").cost.written == 5 * 4 * 8 * 4);
  // Axis 1, backwards: x [4, 5, 8] sliced to [4, 8] per step, h stacked back on axis 1.
  Analysis r = analyze("scan_reverse");
  CHECK(matmul_flops(r) == 5 * 2 * 4 * 8 * 8);
  CHECK(node_named(r, "steps/iter_0/slice_0").output_shapes.at(0) == "[4,8]");
  CHECK(node_named(r, "steps/stack_0").output_shapes.at(0) == "[4,5,8]");
}

TEST_CASE("Scan over a computed tensor: its length from value_info or --loop-trips",
          "[loader][control-flow]") {
  Analysis open = analyze("scan_computed");  // relu(x) has no stated shape
  CHECK(open.coverage.not_costed == 1);
  bool said = false;
  for (const NodeResult& n : open.nodes)
    if (n.op == "Scan") said = n.reason.find("--loop-trips") != std::string::npos;
  CHECK(said);
  LoadOptions five;
  five.loop_trips = 5;
  Analysis b = analyze("scan_computed", five);
  CHECK(matmul_flops(b) == 5 * 2 * 4 * 8 * 8);
  CHECK(has_note(b, "Scan 'steps': its body costed 5 times (--loop-trips)"));
  Analysis v = analyze("scan_value_info");
  CHECK(matmul_flops(v) == 5 * 2 * 4 * 8 * 8);
  CHECK(v.coverage.not_costed == 0);
}

TEST_CASE("control-flow flags: one line and exit 2 when misused", "[cli][control-flow]") {
  std::filesystem::path dir = scratch_dir("control-flow");
  std::string bin = ROOFLENS_BIN, model = data_path("tests/data/onnx/control_flow/if_dynamic.onnx");
  CliRun ok = run_cli(bin + " analyze " + model + " --if-branch else", dir);
  CHECK(ok.code == 0);
  CliRun costlier = run_cli(bin + " analyze " + model, dir);
  CHECK(costlier.code == 0);  // the costlier branch is taken: complete
  for (const std::string& bad :
       {std::string(" --if-branch maybe"), std::string(" --loop-trips 0")}) {
    CliRun r = run_cli(bin + " analyze " + model + bad, dir);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CliRun config = run_cli(
      bin + " analyze " + data_path("samples/configs/gpt2/config.json") + " --loop-trips 3", dir);
  CHECK(config.code == 2);
  CHECK(config.err.find("--loop-trips applies to ONNX models") != std::string::npos);
}
