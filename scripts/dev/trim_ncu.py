#!/usr/bin/env python3
"""Trims one case of scripts/gpu/ncu_suite.sh (its ncu CSV and rooflens result JSON) to what the
bound-class check needs: per replayed layer, the longest kernel of its first sample with Nsight
Compute's SpeedOfLight figures, and the class rooflens predicted for it then.

    python3 scripts/dev/trim_ncu.py CASE_DIR CASE_NAME OUT.json "<the suite's command, for provenance>"
"""
import csv
import datetime
import glob
import io
import json
import os
import re
import sys

METRICS = {"Duration": "duration_ns", "Compute (SM) Throughput": "sm_pct", "Memory Throughput": "memory_pct",
           "DRAM Throughput": "dram_pct", "L2 Cache Throughput": "l2_pct", "L1/TEX Cache Throughput": "l1_pct",
           "SM Frequency": "sm_ghz"}


def main():
    case_dir, case, out, command = sys.argv[1:5]
    result_path = [p for p in glob.glob(case_dir + "/*.json") if not p.endswith((".tuned.json", ".tuning.json"))][0]
    result = json.load(open(result_path))  # its file time is the run's date
    text = open(glob.glob(case_dir + "/*.ncu.csv")[0], errors="replace").read()
    text = text[text.find('"ID"'):]
    kernels = {}
    for row in csv.DictReader(io.StringIO(text)):
        m = re.match(r"(?:rooflens[@:])?(.*?)#0/(.*)$", row["Kernel Name"].strip())
        if not m or row["Metric Name"] not in METRICS:
            continue
        try:
            v = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        if row["Metric Name"] == "Duration":
            v *= {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}[row.get("Metric Unit", "ns")]
        if row["Metric Name"] == "SM Frequency":
            v *= {"hz": 1e-9, "khz": 1e-6, "mhz": 1e-3, "ghz": 1}[row.get("Metric Unit", "hz").lower()]
        k = kernels.setdefault(row["ID"], {"layer": m.group(1), "kernel": m.group(2)[-120:]})
        k[METRICS[row["Metric Name"]]] = v
    longest = {}
    for k in kernels.values():
        if k["layer"] not in longest or k.get("duration_ns", 0) > longest[k["layer"]].get("duration_ns", 0):
            longest[k["layer"]] = k
    nodes = {n["name"]: n for n in result["nodes"]}
    layers = []
    for layer, k in sorted(longest.items()):
        n = nodes.get(layer)
        if n is None:
            continue
        k["op"] = n["op"]
        k["predicted_bound"] = n.get("bound")
        k["predicted_s"] = n.get("predicted_s")
        layers.append(k)
    doc = {"provenance": {"script": "scripts/gpu/ncu_suite.sh (scripts/gpu/ncu_check.sh under Nsight Compute), trimmed by scripts/dev/trim_ncu.py",
                          "arguments": command, "machine": f"the GPU machine: {result.get('device', {}).get('measured_gpu') or 'NVIDIA H100 80GB HBM3'}, "
                          "ncu --clock-control none --section SpeedOfLight",
                          "date": datetime.date.fromtimestamp(os.path.getmtime(result_path)).isoformat()},
           "case": case, "model": result["model"]["path"], "command": result["tool"]["command"], "layers": layers}
    json.dump(doc, open(out, "w"), indent=1)
    print(f"{out}: {len(layers)} layers")


if __name__ == "__main__":
    main()
