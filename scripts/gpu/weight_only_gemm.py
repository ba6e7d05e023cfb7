#!/usr/bin/env python3
"""PyTorch's weight-only GEMM kernels at the points of calibrate's woq.int4 / woq.int8 tables, for
the harness-vs-PyTorch table in docs/profile.md: torch._weight_int4pack_mm (tinygemm, 4-bit weights,
bf16 scales and zeros per group of 128) and torch._weight_int8pack_mm (8-bit weights, one scale a
channel) where this PyTorch runs them on CUDA, beside the dense bf16 GEMM of the same shape. Each
time is the kernels' GPU time per call under the profiler (CUPTI), the L2 flushed before each call,
as calibrate times a table point.

    python3 weight_only_gemm.py OUT.json [PROFILE.json]

With PROFILE.json (a profile with the woq tables), each row also carries the profile's time at that
point, and the ratio.
"""
import json
import sys

import torch

from moe_grouped_gemm import kernel_seconds  # same folder: CUPTI kernel time, L2 flushed

SHAPES = ((4096, 4096), (16384, 4096), (4096, 16384), (32768, 8192))  # (n, k), on the tables' grid
ROWS = (1, 4, 8, 16, 64, 256, 1024, 4096)
GROUP = 128


def torch_rows():
    for n, k in SHAPES:
        w = torch.randint(0, 16, (n, k), device="cuda", dtype=torch.int32)
        packed4 = None
        try:
            u8 = (w[:, 1::2] << 4 | w[:, ::2]).to(torch.uint8)
            packed4 = torch._convert_weight_to_int4pack(u8, 8)
        except Exception as e:  # noqa: BLE001 - recorded: this PyTorch has no CUDA int4 packing
            int4_error = f"{type(e).__name__}: {e}"[:200]
        sz = torch.rand(k // GROUP, n, 2, device="cuda", dtype=torch.bfloat16)
        w8 = (w - 8).to(torch.int8) * 9
        s8 = torch.rand(n, device="cuda", dtype=torch.bfloat16)
        dense = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for m in ROWS:
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            row = {"m": m, "n": n, "k": k}
            row["dense_bf16_s"], _ = kernel_seconds(lambda: x @ dense.t())
            if packed4 is not None:
                try:
                    row["int4_s"], row["int4_kernels"] = kernel_seconds(
                        lambda: torch._weight_int4pack_mm(x, packed4, GROUP, sz))
                except Exception as e:  # noqa: BLE001
                    row["int4_error"] = f"{type(e).__name__}: {e}"[:200]
            else:
                row["int4_error"] = int4_error
            try:  # PyTorch's int8 kernel is a plain loop: timed where it finishes in time
                if m > 16:
                    raise RuntimeError("not timed beyond 16 rows")
                row["int8_s"], row["int8_kernels"] = kernel_seconds(
                    lambda: torch._weight_int8pack_mm(x, w8, s8))
            except Exception as e:  # noqa: BLE001 - recorded: no CUDA int8 weight-only kernel
                row["int8_error"] = f"{type(e).__name__}: {e}"[:200]
            print(json.dumps({a: b for a, b in row.items() if not a.endswith("kernels")}), flush=True)
            yield row
        del w, w8, dense, packed4
        torch.cuda.empty_cache()


def table_time(profile, key, x):
    t = profile.get("tables", {}).get(key)
    if not t:
        return None
    idx = []
    for axis, v in zip(t["grid"], x):
        if v not in axis:
            return None
        idx.append(axis.index(v))
    flat = 0
    for axis, i in zip(t["grid"], idx):
        flat = flat * len(axis) + i
    return t["seconds"][flat]


def main(out_path, profile_path=None):
    profile = json.load(open(profile_path)) if profile_path else {}
    rows = list(torch_rows())
    for r in rows:
        for bits in ("int4", "int8"):
            ours = table_time(profile, f"woq.{bits}", (r["m"], r["n"], r["k"]))
            if ours is not None:
                r[f"rooflens_{bits}_s"] = ours
                if f"{bits}_s" in r:
                    r[f"rooflens_over_torch_{bits}"] = ours / r[f"{bits}_s"]
    doc = {"what": "PyTorch's weight-only GEMM kernels at calibrate's woq table points (weight_only_gemm.py)",
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "group": GROUP, "rows": rows}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
