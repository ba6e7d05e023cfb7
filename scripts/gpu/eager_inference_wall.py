#!/usr/bin/env python3
"""How long a Hugging Face model's eager inference step takes on the wall clock, what the host
costs per kernel it launches, and what generate() adds per token (issue 27, `--runtime eager`).

Eager PyTorch issues each kernel after Python, the module calls and the dispatcher have done their
work; a decode step of a large model launches ~1,500 kernels and waits on the host, not the GPU.
Two kinds of case, each in a fresh process (bf16, SDPA, random weights made on the GPU, no_grad):

  calibration  tiny models (hidden 256) of the Llama, Qwen2 and GPT-2 families at 2 and 6 layers:
               the GPU never holds the host back, so the host's time per step is the wall time. Per
               phase, a line through (kernels rooflens counts, host seconds) over the cases gives the
               host's cost per kernel and per forward call; generate() at 32 new tokens against the
               decode steps gives what its loop adds per token.
  validation   the shipped configs (samples/configs: gpt2, llama-3.1-8b, qwen2-7b), decode at batch 1
               and 8 with 1,024 cached tokens (GPT-2: 512) and prefill of 2,048 tokens (GPT-2: 1,024):
               the wall time per step that `rooflens analyze --runtime eager` predicts.

A step's wall time: perf_counter around the step and a synchronize, the median of 20 steps after 3
warm-ups, in a process with no profiler loaded (CUPTI slows every launch). Decode steps run
model(next_token, past_key_values=DynamicCache) as generate() does. Then one step under
torch.profiler (CUDA only) counts the kernels (memcpy and memset included) and sums their time.

  scripts/gpu/eager_inference_wall.py OUT.json [CASE...]   each case in a fresh process
  scripts/gpu/eager_inference_wall.py --case NAME          one case, its JSON on stdout
Then, where rooflens is built: scripts/dev/fit_inference_host.py OUT.json PROFILE.json ROOFLENS fits the
calibration cases into the profile's "eager_host" (inference_* keys) and checks the validation cases.
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/gpu/eager_inference_wall.py $OUT/eager-inference.json
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from training_references import cpu_name, run_each_case  # noqa: E402
ROOT = os.path.join(HERE, "..", "..")
TINY = dict(hidden_size=256, intermediate_size=688, num_attention_heads=4, num_key_value_heads=4, vocab_size=32000)
# name: (family or config folder, layers (tiny only), phase, batch, tokens)
CASES = {}
for fam in ("llama", "qwen2", "gpt2"):
    for layers in (2, 6):
        CASES[f"tiny-{fam}-{layers}l-decode"] = (fam, layers, "decode", 1, 64)
        CASES[f"tiny-{fam}-{layers}l-prefill"] = (fam, layers, "prefill", 1, 16)
    CASES[f"tiny-{fam}-2l-generate"] = (fam, 2, "generate", 1, 16)
for cfg, ctx, seq in (("gpt2", 512, 1024), ("llama-3.1-8b", 1024, 2048), ("qwen2-7b", 1024, 2048)):
    CASES[f"{cfg}-decode-b1"] = (cfg, 0, "decode", 1, ctx)
    CASES[f"{cfg}-decode-b8"] = (cfg, 0, "decode", 8, ctx)
    CASES[f"{cfg}-prefill"] = (cfg, 0, "prefill", 1, seq)
GENERATE_TOKENS = 32


def build(source, layers):
    import torch
    import transformers
    if layers:
        if source == "gpt2":
            cfg = transformers.GPT2Config(n_embd=256, n_layer=layers, n_head=4, vocab_size=32000)
        elif source == "qwen2":
            cfg = transformers.Qwen2Config(num_hidden_layers=layers, **TINY)
        else:
            cfg = transformers.LlamaConfig(num_hidden_layers=layers, **TINY)
    else:
        cfg = transformers.AutoConfig.from_pretrained(os.path.join(ROOT, "samples", "configs", source))
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
    return model.eval(), cfg


def run_case(name):
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    source, layers, phase, batch, tokens = CASES[name]
    model, cfg = build(source, layers)
    vocab = cfg.vocab_size
    state = {}

    def reset():
        state["cache"] = transformers.DynamicCache()
        ids = torch.randint(0, vocab, (batch, tokens), device="cuda")
        model(input_ids=ids, past_key_values=state["cache"], use_cache=True)
        state["next"] = torch.randint(0, vocab, (batch, 1), device="cuda")

    if phase == "prefill":
        ids = torch.randint(0, vocab, (batch, tokens), device="cuda")

        def step():
            model(input_ids=ids, use_cache=False)
    elif phase == "decode":
        def step():
            out = model(input_ids=state["next"], past_key_values=state["cache"], use_cache=True)
            state["next"] = out.logits[:, -1:].argmax(-1)
    else:
        prompt = torch.randint(0, vocab, (batch, tokens), device="cuda")

        def step():
            model.generate(prompt, max_new_tokens=GENERATE_TOKENS, min_new_tokens=GENERATE_TOKENS, do_sample=False,
                           pad_token_id=0)

    out = {"case": name, "source": source, "layers": layers or cfg.num_hidden_layers, "phase": phase,
           "batch": batch, "tokens": tokens, "torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(), "cpu": cpu_name()}
    walls = []
    with torch.no_grad():
        for i in range(23 if phase != "generate" else 8):
            if phase == "decode" and i % 8 == 0:
                reset()  # the cache stays near `tokens`
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            if i >= 3:
                walls.append(time.perf_counter() - t0)
        if phase == "decode":
            reset()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
    gpu = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    out["wall_s"] = statistics.median(walls)
    out["wall_q1_s"], _, out["wall_q3_s"] = statistics.quantiles(walls, n=4)
    out["kernels"] = len(gpu)
    out["gpu_busy_s"] = sum(e.device_time_total for e in gpu) * 1e-6
    out["config"] = json.loads(cfg.to_json_string())  # what `rooflens analyze --runtime eager` is given for this case
    names = {}  # which kernels, for reading the difference from the prediction
    for e in gpu:
        names[e.name[:90]] = names.get(e.name[:90], 0) + 1
    out["kernel_names"] = names
    if phase == "generate":
        out["new_tokens"] = GENERATE_TOKENS
    return out


def main():
    run_each_case(__file__, run_case,
                  lambda r: f"wall {r['wall_s'] * 1e3:.2f} ms, {r['kernels']} kernels, GPU busy "
                            f"{r['gpu_busy_s'] * 1e3:.2f} ms", __doc__, CASES)


if __name__ == "__main__":
    main()
