#!/usr/bin/env python3
"""Training-mode batch norm as PyTorch runs it in NCHW, timed over a grid of shapes: what
`--phase train` prices an ONNX graph's BatchNormalization with (issue 17), as measured tables in
the device profile ("train.batch_norm.fp32", "train.batch_norm_backward.bf16", ...).

Batch norm's training kernels reduce every channel over N x H x W elements that NCHW lays out in
runs of H x W: far from the bandwidth an element-wise pass reaches, and not a kernel the harness
replays. PyTorch picks cuDNN's kernels for fp32 and its own (statistics, transform, backward) for
a bf16 input with fp32 weights, as under autocast; both are timed here.

Per dtype (fp32; bf16 input with fp32 weight and statistics) and shape (n, c, hw; hw = H x W with
H = W where square), F.batch_norm(training=True) forward, and forward + backward (gradients of the
input, weight and bias): the kernels' summed time under torch.profiler (CUPTI) over 10 calls after
3 warm-ups, per call; the backward is their difference. Shapes over 2^28 elements are not
measured (null).

  scripts/gpu/batch_norm_training.py OUT.json              measure
  scripts/gpu/batch_norm_training.py --merge OUT.json PROFILE.json
      the tables into the device profile (its other tables unchanged)
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/gpu/batch_norm_training.py $OUT/batch-norm.json
"""
import json
import sys

from profile_tables import merge_tables  # same folder

N = [8, 32, 128]
C = [64, 256, 1024, 2048]
HW = [49, 196, 784, 3136, 12544]
MAX_ELEMENTS = 1 << 28
REPEATS = 10
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def measure():
    import torch
    import torch.nn.functional as F

    from torch.profiler import ProfilerActivity, profile

    def timed(fn):
        """The GPU time of fn's kernels (CUPTI), per call: on small shapes the host's time to
        launch them is longer than they run, and the step's queue prices the two apart."""
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(REPEATS):
                fn()
            torch.cuda.synchronize()
        kernels = [e.time_range.elapsed_us() for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA]
        return sum(kernels) / REPEATS / 1e6

    tables = {}
    for key, dtype in DTYPES.items():
        forward, backward = [], []
        for n in N:
            for c in C:
                for hw in HW:
                    if n * c * hw > MAX_ELEMENTS:
                        forward.append(None)
                        backward.append(None)
                        continue
                    side = int(round(hw ** 0.5))
                    shape = (n, c, side, hw // side)
                    x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype), requires_grad=True)
                    w = torch.ones(c, device="cuda", requires_grad=True)
                    b = torch.zeros(c, device="cuda", requires_grad=True)
                    rm, rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
                    dy = torch.randn_like(x)

                    def fwd():
                        with torch.no_grad():
                            F.batch_norm(x, rm, rv, w, b, training=True)

                    def fwd_bwd():
                        y = F.batch_norm(x, rm, rv, w, b, training=True)
                        torch.autograd.grad(y, (x, w, b), dy)

                    f = timed(fwd)
                    fb = timed(fwd_bwd)
                    forward.append(f)
                    backward.append(max(fb - f, 1e-7))
                    del x, w, b, rm, rv, dy
                    torch.cuda.empty_cache()
            print(f"{key} n={n} done", flush=True)
        grid = [[float(v) for v in N], [float(v) for v in C], [float(v) for v in HW]]
        tables[f"train.batch_norm.{key}"] = {"axes": ["n", "c", "hw"], "grid": grid, "seconds": forward}
        tables[f"train.batch_norm_backward.{key}"] = {"axes": ["n", "c", "hw"], "grid": grid, "seconds": backward}
    return {"script": "scripts/gpu/batch_norm_training.py", "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(), "tables": tables}


def merge(measured_path, profile_path):
    merge_tables(measured_path, profile_path, lambda m: {"train.batch_norm": (
        f"scripts/gpu/batch_norm_training.py: F.batch_norm(training=True) in NCHW, torch {m['torch']}, "
        "kernel time under CUPTI per call")})


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--merge":
        merge(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        out = measure()
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
