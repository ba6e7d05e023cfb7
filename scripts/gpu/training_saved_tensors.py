#!/usr/bin/env python3
"""What autograd saves for the backward pass, per module and op, from real HF models (issue 17).

Runs on a CPU (torch 2.11, transformers 5.17): the models of scripts/gpu/training_references.py at a
small batch and sequence, one forward under torch.autograd.graph.saved_tensors_hooks (which
module saved what) and a walk of the autograd graph (which op saved it). Tensors that share a
storage (views, one tensor saved by two ops) are counted once, at the first module that saved it.
Per layer sums leave out parameters and attention (tagged `sdpa`, summed apart); the tensors of
layer 1 and outside the layers are listed one by one. Saved tensors of the CPU attention kernel
are tagged `sdpa` and summed apart: the GPU's flash and
memory-efficient kernels save q, k, v, the output and the log-sum-exp (not what the CPU path
saves), so rooflens takes attention's saved tensors from those kernels, not from this file.

  scripts/gpu/training_saved_tensors.py OUT.json
"""
import collections
import json
import sys

import torch
import transformers

from training_references import MODELS, build_model  # noqa: E402

BATCH, SEQ = 2, 256
PRECISIONS = ["fp32", "bf16", "bf16-mixed"]


def storage_key(t):
    return t.untyped_storage().data_ptr()


def run(model_key, precision):
    model, config, _, _ = build_model(model_key, precision, False, device="cpu")
    params = {storage_key(p) for p in model.parameters()}
    stack = [""]
    for name, module in model.named_modules():
        module.register_forward_pre_hook(lambda m, a, name=name: stack.append(name))
        module.register_forward_hook(lambda m, a, o: [stack.pop(), None][1])  # None: the output stays
    in_sdpa = [False]
    original_sdpa = torch.nn.functional.scaled_dot_product_attention

    def sdpa(*args, **kwargs):
        in_sdpa[0] = True
        try:
            return original_sdpa(*args, **kwargs)
        finally:
            in_sdpa[0] = False

    torch.nn.functional.scaled_dot_product_attention = sdpa
    seen = {}

    def pack(t):
        key = storage_key(t)
        if key not in seen:
            seen[key] = {"module": stack[-1], "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                         "storage_bytes": t.untyped_storage().nbytes(), "param": key in params,
                         "sdpa": in_sdpa[0], "ops": set()}
        return t

    x = torch.randint(0, config.vocab_size, (BATCH, SEQ))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
    torch.nn.functional.scaled_dot_product_attention = original_sdpa
    # Which op saved each storage: walk the graph's nodes and their _saved_ tensors.
    todo, visited = [loss.grad_fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or fn in visited:
            continue
        visited.add(fn)
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                try:
                    v = getattr(fn, attr)
                except Exception:
                    continue
                for t in (v if isinstance(v, (tuple, list)) else [v]):
                    if isinstance(t, torch.Tensor) and storage_key(t) in seen:
                        seen[storage_key(t)]["ops"].add(f"{type(fn).__name__}.{attr[7:]}")
        todo.extend(f for f, _ in fn.next_functions)
    records = []
    for r in seen.values():
        r["ops"] = sorted(r["ops"])
        records.append(r)
    by_module, by_layer = collections.defaultdict(int), collections.defaultdict(int)
    activation, weights_copies, sdpa_bytes = 0, 0, 0
    for r in records:
        if r["param"]:
            continue
        if r["sdpa"]:
            sdpa_bytes += r["storage_bytes"]
            continue
        by_module[r["module"]] += r["storage_bytes"]
        parts = r["module"].split(".")
        for i in range(len(parts) - 1):
            if parts[i] in ("layers", "h") and parts[i + 1].isdigit():
                by_layer[int(parts[i + 1])] += r["storage_bytes"]
                break
        activation += r["storage_bytes"]
    return {"model": model_key, "precision": precision, "batch": BATCH, "seq": SEQ,
            "saved_bytes_excluding_params_and_sdpa": activation, "cpu_sdpa_saved_bytes": sdpa_bytes,
            "saved_bytes_by_layer": {str(k): v for k, v in sorted(by_layer.items())},
            "saved_bytes_by_module": dict(by_module),
            "tensors": [r for r in records if any(f".{i}." in r["module"] or r["module"].endswith(f".{i}") for i in (1,))
                        or not any(ch.isdigit() for ch in r["module"])],
            "torch": torch.__version__, "transformers": transformers.__version__}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.set_num_threads(2)
    out = {"script": "scripts/gpu/training_saved_tensors.py", "cases": []}
    for model_key in MODELS:
        for precision in PRECISIONS:
            r = run(model_key, precision)
            out["cases"].append(r)
            print(f"{model_key} {precision}: {r['saved_bytes_excluding_params_and_sdpa'] / 2**20:.1f} MiB saved "
                  f"(+ CPU sdpa {r['cpu_sdpa_saved_bytes'] / 2**20:.1f} MiB)", flush=True)
            with open(sys.argv[1], "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
