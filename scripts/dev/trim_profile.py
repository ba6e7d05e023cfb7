#!/usr/bin/env python3
"""Trims a `rooflens profile --json` result to what a CPU test re-predicts against: each measured
layer's name, op and CUPTI median (L2 cold), with the run's provenance.

    scripts/dev/trim_profile.py RESULT.json CASE "COMMAND" MACHINE DATE OUT.json
"""
import json
import sys


def main(result_path, case, command, machine, date, out_path):
    with open(result_path) as f:
        result = json.load(f)
    layers = [{"name": n["name"], "op": n["op"], "measured_s": n["measured"]["median_s"]}
              for n in result["nodes"] if (n.get("measured") or {}).get("status") == "measured"]
    doc = {"provenance": {"script": "rooflens profile --json (scripts/gpu/profile_suite.sh), trimmed by "
                                    "scripts/dev/trim_profile.py to each measured layer's name, op and CUPTI median",
                          "arguments": command, "machine": machine, "date": date},
           "gpu": result["device"].get("name", ""), "case": case, "command": command, "layers": layers}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    main(*sys.argv[1:])
