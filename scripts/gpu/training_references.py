#!/usr/bin/env python3
"""Real PyTorch training steps, the references `--phase train` is checked against (issue 17).

For each case, in a fresh process (the caching allocator and cuBLAS's workspaces start empty):
build a small but real model from its config with random weights (HF transformers, sdpa
attention), AdamW (PyTorch's default: foreach on CUDA) or SGD, and run
  step 1              allocates the optimizer states,
  step 2              torch.cuda.max_memory_allocated() from a reset before it: the peak,
  steps 3..3+T        the step time, CUDA events around forward + backward + optimizer + zero_grad,
  one more            forward + backward under FlopCounterMode: the matrix FLOPs (dense attention,
                      the counter's convention), recomputation included.
A step is `model(input_ids=x, labels=x).loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)`.
Precisions: fp32 (TF32 off, PyTorch's default), bf16 (the model cast to bf16, optimizer states in
bf16 too), bf16-mixed (fp32 weights, forward and backward under torch.autocast(bf16)).

  scripts/gpu/training_references.py OUT.json [CASE...]  the cases (all by default), one process each, into OUT.json
  scripts/gpu/training_references.py --case NAME         one case, its JSON on stdout
"""
import json
import os
import subprocess
import sys
import time

MODELS = {
    # HF GPT-2 (124M) as published.
    "gpt2": {"model_type": "gpt2"},
    # Llama-shaped, 4 layers, grouped-query attention (16 query heads, 4 KV heads).
    "llama-4l": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 4,
                 "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
                 "max_position_embeddings": 4096, "tie_word_embeddings": False},
    # Mixtral-shaped MoE, 4 layers, 4 experts, 2 per token.
    "mixtral-4l": {"model_type": "mixtral", "hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 4,
                   "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
                   "num_local_experts": 4, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
                   "tie_word_embeddings": False},
}

# name: (model, batch, seq, precision, gradient checkpointing, optimizer)
CASES = {
    "gpt2-fp32": ("gpt2", 8, 1024, "fp32", False, "adamw"),
    "gpt2-fp32-ckpt": ("gpt2", 8, 1024, "fp32", True, "adamw"),
    "gpt2-bf16-mixed": ("gpt2", 8, 1024, "bf16-mixed", False, "adamw"),
    "gpt2-bf16-mixed-ckpt": ("gpt2", 8, 1024, "bf16-mixed", True, "adamw"),
    "gpt2-bf16": ("gpt2", 8, 1024, "bf16", False, "adamw"),
    "gpt2-bf16-mixed-sgd": ("gpt2", 8, 1024, "bf16-mixed", False, "sgd"),
    "llama-4l-fp32": ("llama-4l", 4, 1024, "fp32", False, "adamw"),
    "llama-4l-bf16-mixed": ("llama-4l", 4, 1024, "bf16-mixed", False, "adamw"),
    "llama-4l-bf16-mixed-ckpt": ("llama-4l", 4, 1024, "bf16-mixed", True, "adamw"),
    "llama-4l-bf16": ("llama-4l", 4, 1024, "bf16", False, "adamw"),
    "mixtral-4l-fp32": ("mixtral-4l", 4, 512, "fp32", False, "adamw"),
    "mixtral-4l-bf16-mixed": ("mixtral-4l", 4, 512, "bf16-mixed", False, "adamw"),
    "mixtral-4l-bf16": ("mixtral-4l", 4, 512, "bf16", False, "adamw"),
}
# Held out: other batches and sequence lengths of the same models, measured after the step-time
# model was built from the cases above, to check it on steps it was not shaped on
# (tests/data/reference/training/h100-train-held-out.json).
HELD_OUT = {
    "gpt2-b4-s512-bf16-mixed": ("gpt2", 4, 512, "bf16-mixed", False, "adamw"),
    "gpt2-b16-s256-fp32-ckpt": ("gpt2", 16, 256, "fp32", True, "adamw"),
    "llama-4l-b2-s2048-bf16": ("llama-4l", 2, 2048, "bf16", False, "adamw"),
    "llama-4l-b8-s512-bf16-mixed-ckpt": ("llama-4l", 8, 512, "bf16-mixed", True, "adamw"),
    "mixtral-4l-b8-s256-bf16-mixed": ("mixtral-4l", 8, 256, "bf16-mixed", False, "adamw"),
    "mixtral-4l-b2-s1024-bf16-sgd": ("mixtral-4l", 2, 1024, "bf16", False, "sgd"),
}
ALL_CASES = {**CASES, **HELD_OUT}
TIMED_STEPS = 5


def build_model(model_key, precision, ckpt, device="cuda"):
    """The model of MODELS[model_key] as the cases train it: random weights, sdpa, train mode.
    Returns (model, config, model_type, fields)."""
    import torch
    import transformers

    fields = dict(MODELS[model_key])
    model_type = fields.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    model = model.to(device).train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, config, model_type, fields


def run_case(name):
    import torch
    import transformers
    import torch.utils.flop_counter as flop_counter

    # The counter's SDPA formulas assert as many KV heads as query heads; sdpa with enable_gqa
    # (grouped-query attention under bf16) shares each KV head among a group of query heads, and
    # its dense matrix FLOPs are those of the query heads: count it with K and V widened to them.
    def widened(count):
        def f(*shapes, **kw):
            *lead, q, k, v = shapes
            wide = lambda t: (t[0], q[1], *t[2:])
            return count(*lead, q, wide(k), wide(v), **kw)
        return f
    flop_counter.sdpa_flop_count = widened(flop_counter.sdpa_flop_count)
    flop_counter.sdpa_backward_flop_count = widened(flop_counter.sdpa_backward_flop_count)

    model_key, batch, seq, precision, ckpt, optimizer = ALL_CASES[name]
    model, config, model_type, fields = build_model(model_key, precision, ckpt)
    if optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-5)
    x = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def forward_backward():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        loss.backward()

    at_rest, peak, times, counter = measure_step(forward_backward, opt)
    counted = counter.get_total_flops()
    by_module = {m: {str(op): int(n) for op, n in ops.items()} for m, ops in counter.get_flop_counts().items()}
    params = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    # Experts run through grouped_mm are not counted (issue 17; on CPU transformers 5.17 the counter
    # saw 0.2% of them): the experts modules' count is replaced by the count by hand. Each routed
    # token runs the gate, up and down projections of its expert.
    expert_flops_by_hand = 0
    experts_counted = None
    if model_type == "mixtral":
        experts_counted = sum(n for m, ops in by_module.items() if m.endswith(".experts") for n in ops.values())
        routed = batch * seq * config.num_experts_per_tok
        forward = 2 * 3 * config.hidden_size * config.intermediate_size * routed * config.num_hidden_layers
        passes = 3 + (1 if ckpt else 0)  # forward, backward (twice the forward), recomputed forward
        expert_flops_by_hand = forward * passes
    return {
        "case": name, "model": model_key, "config": {"model_type": model_type, **fields}, "batch": batch, "seq": seq,
        "precision": precision, "gradient_checkpointing": ckpt, "optimizer": optimizer,
        "params": params, "param_bytes": param_bytes,
        "at_rest_bytes": at_rest, "peak_bytes": peak,
        "step_time_s": times[len(times) // 2], "step_times_s": times,
        "flop_counter_flops": counted,
        "experts_counted_flops": experts_counted, "expert_flops_by_hand": expert_flops_by_hand,
        "gemm_dense_flops": counted - (experts_counted or 0) + expert_flops_by_hand,
        "experts_implementation": getattr(config, "_experts_implementation", None),
        "flops_by_module": {m: ops for m, ops in by_module.items() if m.count(".") <= 1 or m.endswith(".experts")},
        "torch": torch.__version__, "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(),
    }


def cuda_event_times(fn, reps, warm=0, before=None):
    """fn's wall time on the GPU's stream (CUDA events around each call), `reps` calls after
    `warm` untimed ones, in seconds; `before` (say, an L2 flush) runs ahead of each, untimed."""
    import torch

    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def measure_step(forward_backward, opt, before_flops=None):
    """A step is forward_backward(); opt.step(); opt.zero_grad(set_to_none=True). Step 1 allocates
    the optimizer's states; memory at rest after it; step 2's max_memory_allocated is the peak;
    TIMED_STEPS more with CUDA events, sorted; `before_flops(step)` may run more steps (a profiled
    one); then forward_backward under FlopCounterMode. Returns (at_rest, peak, times, counter)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    def step():
        forward_backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    at_rest = torch.cuda.memory_allocated()  # weights + optimizer states, gradients freed
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    times = cuda_event_times(step, TIMED_STEPS)
    if before_flops:
        before_flops(step)
    counter = FlopCounterMode(display=False)
    with counter:
        forward_backward()
    opt.zero_grad(set_to_none=True)
    return at_rest, peak, sorted(times), counter


def cpu_name():
    """The host's CPU model, as /proc/cpuinfo names it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def run_each_case(script, run_case, summary, doc, cases=None):
    """A script's command line: `--case NAME` runs one case and prints its JSON; `OUT.json
    [CASE...]` runs the cases (all of `cases`, by default this script's CASES), each in a fresh
    process of `script`, printing `summary(result)` per case and writing OUT.json after every case
    (a killed run keeps what it had). Exits 1 when a case failed."""
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2])))
        return
    if len(sys.argv) < 2:
        sys.exit(doc)
    out_path = sys.argv[1]
    results, failures = [], {}
    for name in sys.argv[2:] or (cases if cases is not None else CASES):
        started = time.time()
        p = subprocess.run([sys.executable, script, "--case", name], capture_output=True, text=True)
        if p.returncode != 0:
            failures[name] = p.stderr.strip().splitlines()[-3:]
            print(f"{name}: failed: {failures[name]}", flush=True)
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{name}: {summary(r)} ({time.time() - started:.0f} s)", flush=True)
        with open(out_path, "w") as f:
            json.dump({"script": "scripts/" + os.path.basename(script), "cases": results, "failures": failures}, f, indent=1)
    sys.exit(1 if failures else 0)


def main():
    run_each_case(__file__, run_case,
                  lambda r: f"peak {r['peak_bytes'] / 1e9:.2f} GB, at rest {r['at_rest_bytes'] / 1e9:.2f} GB, "
                            f"step {r['step_time_s'] * 1e3:.1f} ms, {r['gemm_dense_flops'] / 1e12:.2f} TFLOP",
                  __doc__)


if __name__ == "__main__":
    main()
