"""Small ONNX models with control flow for the loader's tests (tests/test_control_flow.cpp), written
with onnx.helper into tests/data/onnx/control_flow/. Each is a few hundred bytes.

  if_dynamic.onnx  If on a graph input cond: then = x @ Wt ([4,8] @ [8,16]); else = relu(x) @ We
  if_const.onnx    the same If with cond a constant initializer (true)
  loop_const.onnx  Loop M=3 (an initializer): h = tanh(h @ W) ([4,8] @ [8,8], W from the outer
                   scope), the last h and the stacked per-iteration h ([3,4,8]) as outputs
  loop_dynamic.onnx the same Loop with M a graph input (needs --loop-trips)
  scan_input.onnx  Scan over x [5,4,8] (a graph input) on axis 0: h = tanh(h @ W + x_t), h [4,8];
                   the last h and the stacked h ([5,4,8]) as outputs
  scan_reverse.onnx the same body over x [4,5,8] on axis 1, backwards, h stacked on axis 1
  scan_computed.onnx the Scan over relu(x): its length is not stated (needs --loop-trips)
  scan_value_info.onnx the same with relu(x)'s shape in value_info ([5,4,8])

Run: python scripts/gpu/make_control_flow_models.py   (needs the onnx package)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "onnx", "control_flow")


def weight(name, *shape):
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), name)


def branch(name, nodes, inits):
    return h.make_graph(nodes, name, [], [h.make_tensor_value_info("y_" + name, T.FLOAT, [4, 16])], inits)


def if_model(cond_constant):
    then_g = branch("then", [h.make_node("MatMul", ["x", "Wt"], ["y_then"], name="then_matmul")], [weight("Wt", 8, 16)])
    else_g = branch("else", [h.make_node("Relu", ["x"], ["r"], name="else_relu"),
                             h.make_node("MatMul", ["r", "We"], ["y_else"], name="else_matmul")], [weight("We", 8, 16)])
    node = h.make_node("If", ["cond"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [4, 8])]
    inits = []
    if cond_constant:
        inits.append(numpy_helper.from_array(np.array(True), "cond"))
    else:
        inputs.append(h.make_tensor_value_info("cond", T.BOOL, []))
    g = h.make_graph([node], "if_model", inputs, [h.make_tensor_value_info("y", T.FLOAT, [4, 16])], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def loop_model(trips_constant):
    body = h.make_graph(
        [h.make_node("MatMul", ["h_in", "W"], ["m"], name="body_matmul"),
         h.make_node("Tanh", ["m"], ["h_out"], name="body_tanh"),
         h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         h.make_node("Identity", ["h_out"], ["scan_out"], name="body_scan")],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("h_in", T.FLOAT, [4, 8])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("h_out", T.FLOAT, [4, 8]),
         h.make_tensor_value_info("scan_out", T.FLOAT, [4, 8])])
    node = h.make_node("Loop", ["M", "", "x"], ["h_last", "h_all"], name="repeat", body=body)
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [4, 8])]
    inits = [weight("W", 8, 8)]
    if trips_constant:
        inits.append(numpy_helper.from_array(np.array(3, dtype=np.int64), "M"))
    else:
        inputs.append(h.make_tensor_value_info("M", T.INT64, []))
    outputs = [h.make_tensor_value_info("h_last", T.FLOAT, [4, 8]), h.make_tensor_value_info("h_all", T.FLOAT, [None, 4, 8])]
    g = h.make_graph([node], "loop_model", inputs, outputs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def scan_model(name, axis=0, reverse=False, computed=False, value_info=False):
    body = h.make_graph(
        [h.make_node("MatMul", ["h_in", "W"], ["m"], name="body_matmul"),
         h.make_node("Add", ["m", "x_t"], ["a"], name="body_add"),
         h.make_node("Tanh", ["a"], ["h_out"], name="body_tanh"),
         h.make_node("Identity", ["h_out"], ["scan_out"], name="body_scan")],
        "body",
        [h.make_tensor_value_info("h_in", T.FLOAT, [4, 8]), h.make_tensor_value_info("x_t", T.FLOAT, [4, 8])],
        [h.make_tensor_value_info("h_out", T.FLOAT, [4, 8]), h.make_tensor_value_info("scan_out", T.FLOAT, [4, 8])])
    x_shape = [5, 4, 8] if axis == 0 else [4, 5, 8]
    scanned = "x"
    nodes = []
    if computed:
        nodes.append(h.make_node("Relu", ["x"], ["rx"], name="relu"))
        scanned = "rx"
    attrs = dict(num_scan_inputs=1, body=body)
    if axis:
        attrs.update(scan_input_axes=[axis], scan_output_axes=[axis])
    if reverse:
        attrs.update(scan_input_directions=[1], scan_output_directions=[1])
    nodes.append(h.make_node("Scan", ["h0", scanned], ["h_last", "h_all"], name="steps", **attrs))
    inputs = [h.make_tensor_value_info("h0", T.FLOAT, [4, 8]), h.make_tensor_value_info("x", T.FLOAT, x_shape)]
    outputs = [h.make_tensor_value_info("h_last", T.FLOAT, [4, 8]), h.make_tensor_value_info("h_all", T.FLOAT, x_shape)]
    g = h.make_graph(nodes, name, inputs, outputs, [weight("W", 8, 8)])
    if value_info:
        g.value_info.append(h.make_tensor_value_info("rx", T.FLOAT, x_shape))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, model in {"if_dynamic": if_model(False), "if_const": if_model(True),
                        "loop_const": loop_model(True), "loop_dynamic": loop_model(False),
                        "scan_input": scan_model("scan_input"),
                        "scan_reverse": scan_model("scan_reverse", axis=1, reverse=True),
                        "scan_computed": scan_model("scan_computed", computed=True),
                        "scan_value_info": scan_model("scan_value_info", computed=True, value_info=True)}.items():
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(OUT, name + ".onnx"))
        print(name, os.path.getsize(os.path.join(OUT, name + ".onnx")), "bytes")


if __name__ == "__main__":
    main()
