#!/usr/bin/env python3
"""Cut a recorded timeline down for tests/data, keeping it a real trace: the first N steps, and of
them only what `rooflens compare` reads. Nothing is rewritten: every kept event keeps its name,
times and ids.

    trim_timeline.py IN OUT [--steps N] [--frames]   (IN: a PyTorch profiler trace or a rooflens record
                                              file, .json or .json.gz; OUT is written gzip)

PyTorch traces keep kernels, memcpys and memsets, the runtime/driver calls that launched them,
nn.Module python_function events and record_function (user_annotation) ranges, each with the args
compare reads (correlation, stream, device, context, bytes); other events (aten ops, Python
frames, flows) are dropped; --frames keeps the program's own Python frames (not PyTorch's) around
the kept launches, which compare's hints name. Steps are the ProfilerStep#k ranges, else the model's root module calls
(the top-level nn.Module events, or the class-named root range python/rooflens_annotate.py writes).
Record files keep the activities launched in the kept steps, their launch calls, and the ranges
that overlap the steps.
"""
import argparse
import bisect
import gzip
import json
import re

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
CALL_CATS = {"cuda_runtime", "cuda_driver"}
KEEP_ARGS = {"correlation", "stream", "device", "context", "bytes", "External id"}


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def step_windows(ranges, n):
    """(start, end) of the first n steps: ProfilerStep ranges, else the top-level root ranges."""
    steps = sorted((r for r in ranges if re.match(r"ProfilerStep#\d+$", r["name"])), key=lambda r: r["start"])
    if not steps:
        roots = [r for r in ranges if r["root"]]
        steps = sorted(roots, key=lambda r: r["start"])
    if not steps:
        raise SystemExit("no steps found: neither ProfilerStep#k ranges nor root module calls")
    return [(r["start"], r["end"]) for r in steps[:n]]


def inside(t, windows):
    return any(a <= t <= b for a, b in windows)


def model_frame(name):
    """A frame of the program's own Python ("transformers/cache_utils.py(129): update"), the rule
    profiler/trace/pytorch_trace.cpp reads them by."""
    return ".py(" in name and not name.startswith("torch/") and "/torch/" not in name and not name.startswith("<")


def trim_chrome(t, n, frames=False):
    events = t["traceEvents"]
    ranges = []
    for e in events:
        if e.get("ph") != "X":
            continue
        name = e.get("name", "")
        module = e.get("cat") == "python_function" and name.startswith("nn.Module: ")
        if module or e.get("cat") == "user_annotation":
            ranges.append({"name": name, "start": e["ts"], "end": e["ts"] + e["dur"], "tid": e.get("tid"), "event": e,
                           "module": module, "root": False})
    # Roots: module calls (or class-named annotations) with no module call around them.
    for r in ranges:
        if r["module"] or re.match(r"[A-Z]\w*$", r["name"]):
            r["root"] = not any(o is not r and (o["module"] or re.match(r"[A-Z]\w*$", o["name"])) and o["tid"] == r["tid"]
                                and o["start"] <= r["start"] and r["end"] <= o["end"] and not re.match(r"ProfilerStep", o["name"])
                                for o in ranges)
    windows = step_windows(ranges, n)
    calls = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in CALL_CATS and inside(e["ts"], windows):
            calls[e.get("args", {}).get("correlation")] = e
    kept, used = [], set()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            corr = e.get("args", {}).get("correlation")
            if corr in calls:
                used.add(corr)
                kept.append(e)
    kept += [calls[c] for c in used]
    lo, hi = windows[0][0], windows[-1][1]
    kept += [r["event"] for r in ranges if r["end"] >= lo and r["start"] <= hi]
    # With --frames, the program's own Python frames (not PyTorch's) around the kept launches:
    # what `compare` names as having launched a kernel.
    if frames:
        launches = sorted((c["ts"], c.get("tid")) for c in (calls[u] for u in used))
        for e in events:
            if e.get("ph") == "X" and e.get("cat") == "python_function" and model_frame(e.get("name", "")) \
                    and e["ts"] + e["dur"] >= lo and e["ts"] <= hi:
                i = bisect.bisect_left(launches, (e["ts"], -1))
                if i < len(launches) and launches[i][0] <= e["ts"] + e["dur"]:
                    kept.append(e)
    for e in kept:
        if "args" in e:
            e["args"] = {k: v for k, v in e["args"].items() if k in KEEP_ARGS}
    kept.sort(key=lambda e: e["ts"])
    header = {k: v for k, v in t.items() if k != "traceEvents"}
    header["traceEvents"] = kept
    header["trimmed"] = f"first {len(windows)} steps of the original, scripts/dev/trim_timeline.py"
    return header, len(windows), sum(1 for e in kept if e.get("cat") in GPU_CATS)


def trim_record(t, n):
    ranges = [{"name": r["name"], "start": r["start"], "end": r["end"], "tid": r.get("tid"),
               "root": bool(re.match(r"[A-Z]\w*$", r["name"])), "record": r} for r in t["ranges"]]
    windows = step_windows(ranges, n)
    calls = {c["correlation"]: c for c in t["api_calls"] if inside(c["start"], windows)}
    t["activities"] = [a for a in t["activities"] if a["correlation"] in calls]
    used = {a["correlation"] for a in t["activities"]}
    t["api_calls"] = [c for c in calls.values() if c["correlation"] in used]
    lo, hi = windows[0][0], windows[-1][1]
    t["ranges"] = [r["record"] for r in ranges if r["end"] >= lo and r["start"] <= hi]
    t["notes"] = t.get("notes", []) + [f"trimmed to the first {len(windows)} steps (scripts/dev/trim_timeline.py)"]
    return t, len(windows), len(t["activities"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--frames", action="store_true",
                    help="PyTorch traces: keep the program's own Python frames around the kept launches")
    a = ap.parse_args()
    t = load(a.src)
    out, steps, gpu = trim_record(t, a.steps) if "trace_version" in t else trim_chrome(t, a.steps, a.frames)
    with gzip.open(a.dst, "wt") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"{a.dst}: {steps} steps, {gpu} GPU activities")


if __name__ == "__main__":
    main()
