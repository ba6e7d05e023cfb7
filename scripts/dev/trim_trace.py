#!/usr/bin/env python3
"""Cut a `rooflens profile --record` trace down to its first N layers for tests/data.

Keeps every record of those layers (kernels, memsets, API calls, external ids, NVTX ranges) and
the unattributed activities (L2 flushes) between them, so the cut is still a real trace.
usage: trim_trace.py IN OUT N_LAYERS
"""
import json
import sys

src, dst, n_layers = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = json.load(open(src))
layer_of = lambda ext: (ext >> 20) - 1
ext = {e["correlation"]: e["external"] for e in t["externals"]}
layers = sorted({layer_of(x) for x in ext.values()})[:n_layers]
keep_layers = set(layers)
keep_corr = {c for c, x in ext.items() if layer_of(x) in keep_layers}
acts = [a for a in t["activities"] if a["correlation"] in keep_corr]
end = max(a["end"] for a in acts)
begin = min(a["start"] for a in acts)
acts += [a for a in t["activities"] if a["correlation"] not in ext and begin <= a["start"] <= end]
names = set()
for r in t["ranges"]:
    names.add(r["name"])
t["activities"] = sorted(acts, key=lambda a: a["start"])
t["externals"] = [e for e in t["externals"] if e["correlation"] in keep_corr]
t["api_calls"] = [c for c in t["api_calls"] if c["correlation"] in keep_corr]
r_begin = min(c["start"] for c in t["api_calls"])
r_end = max(c["end"] for c in t["api_calls"])
t["ranges"] = [r for r in t["ranges"] if r["start"] <= r_end and r["end"] >= r_begin]
json.dump(t, open(dst, "w"), indent=0)
print(f"kept layers {layers}: {len(t['activities'])} activities, {len(t['api_calls'])} API calls, {len(t['ranges'])} ranges")
