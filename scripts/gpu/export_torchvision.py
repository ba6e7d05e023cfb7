#!/usr/bin/env python3
"""Export torchvision models (random weights: nothing is downloaded) to ONNX with the TorchScript
exporter, the graph only (weights stripped to an external file that is then deleted), for the
bound-class and prediction checks (scripts/gpu/ncu_suite.sh). Runs where torch and torchvision are
(the GPU machine).

    python3 scripts/gpu/export_torchvision.py OUT_DIR mobilenet_v3_small efficientnet_b0 convnext_tiny
"""
import os
import sys

import onnx
import torch
import torchvision


def main():
    out, names = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        model = getattr(torchvision.models, name)().eval()
        path = os.path.join(out, f"{name}-opset17.onnx")
        x = torch.randn(1, 3, 224, 224)
        torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        m = onnx.load(path)
        data = os.path.basename(path) + ".data"
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                        size_threshold=1024)
        os.remove(os.path.join(out, data))
        print(f"{path}: {len(m.graph.node)} nodes, torch {torch.__version__}, torchvision {torchvision.__version__}")


if __name__ == "__main__":
    main()
