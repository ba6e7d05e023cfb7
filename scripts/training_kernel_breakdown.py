#!/usr/bin/env python3
"""Where a real training step's time goes, for closing --phase train's step-time gap (issue 17).

Runs each case of scripts/training_references.py (same models, precisions, optimizer, steps) in a
fresh process, warms up two steps, then records one step under torch.profiler (CUDA activity) and
writes per case: the step's wall time (CUDA events), the kernels' summed time, the GPU's busy time
(the union of kernel intervals) and idle time inside the step (host-bound gaps: eager dispatch,
Python, synchronizations), the kernel count, and time and count per kernel class (GEMM, attention,
element-wise, reduction, foreach optimizer, copy/cast, other), plus the 25 longest kernel names.

  scripts/training_kernel_breakdown.py OUT.json [CASE...]  the cases (all by default), one process each
  scripts/training_kernel_breakdown.py --case NAME       one case, its JSON on stdout
On the GPU machine: scripts/training_kernel_breakdown.py $OUT/training-kernels.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_references import CASES, build_model, run_each_case  # noqa: E402

CLASSES = [
    ("attention", ("flash", "fmha", "attention", "softmax_warp", "efficient")),
    ("gemm", ("gemm", "sm90_xmma", "cutlass", "nvjet", "cublas", "grouped_mm", "sgemm")),
    ("foreach", ("multi_tensor_apply", "foreach")),
    ("copy_cast", ("copy_kernel", "to_copy", "direct_copy", "cat", "index", "gather", "scatter")),
    ("reduction", ("reduce", "norm", "layer_norm", "log_softmax", "nll_loss", "sum", "mean")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "pointwise", "dropout", "fill")),
]


def kernel_class(name):
    low = name.lower()
    for cls, keys in CLASSES:
        if any(k in low for k in keys):
            return cls
    return "other"


def run_case(name):
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    model_key, batch, seq, precision, ckpt, optimizer = CASES[name]
    model, config, _, _ = build_model(model_key, precision, ckpt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5) if optimizer == "adamw" else torch.optim.SGD(model.parameters(), lr=1e-5)
    x = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        start.record()
        step()
        end.record()
        end.synchronize()
    wall = start.elapsed_time(end) / 1e3
    kernels = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0:
            kernels.append((e.time_range.start, e.time_range.end, e.name))
    kernels.sort()
    busy, cur_s, cur_e = 0, None, None
    for s, e, _ in kernels:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    by_class, by_name = {}, {}
    for s, e, n in kernels:
        c = by_class.setdefault(kernel_class(n), {"s": 0.0, "count": 0})
        c["s"] += (e - s) / 1e6
        c["count"] += 1
        by_name[n] = by_name.get(n, 0.0) + (e - s) / 1e6
    span = (kernels[-1][1] - kernels[0][0]) / 1e6 if kernels else 0
    return {"case": name, "step_wall_s": wall, "kernel_span_s": span, "kernels": len(kernels),
            "kernel_sum_s": sum(e - s for s, e, _ in kernels) / 1e6, "gpu_busy_s": busy / 1e6,
            "gpu_idle_in_span_s": span - busy / 1e6, "by_class": by_class,
            "longest": sorted(by_name.items(), key=lambda kv: -kv[1])[:25],
            "torch": torch.__version__, "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name()}


def main():
    run_each_case(__file__, run_case,
                  lambda r: f"wall {r['step_wall_s'] * 1e3:.1f} ms, GPU busy {r['gpu_busy_s'] * 1e3:.1f} ms, {r['kernels']} kernels",
                  __doc__)


if __name__ == "__main__":
    main()
