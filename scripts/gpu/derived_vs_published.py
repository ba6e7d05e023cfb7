#!/usr/bin/env python3
"""The default profiles of GPUs rooflens cannot measure here (derived from the H100's measured
profile, analyzer/hw/derived_profile.hpp) next to published measurements of the same work
(data/published/achieved.json): a GEMM of the published shape, or a copy of the published size.

  scripts/gpu/derived_vs_published.py [build/cli/rooflens] > table.md

Each row builds the one-node ONNX graph of the published work (MatMul of two [M,K] x [K,N]
inputs; Relu over the copy's bytes, which reads and writes them once), asks `rooflens analyze
--device GPU --json -` for its time with the default profile and with the spec sheet's roofs, and
prints the achieved rate both imply beside the published one. Needs the onnx package
(scripts/setup.sh installs it in .venv).
"""
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {"bf16": TensorProto.BFLOAT16, "fp16": TensorProto.FLOAT16}


def matmul_model(m, n, k, dtype):
    elem = DTYPES.get(dtype, TensorProto.BFLOAT16)  # fp8: a bf16 graph run with --dtype fp8
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="gemm")], "gemm",
                              [helper.make_tensor_value_info("a", elem, [m, k]),
                               helper.make_tensor_value_info("b", elem, [k, n])],
                              [helper.make_tensor_value_info("c", elem, [m, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def copy_model(nbytes):
    elements = int(nbytes) // 4
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="copy")], "copy",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def predicted_s(rooflens, model, device, extra):
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
        onnx.save(model, f.name)
    try:
        r = subprocess.run([rooflens, "analyze", f.name, "--device", device, "--json", "-"] + extra,
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)["totals"]["predicted_s"]


def rate(rooflens, fig, spec):
    extra = ["--device-profile", "spec"] if spec else []
    if fig["dtype"] == "fp8":
        extra += ["--dtype", "fp8"]
    if fig["kind"] == "hbm":
        t = predicted_s(rooflens, copy_model(fig["copy_bytes"]), fig["gpu"], extra)
        return 2 * fig["copy_bytes"] / t if t else None
    shapes = [fig["shape"]] if "shape" in fig else \
        [[s, s, s] for s in range(fig["square_best_of"][0], fig["square_best_of"][1] + 1, 1024)]
    best = None
    for m, n, k in shapes:  # the publication kept its best shape: so does the prediction
        t = predicted_s(rooflens, matmul_model(m, n, k, fig["dtype"]), fig["gpu"], extra)
        if t:
            best = max(best or 0, 2 * m * n * k / t)
    return best


def main():
    rooflens = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/cli/rooflens")
    figures = json.load(open(os.path.join(ROOT, "data/published/achieved.json")))["figures"]
    print("| GPU | work | published | default profile | error | spec roofs | error | source |")
    print("|---|---|---|---|---|---|---|---|")
    errors = {"default": [], "spec": []}
    for fig in figures:
        unit = "TFLOP/s" if fig["kind"] == "gemm" else "TB/s"
        scale = 1e12
        cells = []
        for spec in (False, True):
            r = rate(rooflens, fig, spec)
            if r is None:
                cells += ["-", "-"]
                continue
            err = (r - fig["value"]) / fig["value"]
            errors["spec" if spec else "default"].append(abs(err))
            cells += [f"{r / scale:.0f}" if unit == "TFLOP/s" else f"{r / scale:.2f}", f"{err:+.0%}"]
        work = f"{fig['kind']} {fig['dtype']} {fig['setting'][:48]}".strip()
        pub = f"{fig['value'] / scale:.0f}" if unit == "TFLOP/s" else f"{fig['value'] / scale:.2f}"
        src = fig["source"].split(",")[0][:60]
        print(f"| {fig['gpu']} | {work} | {pub} {unit} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {src} |")
    for k, v in errors.items():
        v.sort()
        if v:
            print(f"\n{k}: median |error| {v[len(v) // 2]:.0%}, max {v[-1]:.0%} over {len(v)} figures", end="")
    print()


if __name__ == "__main__":
    main()
