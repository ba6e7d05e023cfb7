#!/usr/bin/env python3
"""Runs a model the way users run it and records its timeline, for `rooflens compare` (issue 15).

    timeline_models.py MODEL PHASE MODE[,MODE...] OUTDIR [--steps N] [--device cuda|cpu]

MODEL   gpt2      HF GPT2LMHeadModel from GPT2Config() (GPT-2 small, 12 layers), random weights
        llama     HF LlamaForCausalLM, Llama-2-7B's shape with 4 layers, random weights
        resnet50  torchvision resnet50(weights=None), batch 1 (the shape of tests/data/onnx/resnet50-opset18.onnx)
        mobilenet torchvision mobilenet_v3_small(weights=None), batch 1 (tests/data/onnx/mobilenet_v3_small-opset17.onnx)
        llama-gqa HF LlamaForCausalLM, Llama-3.1-8B's shape (grouped-query attention, 8 KV heads) with 4
                  layers, random weights
PHASE   prefill (batch 1, 512 tokens for GPT-2, 2048 for Llama) or decode (one token per step after a
        prefill of as many, KV cache in HF's DynamicCache); resnet50: forward
MODE    vanilla    torch.profiler, activities CPU+CUDA, with_stack=True: OUTDIR/MODEL-PHASE.vanilla.json
        annotated  python/rooflens_annotate.py (record_function ranges) under torch.profiler without
                   with_stack: OUTDIR/MODEL-PHASE.annotated.json
        nvtx       python/rooflens_annotate.py with NVTX ranges only, no profiler: run it under
                   `rooflens record` (the timeline is record's file)
        plain      no annotation, no profiler: the baseline time per step
        static     decode only: the KV cache in HF's StaticCache (fixed shapes), eager, as vanilla
        graphs     decode only: the static step captured once in a torch.cuda.CUDAGraph and replayed,
                   as vanilla (the replay has no module calls: kernels only)
        compiled   torch.compile(model) (Inductor's default mode), as vanilla
Modes given together run in that order in one process (one model load). Every mode runs 2
warm-up steps, then N (default 5) timed ones (torch.profiler's schedule wraps each in a
"ProfilerStep#k" range); it prints
"step_ms MEDIAN" (CUDA events around each step) and writes the model's config to
OUTDIR/MODEL.config.json (LLMs) for `rooflens compare`. bf16, eager PyTorch, SDPA attention.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import rooflens_annotate  # noqa: E402

LLAMA_7B_SHAPE = dict(hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
                      num_hidden_layers=4, vocab_size=32000, max_position_embeddings=4096, rms_norm_eps=1e-5,
                      hidden_act="silu", tie_word_embeddings=False)


LLAMA_31_8B_SHAPE = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                         num_hidden_layers=4, vocab_size=128256, max_position_embeddings=8192, rms_norm_eps=1e-5,
                         hidden_act="silu", tie_word_embeddings=False, rope_theta=500000.0)


def build(name, device):
    torch.manual_seed(0)
    dtype = torch.bfloat16
    if name in ("resnet50", "mobilenet"):
        import torchvision
        make = torchvision.models.resnet50 if name == "resnet50" else torchvision.models.mobilenet_v3_small
        with torch.device(device):
            return make(weights=None).to(dtype).eval(), None
    import transformers
    if name == "gpt2":
        cfg = transformers.GPT2Config()
    elif name == "llama-gqa":
        cfg = transformers.LlamaConfig(**LLAMA_31_8B_SHAPE)
    else:
        cfg = transformers.LlamaConfig(**LLAMA_7B_SHAPE)
    cfg.dtype = "bfloat16"
    with torch.device(device):  # random weights made where they run: no 2 GB copy from the CPU
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=dtype)
    return model.eval(), cfg


def static_step_fn(model, cfg, device, tokens, graphs):
    """Decode with a StaticCache: one prefill, then steps at fixed shapes whose inputs (the next
    token, its position) live in the same buffers; with `graphs`, one step captured and replayed."""
    import transformers
    vocab = cfg.vocab_size
    cache = transformers.StaticCache(config=cfg, max_cache_len=tokens + 64)
    ids = torch.randint(0, vocab, (1, tokens), device=device)
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
    token = torch.randint(0, vocab, (1, 1), device=device)
    position = torch.tensor([tokens], device=device)

    def step():
        # The same position every step: the step's shapes and work stay those of `tokens` cached.
        return model(input_ids=token, past_key_values=cache, cache_position=position,
                     position_ids=position.unsqueeze(0), use_cache=True)

    if not graphs:
        return step
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        step()
    return graph.replay


def step_fn(name, phase, model, cfg, device):
    """A function running one step; for decode, the cache grows by one token per step."""
    if name == "mobilenet":
        x = torch.randn(1, 3, 224, 224, device=device, dtype=torch.bfloat16)
        return lambda: model(x)
    if name == "resnet50":
        x = torch.randn(1, 3, 224, 224, device=device, dtype=torch.bfloat16)
        return lambda: model(x)
    tokens = 512 if name == "gpt2" else 2048
    vocab = cfg.vocab_size
    if phase == "prefill":
        ids = torch.randint(0, vocab, (1, tokens), device=device)
        return lambda: model(input_ids=ids, use_cache=False)
    import transformers
    state = {}

    def reset():
        state["cache"] = transformers.DynamicCache()
        ids = torch.randint(0, vocab, (1, tokens), device=device)
        model(input_ids=ids, past_key_values=state["cache"], use_cache=True)
        state["next"] = torch.randint(0, vocab, (1, 1), device=device)

    reset()

    def step():
        out = model(input_ids=state["next"], past_key_values=state["cache"], use_cache=True)
        state["next"] = out.logits[:, -1:].argmax(-1)
        return out

    return step


def timed(run, steps, device, on_step=None):
    times = []
    for _ in range(steps):
        if device == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        else:
            t0 = time.perf_counter()
            run()
            times.append(1e3 * (time.perf_counter() - t0))
        if on_step:
            on_step()
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["gpt2", "llama", "llama-gqa", "resnet50", "mobilenet"])
    ap.add_argument("phase", choices=["prefill", "decode", "forward"])
    ap.add_argument("modes", help="vanilla, annotated, nvtx, plain; several joined by commas")
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    model, cfg = build(a.model, a.device)
    if cfg is not None:
        d = cfg.to_dict()
        d["torch_dtype"] = d["dtype"] = "bfloat16"
        with open(os.path.join(a.outdir, f"{a.model}.config.json"), "w") as f:
            json.dump(d, f, indent=1)
    eager_run = step_fn(a.model, a.phase, model, cfg, a.device)
    tokens = 512 if a.model == "gpt2" else 2048
    for mode in a.modes.split(","):
        if mode not in ("vanilla", "annotated", "nvtx", "plain", "static", "graphs", "compiled"):
            sys.exit(f"unknown mode {mode}")
        if mode in ("static", "graphs") and a.phase != "decode":
            sys.exit(f"{mode}: decode only")
        run = eager_run
        if mode in ("static", "graphs"):
            run = static_step_fn(model, cfg, a.device, tokens, mode == "graphs")
        elif mode == "compiled":
            compiled = torch.compile(model)
            run = step_fn(a.model, a.phase, compiled, cfg, a.device)
        handles = []
        if mode == "annotated":
            handles = rooflens_annotate.annotate(model, nvtx=False)
        elif mode == "nvtx":
            handles = rooflens_annotate.annotate(model, record_function=False)
        with torch.no_grad():
            timed(run, 2, a.device)  # warm-up: cuBLAS heuristics, allocator, lazy modules, compilation
            if mode in ("vanilla", "annotated", "static", "graphs", "compiled"):
                acts = [torch.profiler.ProfilerActivity.CPU]
                if a.device == "cuda":
                    acts.append(torch.profiler.ProfilerActivity.CUDA)
                path = os.path.join(a.outdir, f"{a.model}-{a.phase}.{mode}.json")
                sched = torch.profiler.schedule(wait=0, warmup=1, active=a.steps)
                with torch.profiler.profile(activities=acts, with_stack=mode != "annotated", schedule=sched,
                                            on_trace_ready=lambda p, path=path: p.export_chrome_trace(path)) as prof:
                    times = timed(run, a.steps + 1, a.device, on_step=prof.step)[1:]
            else:
                times = timed(run, a.steps, a.device)
        rooflens_annotate.remove(handles)
        print(f"{a.model} {a.phase} {mode}: step_ms {statistics.median(times):.4f} (median of {len(times)})", flush=True)


if __name__ == "__main__":
    main()
