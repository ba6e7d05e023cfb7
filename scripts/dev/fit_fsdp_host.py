#!/usr/bin/env python3
"""FSDP2's host costs for a device profile's "eager_host" (issue 32: `--phase train --dp N --zero 3`),
from scripts/gpu/multi_gpu_references.py train-host's measurements.

On 2 GPUs the FSDP2 step of a small model is bound by the host: the GPU idles while Python issues
each unit's all-gather, copies and hooks. train-host times each phase's host time (until the call
returns) for the same model unsharded ('plain', same GPU and process) and under FSDP2 (fully_shard
per decoder layer and the root), at several depths. What FSDP adds is the difference, per phase:

  forward  = forward_fixed  + layers x forward_layer     (the root unit, then one unit a layer)
  backward = backward_fixed + layers x backward_layer
  optimizer: a constant (AdamW over DTensors)

The lines go through the medians (over ranks and runs) at the fitting depths; the other cases are
held out and printed beside what the lines give. rooflens adds these host costs in the training
step's queue (analyzer/training/timeline.cpp) on top of the per-kernel costs.

  fit_fsdp_host.py MEASURED.json [--fit 2,8] [--write PROFILE.json]
"""
import argparse
import json
import statistics
import sys

PHASES = ("forward", "backward", "optimizer")


def differences(doc):
    """{(model_type, layers): {phase: [FSDP minus plain host seconds, one per rank and run]}}"""
    out = {}
    for run in doc["runs"]:
        plain = {(r["model_type"], r["layers"], r["rank"]): r for r in run["rows"] if r["mode"] == "plain"}
        for r in run["rows"]:
            if r["mode"] != "fsdp":
                continue
            p = plain[(r["model_type"], r["layers"], r["rank"])]
            d = out.setdefault((r["model_type"], r["layers"]), {k: [] for k in PHASES + ("host",)})
            for k in PHASES + ("host",):
                d[k].append(r[k + "_s"] - p[k + "_s"])
    return out


def fit(diffs, depths):
    lo, hi = (("llama", d) for d in depths)
    med = {key: {k: statistics.median(v) for k, v in diffs[key].items()} for key in (lo, hi)}
    span = hi[1] - lo[1]
    costs = {}
    for phase in ("forward", "backward"):
        slope = (med[hi][phase] - med[lo][phase]) / span
        costs[f"fsdp_{phase}_layer_s"] = slope
        costs[f"fsdp_{phase}_fixed_s"] = med[lo][phase] - slope * lo[1]
    costs["fsdp_optimizer_s"] = statistics.median(diffs[lo]["optimizer"] + diffs[hi]["optimizer"])
    return costs


def predicted(costs, layers):
    return {"forward": costs["fsdp_forward_fixed_s"] + layers * costs["fsdp_forward_layer_s"],
            "backward": costs["fsdp_backward_fixed_s"] + layers * costs["fsdp_backward_layer_s"],
            "optimizer": costs["fsdp_optimizer_s"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measured")
    ap.add_argument("--fit", default="2,8", help="the two Llama depths the lines go through")
    ap.add_argument("--write", metavar="PROFILE", help="merge the costs into this profile's eager_host")
    a = ap.parse_args()
    with open(a.measured) as f:
        doc = json.load(f)
    depths = [int(v) for v in a.fit.split(",")]
    diffs = differences(doc)
    costs = fit(diffs, depths)
    for k, v in costs.items():
        print(f"{k:26s} {v * 1e3:7.2f} ms")
    print(f"\n{'case':12s} {'phase':9s} {'measured (median, range)':>30s} {'fitted line':>12s}")
    for key in sorted(diffs):
        held = "" if key[0] == "llama" and key[1] in depths else "  held out"
        p = predicted(costs, key[1])
        p["host"] = sum(p.values())
        for phase in PHASES + ("host",):
            v = diffs[key][phase]
            print(f"{key[0]}-{key[1]}L{'':4s} {phase:9s} {statistics.median(v) * 1e3:10.2f} ms "
                  f"({min(v) * 1e3:5.1f}..{max(v) * 1e3:5.1f}) {p[phase] * 1e3:10.2f} ms{held}")
    if a.write:
        with open(a.write) as f:
            profile = json.load(f)
        host = profile.get("eager_host")
        if host is None:
            sys.exit(f"{a.write}: no eager_host object to add FSDP's costs to")
        host.update(costs)
        host["fsdp_source"] = (f"scripts/dev/fit_fsdp_host.py --fit {a.fit} on {doc['gpus']} x {doc['gpu']} "
                               f"(scripts/gpu/multi_gpu_references.py train-host), torch {doc['torch']}, "
                               f"transformers {doc['transformers']}: FSDP2 minus the unsharded step's host time")
        with open(a.write, "w") as f:
            json.dump(profile, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
