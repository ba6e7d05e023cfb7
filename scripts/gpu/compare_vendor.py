#!/usr/bin/env python3
"""Side by side: the replay's kernels (bench/bench_vendor.cpp --out ours.json) against PyTorch's
on the same shapes (scripts/gpu/torch_kernel_reference.py --out torch.json), both CUPTI kernel time
with L2 flushed before each sample. Prints a Markdown table (docs/profile.md) and exits 1 when a
row is more than --limit (default 15%) slower than PyTorch.

    python3 scripts/gpu/compare_vendor.py ours.json torch.json [--limit 0.15]
"""
import argparse
import json
import sys


def fastest_torch_attention(row):
    """PyTorch's default backend (what a user gets) and the fastest backend that ran."""
    b = row["backends"]
    default = b.get("default", {}).get("cold_s")
    ran = {k: v["cold_s"] for k, v in b.items() if "cold_s" in v and v["cold_s"]}
    best = min(ran.items(), key=lambda kv: kv[1]) if ran else (None, None)
    return default, best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("torch")
    ap.add_argument("--limit", type=float, default=0.15)
    args = ap.parse_args()
    ours = json.load(open(args.ours))
    ref = json.load(open(args.torch))
    worst = []
    print(f"GPU: {ours['gpu']} (ours) / {ref['gpu']} (PyTorch {ref['torch']}, cuDNN {ref['cudnn']})\n")
    print("| layer | what ran | rooflens, L2 cold | PyTorch, L2 cold | vs PyTorch | rooflens, L2 hot | PyTorch, L2 hot | vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|")

    def us(t):
        return f"{t * 1e6:.1f} us" if t else "-"

    def rel(a, b):
        return f"{(a / b - 1) * 100:+.1f}%" if a and b else "-"

    def line(name, t_ours, label, t_ref, hot_ours=None, hot_ref=None, ref_note=""):
        if t_ours and t_ref:
            worst.append((t_ours / t_ref - 1, name + " (cold)"))
        if hot_ours and hot_ref:
            worst.append((hot_ours / hot_ref - 1, name + " (hot)"))
        print(f"| {name} | {label} | {us(t_ours)} | {us(t_ref)}{ref_note} | {rel(t_ours, t_ref)} | {us(hot_ours)} | {us(hot_ref)} | "
              f"{rel(hot_ours, hot_ref)} |")

    gemm_ref = {(g["m"], g["n"], g["k"]): g for g in ref.get("gemm", []) if "layout" not in g}
    for r in ours["rows"]:
        if r["group"] != "gemm":
            continue
        g = gemm_ref.get((r["m"], r["n"], r["k"]))
        line(f"GEMM {r['name']} bf16", r.get("time_s"), r.get("library", ""), g and g["cold_s"], r.get("hot_s"), g and g["hot_s"])
    att_ref = {(a["batch"], a["q_heads"], a["kv_heads"], a["q_len"], a["kv_len"], a["head_dim"]): a for a in ref.get("attention", [])}
    for r in ours["rows"]:
        if r["group"] != "attention":
            continue
        # A decode's sliding window: PyTorch is timed over the keys the query sees (HF's
        # sliding-window cache keeps only those).
        keys = min(r["kv_len"], r["window"]) if r.get("window") and r["q_len"] == 1 else r["kv_len"]
        a = att_ref.get((r["batch"], r["q_heads"], r["kv_heads"], r["q_len"], keys, r["head_dim"]))
        default, (best_name, best) = fastest_torch_attention(a) if a else (None, (None, None))
        note = f" (default; fastest {best_name} {best * 1e6:.1f} us)" if best and default and best < default * 0.97 else ""
        hot_ref = a["backends"].get("default", {}).get("hot_s") if a else None
        line(f"SDPA {r['name']}", r.get("time_s"), r.get("library", ""), default, r.get("hot_s"), hot_ref, note)
    # PyTorch's faster layout per case (channels_last for tensor cores, NCHW for strict fp32): the
    # replay, too, keeps the faster of the two.
    conv_ref = {}
    for c in ref.get("resnet50_convs", []):
        key = (c["batch"], c["dtype"])
        if key not in conv_ref or c["total_cold_s"] < conv_ref[key]["total_cold_s"]:
            conv_ref[key] = c
    sums, hots, libs = {}, {}, {}
    for r in ours["rows"]:
        if r["group"] != "conv" or "time_s" not in r:
            continue
        key = (r["batch"], r["precision"])
        sums[key] = sums.get(key, 0) + r["time_s"]
        hots[key] = hots.get(key, 0) + r.get("hot_s", 0)
        layout = r.get("algorithm", "").split(" ")[0] if r["library"] == "cuDNN" else ""
        counts = libs.setdefault(key, {})
        what = f"{r['library']} {layout}".strip()
        counts[what] = counts.get(what, 0) + 1
    names = {"bf16": "bf16", "fp32": "fp32", "tf32": "fp32-tf32"}
    for (batch, prec), t in sorted(sums.items()):
        c = conv_ref.get((batch, names[prec]))
        what = ", ".join(f"{k} x{v}" for k, v in sorted(libs[(batch, prec)].items()))
        line(f"ResNet-50's 53 convolutions, batch {batch}, {prec}", t, what, c and c["total_cold_s"],
             hots[(batch, prec)], c and c["total_hot_s"], f" ({c['layout']})" if c else "")
    if worst:
        worst.sort(reverse=True)
        print(f"\nslowest against PyTorch: {worst[0][1]} {worst[0][0] * 100:+.1f}%")
        if worst[0][0] > args.limit:
            sys.exit(1)


if __name__ == "__main__":
    main()
