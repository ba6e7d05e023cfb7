#!/usr/bin/env python3
"""ResNeXt-50 32x4d's grouped 3x3 convolutions as one ONNX graph (tests/data/onnx/resnext50-grouped-convs.onnx):
each with a bias (the BatchNorm an export folds in), on its own input, batch 32. Weights stripped
to an external file that is then deleted, as scripts/gpu/export_torchvision.py does: the graph is
all rooflens reads.

    python3 scripts/gpu/make_grouped_convs.py OUT.onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (channels, output side, stride): stage 1 at 56, the stride-2 convolutions opening stages 2-4.
LAYERS = [(128, 56, 1), (256, 28, 2), (256, 28, 1), (512, 14, 2), (512, 14, 1), (1024, 7, 2), (1024, 7, 1)]
GROUPS, BATCH = 32, 32


def main(out):
    nodes, inits, inputs, outputs = [], [], [], []
    for i, (c, side, s) in enumerate(LAYERS):
        x, w, b, y = f"x{i}", f"w{i}", f"b{i}", f"y{i}"
        inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, c, side * s, side * s]))
        inits.append(numpy_helper.from_array(np.zeros((c, c // GROUPS, 3, 3), np.float32), w))
        inits.append(numpy_helper.from_array(np.zeros(c, np.float32), b))
        nodes.append(helper.make_node("Conv", [x, w, b], [y], name=f"grouped{i}_c{c}_s{s}", group=GROUPS,
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s]))
        outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, [BATCH, c, side, side]))
    model = helper.make_model(helper.make_graph(nodes, "resnext50_grouped_convs", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    data = os.path.basename(out) + ".data"
    onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                    size_threshold=1024)
    os.remove(os.path.join(os.path.dirname(out) or ".", data))


if __name__ == "__main__":
    main(sys.argv[1])
