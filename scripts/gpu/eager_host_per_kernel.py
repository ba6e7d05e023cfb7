#!/usr/bin/env python3
"""The host's time per kernel launched in a Hugging Face model's eager training step, per phase,
on the machine it runs on: what --phase train's step timeline charges the host for each kernel
(issue 17; the device profile's "eager_host").

Eager PyTorch issues a kernel only after Python, the dispatcher and autograd have done their
work for it; where that takes longer than the kernels run, the GPU waits. That cost does not
depend on tensor sizes, so it is measured where the GPU never holds the host back: each case of
scripts/gpu/training_references.py (same model, precision, checkpointing, optimizer) at batch 1 x 16
tokens. Per phase (forward with the loss, backward, optimizer step with zero_grad) the host's
time is the median of 15 steps after 3 warm-ups, the GPU synchronised between phases, in a
process that has not loaded a profiler (CUPTI slows every launch); then one step per phase under
torch.profiler counts the kernels (memcpy and memset included) each phase launched.

  scripts/gpu/eager_host_per_kernel.py OUT.json [CASE...]   each case in a fresh process
  scripts/gpu/eager_host_per_kernel.py --case NAME          one case, its JSON on stdout
  scripts/gpu/eager_host_per_kernel.py --pool OUT.json PROFILE.json
      the medians per kernel over the cases (checkpointed and not apart), and per optimizer the
      host's time as fixed + per parameter tensor, written into the device profile's "eager_host"
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/gpu/eager_host_per_kernel.py $OUT/eager-per-kernel.json
"""
import json
import os
import statistics
import sys
import time

from training_references import CASES, build_model, cpu_name, run_each_case  # noqa: E402

TOKENS = 16
PHASES = ("forward", "backward", "optimizer")


def run_case(name):
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    model_key, _, _, precision, ckpt, optimizer = CASES[name]
    model, config, _, _ = build_model(model_key, precision, ckpt)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5) if optimizer == "adamw" else torch.optim.SGD(params, lr=1e-5)
    x = torch.randint(0, config.vocab_size, (1, TOKENS), device="cuda")
    state = {}

    def forward():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            state["loss"] = model(input_ids=x, labels=x, use_cache=False).loss

    def backward():
        state.pop("loss").backward()

    def optimizer_step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    steps = (forward, backward, optimizer_step)
    host = {p: [] for p in PHASES}
    for i in range(18):
        for phase, run in zip(PHASES, steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            if i >= 3:
                host[phase].append(t1 - t0)
    torch.cuda.synchronize()
    kernels = {}
    for phase, run in zip(PHASES, steps):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
        kernels[phase] = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    out = {"case": name, "tokens": TOKENS, "checkpointing": ckpt, "precision": precision,
           "optimizer_kind": optimizer, "param_tensors": len(params),
           "torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(), "cpu": cpu_name()}
    for phase in PHASES:
        h = statistics.median(host[phase])
        out[phase] = {"host_s": h, "kernels": kernels[phase],
                      "host_per_kernel_s": h / kernels[phase] if kernels[phase] else None}
    return out


def pool(measured_path, profile_path):
    """The medians per phase into the profile's "eager_host" (the rest of the profile unchanged)."""
    with open(measured_path) as f:
        cases = json.load(f)["cases"]

    def median(phase, ckpt):
        values = [c[phase]["host_per_kernel_s"] for c in cases if c["checkpointing"] == ckpt and c[phase]["kernels"]]
        if not values:
            sys.exit(f"{measured_path}: no {phase} measurement {'with' if ckpt else 'without'} checkpointing")
        return statistics.median(values)

    def optimizer(kind):
        """The optimizer step's host time as fixed + per parameter tensor: least squares over the
        cases of that optimizer (through the origin when they all have one tensor count)."""
        points = [(c["param_tensors"], c["optimizer"]["host_s"]) for c in cases if CASES[c["case"]][5] == kind]
        if not points:
            sys.exit(f"{measured_path}: no {kind} case")
        xs = [x for x, _ in points]
        if len(set(xs)) < 2:
            return 0.0, statistics.median(y / x for x, y in points)
        fit = statistics.linear_regression(xs, [y for _, y in points])
        return max(fit.intercept, 0.0), fit.slope

    adamw, sgd = optimizer("adamw"), optimizer("sgd")
    eager = {
        "forward_kernel_s": median("forward", False),
        "backward_kernel_s": median("backward", False),
        "checkpointed_forward_kernel_s": median("forward", True),
        "checkpointed_backward_kernel_s": median("backward", True),
        "adamw_fixed_s": adamw[0],
        "adamw_tensor_s": adamw[1],
        "sgd_fixed_s": sgd[0],
        "sgd_tensor_s": sgd[1],
        "source": (f"scripts/gpu/eager_host_per_kernel.py: {len(cases)} training steps at 1x{TOKENS} tokens, torch "
                   f"{cases[0]['torch']}, transformers {cases[0]['transformers']}, {cases[0]['cpu']}"),
    }
    with open(profile_path) as f:
        profile = json.load(f)
    profile["eager_host"] = eager
    with open(profile_path, "w") as f:
        json.dump(profile, f, separators=(",", ":"))
        f.write("\n")
    print(json.dumps(eager, indent=1))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--pool":
        pool(sys.argv[2], sys.argv[3])
        return
    run_each_case(__file__, run_case,
                  lambda r: " ".join(f"{p} {r[p]['host_s'] * 1e3:.2f} ms/{r[p]['kernels']} kernels"
                                     for p in PHASES), __doc__)


if __name__ == "__main__":
    main()
