#!/usr/bin/env python3
"""Real PyTorch training steps of the model behind an ONNX graph: `--phase train` on
tests/data/onnx/resnet50-bn-unfolded.onnx (torchvision's ResNet-50 exported with its BatchNorm
layers kept, scripts/gpu/export_samples.py) is checked against these (issue 17).

Per case, in a fresh process: torchvision.models.resnet50() in train mode, random weights,
random images and labels, `F.cross_entropy(model(x), y).backward(); opt.step();
opt.zero_grad(set_to_none=True)` with AdamW (foreach) or SGD, in fp32 (PyTorch's defaults: cuDNN
may use TF32, matmuls may not) or under torch.autocast(bf16); as scripts/gpu/training_references.py:
the second step's max_memory_allocated, the median of 5 timed steps (CUDA events), and forward +
backward under FlopCounterMode (convolutions and matmuls). With BREAKDOWN_TRACES=DIR, one more
step under torch.profiler (CPU ops and kernels) is written as DIR/CASE.json.

  scripts/gpu/training_references_onnx.py OUT.json [CASE...]
  scripts/gpu/training_references_onnx.py --case NAME
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/gpu/training_references_onnx.py $OUT/onnx-train.json
"""
import os
import sys

from training_references import measure_step, run_each_case  # noqa: E402

# name: (ONNX graph under tests/data/onnx, batch, precision, optimizer)
CASES = {
    "resnet50-b64-fp32": ("resnet50-bn-unfolded", 64, "fp32", "adamw"),
    "resnet50-b64-bf16-mixed": ("resnet50-bn-unfolded", 64, "bf16-mixed", "adamw"),
    "resnet50-b128-bf16-mixed-sgd": ("resnet50-bn-unfolded", 128, "bf16-mixed", "sgd"),
    "resnet50-b16-fp32": ("resnet50-bn-unfolded", 16, "fp32", "adamw"),
}


def run_case(name):
    import torch
    import torch.nn.functional as F
    import torchvision

    graph, batch, precision, optimizer = CASES[name]
    torch.manual_seed(0)
    model = torchvision.models.resnet50().cuda().train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=1e-5) if optimizer == "adamw" else torch.optim.SGD(params, lr=1e-5)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def forward_backward():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()

    def profiled(step):  # one more step with CPU ops and kernels, for attributing kernels offline
        trace = os.environ.get("BREAKDOWN_TRACES")
        if not trace:
            return
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(os.path.join(trace, name + ".json"))

    at_rest, peak, times, counter = measure_step(forward_backward, opt, profiled)
    return {
        "case": name, "onnx": graph, "batch": batch, "precision": precision, "optimizer": optimizer,
        "params": sum(p.numel() for p in params), "at_rest_bytes": at_rest, "peak_bytes": peak,
        "step_time_s": times[len(times) // 2], "step_times_s": times,
        "gemm_dense_flops": counter.get_total_flops(),
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "gpu": torch.cuda.get_device_name(),
    }


def main():
    run_each_case(__file__, run_case,
                  lambda r: f"peak {r['peak_bytes'] / 1e9:.2f} GB, at rest {r['at_rest_bytes'] / 1e9:.2f} GB, "
                            f"step {r['step_time_s'] * 1e3:.1f} ms, {r['gemm_dense_flops'] / 1e12:.2f} TFLOP", __doc__)


if __name__ == "__main__":
    main()
