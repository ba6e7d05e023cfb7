#!/usr/bin/env python3
"""Where a real training step's time goes, for closing --phase train's step-time gap (issue 17).

Runs each case of scripts/gpu/training_references.py (same models, precisions, optimizer, steps) in a
fresh process, warms up two steps, then writes per case: the step's wall time (CUDA events), how
long the host took to issue it and each phase (forward, backward, optimizer) on the GPU; from one
step under torch.profiler (CUDA activity only) the kernels' summed time, the GPU's busy time (the
union of kernel intervals) and idle time inside the step (host-bound gaps: eager dispatch, Python,
synchronizations), the kernel count, time and count per kernel class (GEMM, attention,
element-wise, reduction, foreach optimizer, copy/cast, other), the 40 longest kernel names; and the
same model's step at batch 1 x 32 tokens, where the host is the bottleneck (`tiny_step_s`; it runs
after the profiler, whose CUPTI hooks slow every launch: scripts/gpu/eager_host_per_kernel.py measures the
host's time in a process that never loaded a profiler). With
BREAKDOWN_TRACES=DIR, one more step with the CPU ops is written as DIR/CASE.json (Chrome trace).

  scripts/gpu/training_kernel_breakdown.py OUT.json [CASE...]  the cases (all by default), one process each
  scripts/gpu/training_kernel_breakdown.py --case NAME       one case, its JSON on stdout
On the GPU machine: scripts/gpu/training_kernel_breakdown.py $OUT/training-kernels.json
"""
import os
import sys

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


def busy_time(kernels):
    """The union of the kernels' [start, end) intervals."""
    busy, cur_s, cur_e = 0, None, None
    for s, e, _ in sorted(kernels):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return busy + (cur_e - cur_s if cur_e is not None else 0)


def run_case(name):
    import time

    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    model_key, batch, seq, precision, ckpt, optimizer = CASES[name]
    model, config, _, _ = build_model(model_key, precision, ckpt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5) if optimizer == "adamw" else torch.optim.SGD(model.parameters(), lr=1e-5)
    x = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
    events = lambda: torch.cuda.Event(enable_timing=True)

    def step(marks=None):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        if marks:
            marks["forward"].record()
            marks["host_forward"] = time.perf_counter()
        loss.backward()
        if marks:
            marks["backward"].record()
            marks["host_backward"] = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    # Unprofiled: the step's wall (CUDA events), how long the host took to issue it (it returns
    # before the GPU is done unless the launch queue filled), and the GPU time of each phase.
    walls, issue, phases = [], [], []
    for _ in range(5):
        marks = {"start": events(), "forward": events(), "backward": events(), "end": events()}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        marks["start"].record()
        step(marks)
        marks["end"].record()
        t1 = time.perf_counter()
        marks["end"].synchronize()
        walls.append(marks["start"].elapsed_time(marks["end"]) / 1e3)
        issue.append({"step": t1 - t0, "forward": marks["host_forward"] - t0, "backward": marks["host_backward"] - t0})
        phases.append({"forward": marks["start"].elapsed_time(marks["forward"]) / 1e3,
                       "backward": marks["forward"].elapsed_time(marks["backward"]) / 1e3,
                       "optimizer": marks["backward"].elapsed_time(marks["end"]) / 1e3})
    mid = sorted(range(5), key=lambda i: walls[i])[2]
    # CUDA activity only (no CPU ops recorded: the host runs as unprofiled as CUPTI allows).
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]
    kernels.sort()
    by_class, by_name = {}, {}
    for s, e, n in kernels:
        c = by_class.setdefault(kernel_class(n), {"s": 0.0, "count": 0})
        c["s"] += (e - s) / 1e6
        c["count"] += 1
        by_name[n] = by_name.get(n, 0.0) + (e - s) / 1e6
    span = (kernels[-1][1] - kernels[0][0]) / 1e6 if kernels else 0
    busy = busy_time(kernels) / 1e6
    # With the CPU ops too, for attributing kernels to modules offline (the host is slower here).
    trace = os.environ.get("BREAKDOWN_TRACES")
    if trace:
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU], with_stack=False) as prof:
            step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(os.path.join(trace, name + ".json"))
    # The same step at a shape where no kernel is long: the host's time for this model's step.
    tiny = torch.randint(0, config.vocab_size, (1, 32), device="cuda")
    host_bound = []
    for i in range(7):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=tiny, labels=tiny, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 2:
            host_bound.append(time.perf_counter() - t0)
    return {"case": name, "step_wall_s": walls[mid], "step_walls_s": walls, "host_issue_s": issue[mid],
            "phase_gpu_s": phases[mid], "tiny_step_s": sorted(host_bound)[len(host_bound) // 2],
            "kernel_span_s": span, "kernels": len(kernels),
            "kernel_sum_s": sum(e - s for s, e, _ in kernels) / 1e6, "gpu_busy_s": busy,
            "gpu_idle_in_span_s": span - busy, "by_class": by_class,
            "longest": sorted(by_name.items(), key=lambda kv: -kv[1])[:40],
            "torch": torch.__version__, "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name()}


def main():
    run_each_case(__file__, run_case,
                  lambda r: f"wall {r['step_wall_s'] * 1e3:.1f} ms, GPU busy {r['gpu_busy_s'] * 1e3:.1f} ms, "
                            f"host issue {r['host_issue_s']['step'] * 1e3:.1f} ms, {r['kernels']} kernels, "
                            f"tiny step {r['tiny_step_s'] * 1e3:.1f} ms",
                  __doc__)


if __name__ == "__main__":
    main()
