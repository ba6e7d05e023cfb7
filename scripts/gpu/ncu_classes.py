#!/usr/bin/env python3
"""Nsight Compute's class per layer (SpeedOfLight: SM and memory throughput as % of peak; a layer
is compute- or memory-bound when the larger reaches 60%, latency-bound otherwise, the rule rooflens
predicts with) against rooflens's predicted class. A layer of several kernels is judged by its
longest kernel.

    python3 scripts/gpu/ncu_classes.py result.json ncu.csv [--layers] [--measured timed.json]

--layers prints each layer's predicted class, the class of its measured time (profile's, by the
same rule) and the counters' class side by side. --measured takes the measured class from another
run's result (ncu_check.sh's CUPTI-timed run): the run under ncu times with CUDA events, which
there include ncu's work on every launch.
"""
import csv
import io
import json
import re
import sys
from collections import defaultdict


def layer_of(kernel_name):
    """The layer path from a kernel renamed by its NVTX range: "<layer>#0/<kernel>"."""
    m = re.match(r"(?:rooflens[@:])?(.*?)#0(?:/|$)", kernel_name.strip())
    return m.group(1) if m else None


def main():
    result, ncu_csv = sys.argv[1], sys.argv[2]
    nodes = {n["name"]: n for n in json.load(open(result))["nodes"]}
    timed = nodes
    if "--measured" in sys.argv:
        timed = {n["name"]: n for n in json.load(open(sys.argv[sys.argv.index("--measured") + 1]))["nodes"]}
    text = open(ncu_csv, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"{ncu_csv}: no ncu CSV in it")
    kernels = defaultdict(dict)  # (layer, kernel id) -> metrics
    for row in csv.DictReader(io.StringIO(text[start:])):
        layer = layer_of(row.get("Kernel Name", ""))
        if layer is None:
            continue
        value = row["Metric Value"].replace(",", "")
        try:
            v = float(value)
        except ValueError:
            continue
        if row["Metric Name"] == "Duration":  # to nanoseconds, whatever unit ncu chose
            v *= {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(row.get("Metric Unit", "nsecond"), 1)
        kernels[(layer, row["ID"])][row["Metric Name"]] = v
    per_layer = {}
    for (layer, _), m in kernels.items():
        dur = m.get("Duration", 0)
        if layer not in per_layer or dur > per_layer[layer].get("Duration", 0):
            per_layer[layer] = m
    agree = agree_measured = total = 0
    confusion = defaultdict(int)
    rows = []
    for layer, m in sorted(per_layer.items()):
        if layer not in nodes:
            continue
        sm, mem = m.get("Compute (SM) Throughput", 0), m.get("Memory Throughput", 0)
        counters = ("compute" if sm >= mem else "memory") if max(sm, mem) >= 60 else "latency"
        node = nodes[layer]
        predicted = node.get("bound", "-")
        # profile's class of the measured time, by the same rule as the prediction (docs/profile.md)
        measured = (timed.get(layer, {}).get("measured") or {}).get("bound", "-")
        total += 1
        agree += predicted == counters
        agree_measured += measured == counters
        confusion[(predicted, counters)] += 1
        rows.append((layer, node.get("op", "?"), predicted, measured, counters, sm, mem, m.get("Duration", 0)))
    if "--layers" in sys.argv:
        print(f"{'layer':48s} {'op':14s} {'predicted':9s} {'measured':9s} {'ncu':9s} {'SM%':>5s} {'mem%':>5s} {'ncu time':>9s}")
        for layer, op, p, me, c, sm, mem, dur in rows:
            flag = "" if p == c else "  <- differs"
            print(f"{layer[-48:]:48s} {op[:14]:14s} {p:9s} {me:9s} {c:9s} {sm:5.1f} {mem:5.1f} {dur / 1e3:8.1f}us{flag}")
    print(f"{result}: {agree}/{total} layers ({100 * agree / max(total, 1):.1f}%) get the class Nsight Compute measures")
    print(f"  the class of the measured time (profile's) agrees on {agree_measured}/{total}")
    for (p, m), c in sorted(confusion.items(), key=lambda kv: -kv[1]):
        print(f"  predicted {p:8s} ncu {m:8s} {c}")

if __name__ == "__main__":
    main()
