#!/usr/bin/env python3
"""The host's time of a Hugging Face model's eager training step, per decoder layer and outside
the layers, on the machine it runs on (issue 17's step time; read by `--eager-host`).

Host cost in eager PyTorch does not depend on tensor sizes (no synchronisation in these steps),
so it is measured where the GPU is never the bottleneck: batch 1 x 16 tokens. For each model of
scripts/training_references.py, each precision and gradient checkpointing off/on, the model is
built with 1 and with 3 decoder layers; per phase (forward with the loss, backward, optimizer step
with zero_grad) the host time is the median of 15 steps after 3 warm-ups, the GPU synchronised
between phases so that none waits on the other. Per layer = (3 layers - 1 layer) / 2; outside the
layers = 1 layer - per layer. No profiler is loaded in this process (CUPTI slows every launch).

  scripts/eager_model_host.py OUT.json
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/eager_model_host.py $OUT/eager-models.json
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_references import MODELS  # noqa: E402

LAYERS = {"gpt2": "n_layer"}  # the config field of the layer count where it is not num_hidden_layers


def host_phases(model_key, precision, ckpt, layers, optimizer="adamw"):
    import torch
    import transformers

    fields = dict(MODELS[model_key])
    model_type = fields.pop("model_type")
    fields[LAYERS.get(model_type, "num_hidden_layers")] = layers
    config = transformers.AutoConfig.for_model(model_type, **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    model = model.to("cuda").train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5) if optimizer == "adamw" else torch.optim.SGD(model.parameters(), lr=1e-5)
    x = torch.randint(0, config.vocab_size, (1, 16), device="cuda")
    rows = []
    for i in range(18):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter()
        torch.cuda.synchronize()
        t4 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t5 = time.perf_counter()
        torch.cuda.synchronize()
        if i >= 3:
            rows.append((t1 - t0, t3 - t2, t5 - t4))
    del model, opt
    torch.cuda.empty_cache()
    return [statistics.median(r[k] for r in rows) for k in range(3)]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    import torch
    import transformers

    out = {"schema": "rooflens-eager-host-models", "torch": torch.__version__,
           "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name(),
           "tokens": 16, "layers_measured": [1, 3], "families": {}}
    cases = [(m, p, c) for m in MODELS for p in ("fp32", "bf16", "bf16-mixed") for c in (False, True)]
    for model_key, precision, ckpt in cases:
        one = host_phases(model_key, precision, ckpt, 1)
        three = host_phases(model_key, precision, ckpt, 3)
        per = [(b - a) / 2 for a, b in zip(one, three)]
        rest = [a - p for a, p in zip(one, per)]
        variant = precision + ("+checkpointing" if ckpt else "")
        out["families"].setdefault(model_key, {})[variant] = {
            "layer_forward_s": per[0], "layer_backward_s": per[1], "layer_optimizer_s": per[2],
            "outside_forward_s": rest[0], "outside_backward_s": rest[1], "outside_optimizer_s": rest[2],
            "one_layer_s": one, "three_layers_s": three}
        print(f"{model_key:11s} {variant:26s} per layer fwd {per[0] * 1e3:6.2f} bwd {per[1] * 1e3:6.2f} opt {per[2] * 1e3:5.2f} ms;"
              f" outside fwd {rest[0] * 1e3:6.2f} bwd {rest[1] * 1e3:6.2f} opt {rest[2] * 1e3:5.2f} ms", flush=True)
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
