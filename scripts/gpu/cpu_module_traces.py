#!/usr/bin/env python3
"""Real PyTorch profiler traces of HF models' module calls, on the CPU (no kernels), for the CPU tests
of `rooflens compare`'s module naming: torch.profiler with with_stack=True (vanilla: "nn.Module:
GPT2Block_1" events) and the same run annotated with python/rooflens_annotate.py (record_function
ranges named by module path), both by annotate(model) and by the global hooks of
`python -m rooflens_annotate`. Two forwards each, random weights from the configs in
tests/data/compare/. Only what `compare` reads is kept (module and record_function events); the
rest of each trace is dropped to keep the files small.

    python3 scripts/gpu/cpu_module_traces.py tests/data/traces   # needs torch and transformers
"""
import gzip
import json
import os
import sys

import torch
import transformers

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import rooflens_annotate  # noqa: E402


def model_from(config_file):
    with open(config_file) as f:
        d = json.load(f)
    cfg = transformers.AutoConfig.for_model(**d)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def trace(model, path, annotate):
    ids = torch.randint(0, model.config.vocab_size, (1, 16))
    handles = []
    if annotate == "hooks":
        handles = rooflens_annotate.annotate(model, nvtx=False)
    elif annotate == "global":
        handles = rooflens_annotate.annotate_globally(nvtx=False)
    acts = [torch.profiler.ProfilerActivity.CPU]
    with torch.no_grad(), torch.profiler.profile(activities=acts, with_stack=annotate == "vanilla") as prof:
        for _ in range(2):
            model(input_ids=ids, use_cache=False)
    rooflens_annotate.remove(handles)
    prof.export_chrome_trace(path + ".full")
    with open(path + ".full") as f:
        t = json.load(f)
    os.remove(path + ".full")
    keep = []
    for e in t["traceEvents"]:
        module = e.get("cat") == "python_function" and e.get("name", "").startswith("nn.Module: ")
        if module or e.get("cat") == "user_annotation":
            keep.append({k: e[k] for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur") if k in e})
    out = {"schemaVersion": t.get("schemaVersion"), "baseTimeNanoseconds": t.get("baseTimeNanoseconds"),
           "deviceProperties": [], "traceEvents": keep,
           "note": f"torch {torch.__version__}, transformers {transformers.__version__}, CPU; trimmed to module events"}
    with gzip.open(path, "wt") as f:
        json.dump(out, f)
    print(f"{path}: {len(keep)} events")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/traces"
    data = os.path.join(here, "..", "..", "tests", "data", "compare")
    for name in ("gpt2-2layer", "llama-2layer"):
        model = model_from(os.path.join(data, name + ".json"))
        trace(model, os.path.join(out, f"{name}-cpu-vanilla.json.gz"), "vanilla")
        trace(model, os.path.join(out, f"{name}-cpu-annotated.json.gz"), "hooks")
        trace(model, os.path.join(out, f"{name}-cpu-global.json.gz"), "global")


if __name__ == "__main__":
    main()
