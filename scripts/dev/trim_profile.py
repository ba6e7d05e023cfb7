#!/usr/bin/env python3
"""Trims a `rooflens profile --json` result to what a CPU test re-predicts against.

  scripts/dev/trim_profile.py RESULT.json CASE "COMMAND" MACHINE DATE OUT.json
      each measured layer's name, op and CUPTI median (L2 cold): {"layers": [...]}
  scripts/dev/trim_profile.py --replay RESULT.json CASE "COMMAND" MACHINE DATE OUT.json
      a multi-GPU run (--tp N, --ep N): every node's name, op, prediction and GPU 0's median (null
      where the node ran no kernel), and the run's tensor_parallel summary (each GPU's total):
      {"nodes": [...], "tensor_parallel": {...}}, as tests/data/reference/multi_gpu/ keeps them
"""
import json
import sys


def measured_median(node):
    m = node.get("measured") or {}
    return m["median_s"] if m.get("status") == "measured" else None


def main(args):
    replay = args[0] == "--replay"
    if replay:
        args = args[1:]
    if len(args) != 6:
        sys.exit(__doc__)
    result_path, case, command, machine, date, out_path = args
    with open(result_path) as f:
        result = json.load(f)
    provenance = {"script": "rooflens profile --json, trimmed by scripts/dev/trim_profile.py"
                            + (" --replay" if replay else ""),
                  "arguments": command, "machine": machine, "date": date}
    doc = {"provenance": provenance, "gpu": result["device"].get("name", ""), "case": case,
           "command": command}
    if replay:
        doc["what"] = (f"rooflens profile ({case}) one rank process per GPU, the collectives through NCCL; "
                       "per node GPU 0's median (CUPTI, L2 cold) and the prediction of that binary; "
                       "tensor_parallel keeps each GPU's total")
        doc["tensor_parallel"] = result["tensor_parallel"]
        doc["nodes"] = [{"name": n["name"], "op": n["op"], "predicted_s": n["predicted_s"],
                         "measured_s": measured_median(n)} for n in result["nodes"]]
    else:
        doc["layers"] = [{"name": n["name"], "op": n["op"], "measured_s": measured_median(n)}
                         for n in result["nodes"] if measured_median(n) is not None]
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
