#!/usr/bin/env python3
"""How fast PyTorch's grouped GEMMs stream an MoE layer's expert weights at few rows an expert
(the decode of an expert-parallel deployment), beside the HBM bandwidth rooflens prices an MoE
node at when no table covers it (docs/serving.md, the DeepSeek-R1 point).

DeepSeek-V3's routed experts on one GPU of eight (32 experts, hidden 7168, expert width 2048):
the fused gate/up projection (7168 -> 4096) and the down projection (2048 -> 7168), each one
grouped GEMM over the 32 experts with `rows` tokens each: torch._grouped_mm in bf16 and, where
this PyTorch has it, torch._scaled_grouped_mm in fp8 (e4m3, row-wise scales). Per case the median
of 50 CUDA-event timings after 5 warm-ups (the weights, 0.47-0.94 GB, do not fit in L2) and the
weights' bytes over that time.

    python3 moe_grouped_gemm.py OUT.json

With --grid, the points of calibrate's expert tables (moe.bf16, moe.fp8: experts, rows a expert,
n, k; one projection, weights [experts, n, k]) that deployments' MoE layers sit near, each timed
as calibrate times a point: kernel time under the profiler (CUPTI), L2 flushed before each call,
for torch._grouped_mm, torch._scaled_grouped_mm and torch.bmm (cuBLAS's strided batched GEMM, the
harness's kernel):

    python3 moe_grouped_gemm.py --grid OUT.json

With --table, the grouped kernels engines run as tables of their own: every point the profile's
expert tables (moe.bf16, moe.fp8) measured, timed on torch._grouped_mm (bf16) and
torch._scaled_grouped_mm (fp8, row-wise scales, bf16 out) as above, written as moe_grouped.bf16
and moe_grouped.fp8 with the same axes and grid (null where the profile's point is); --merge puts
them into a profile, which `rooflens serve` then prices MoE projections from:

    python3 moe_grouped_gemm.py --table PROFILE.json OUT.json
    python3 moe_grouped_gemm.py --merge OUT.json PROFILE.json
"""
import json
import statistics
import sys

try:
    import torch
except ImportError:  # --merge runs where PyTorch is not installed
    torch = None

from profile_tables import merge_tables  # same folder
from training_references import cuda_event_times  # same folder: CUDA events around each call


def timed(fn, reps=50, warm=5):
    return statistics.median(cuda_event_times(fn, reps, warm))


def main(out_path):
    experts, hidden, inter = 32, 7168, 2048
    rows_list = [8, 16, 32, 64, 128]
    rows_out = []
    for name, k, n in (("gate_up", hidden, 2 * inter), ("down", inter, hidden)):
        w16 = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.02
        for rows in rows_list:
            x16 = torch.randn(experts * rows, k, device="cuda", dtype=torch.bfloat16)
            offs = torch.arange(rows, experts * rows + 1, rows, device="cuda", dtype=torch.int32)
            row = {"projection": name, "experts": experts, "rows_per_expert": rows, "k": k, "n": n}
            t = timed(lambda: torch._grouped_mm(x16, w16.transpose(-2, -1), offs=offs))
            row["bf16_s"] = t
            row["bf16_weight_gbps"] = experts * n * k * 2 / t / 1e9
            if hasattr(torch, "_scaled_grouped_mm"):
                try:
                    w8 = w16.to(torch.float8_e4m3fn)
                    x8 = x16.to(torch.float8_e4m3fn)
                    sx = torch.ones(experts * rows, device="cuda", dtype=torch.float32)
                    sw = torch.ones(experts, n, device="cuda", dtype=torch.float32)
                    t8 = timed(lambda: torch._scaled_grouped_mm(x8, w8.transpose(-2, -1), sx, sw, offs=offs,
                                                                out_dtype=torch.bfloat16))
                    row["fp8_s"] = t8
                    row["fp8_weight_gbps"] = experts * n * k / t8 / 1e9
                except Exception as e:  # noqa: BLE001 - recorded: this PyTorch's fp8 grouped GEMM refused
                    row["fp8_error"] = f"{type(e).__name__}: {e}"[:300]
            rows_out.append(row)
            print(json.dumps(row), flush=True)
        del w16
        torch.cuda.empty_cache()
    doc = {"what": __doc__.split("\n\n")[0], "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "rows": rows_out}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


def kernel_seconds(fn, reps=20, warm=3):
    """fn's GPU kernel time per call (CUPTI, through the profiler), the L2 flushed before each."""
    from torch.profiler import ProfilerActivity, profile

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    total, names = 0.0, set()
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA or "Fill" in e.name or "fill" in e.name:
            continue
        total += e.device_time / 1e6
        names.add(e.name[:80])
    return total / reps, sorted(names)


def grid_rows():
    for experts in (8, 32, 128):
        for n, k in ((2048, 8192), (8192, 2048), (512, 2048), (2048, 512)):
            if experts == 128 and n * k > 2048 * 8192 // 2:
                continue  # 4 GiB of weights a call; calibrate leaves such points to the fit
            for rows in (4, 16, 64, 256):
                yield experts, rows, n, k


def main_grid(out_path):
    out = []
    for experts, rows, n, k in grid_rows():
        w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.02
        x = torch.randn(experts * rows, k, device="cuda", dtype=torch.bfloat16)
        offs = torch.arange(rows, experts * rows + 1, rows, device="cuda", dtype=torch.int32)
        row = {"experts": experts, "rows": rows, "n": n, "k": k}
        row["grouped_mm_s"], row["grouped_mm_kernels"] = kernel_seconds(
            lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs))
        x3 = x.view(experts, rows, k)
        row["bmm_s"], row["bmm_kernels"] = kernel_seconds(lambda: torch.bmm(x3, w.transpose(-2, -1)))
        try:
            w8, x8 = w.to(torch.float8_e4m3fn), x.to(torch.float8_e4m3fn)
            sx = torch.ones(experts * rows, device="cuda", dtype=torch.float32)
            sw = torch.ones(experts, n, device="cuda", dtype=torch.float32)
            row["scaled_grouped_mm_fp8_s"], row["scaled_grouped_mm_kernels"] = kernel_seconds(
                lambda: torch._scaled_grouped_mm(x8, w8.transpose(-2, -1), sx, sw, offs=offs,
                                                 out_dtype=torch.bfloat16))
            del w8, x8
        except Exception as e:  # noqa: BLE001 - recorded: this PyTorch's fp8 grouped GEMM refused
            row["fp8_error"] = f"{type(e).__name__}: {e}"[:300]
        out.append(row)
        print(json.dumps({k2: v for k2, v in row.items() if not k2.endswith("kernels")}), flush=True)
        del w, x
        torch.cuda.empty_cache()
    doc = {"what": "calibrate's expert-table points timed on PyTorch's kernels (moe_grouped_gemm.py --grid)",
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": out}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


def grouped_seconds(dtype, experts, rows, n, k):
    """One point of an expert table on PyTorch's grouped kernel for `dtype` ("bf16" or "fp8")."""
    w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    x = torch.randn(experts * rows, k, device="cuda", dtype=torch.bfloat16)
    offs = torch.arange(rows, experts * rows + 1, rows, device="cuda", dtype=torch.int32)
    if dtype == "bf16":
        t, _ = kernel_seconds(lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs))
    else:
        w8, x8 = w.to(torch.float8_e4m3fn), x.to(torch.float8_e4m3fn)
        del w
        sx = torch.ones(experts * rows, device="cuda", dtype=torch.float32)
        sw = torch.ones(experts, n, device="cuda", dtype=torch.float32)
        t, _ = kernel_seconds(lambda: torch._scaled_grouped_mm(x8, w8.transpose(-2, -1), sx, sw, offs=offs,
                                                               out_dtype=torch.bfloat16))
    torch.cuda.empty_cache()
    return t


def main_table(profile_path, out_path):
    with open(profile_path) as f:
        profile = json.load(f)
    tables = {}
    for dtype in ("bf16", "fp8"):
        src = profile["tables"][f"moe.{dtype}"]
        grid, seconds = src["grid"], []
        index = [0] * len(grid)
        for flat, measured in enumerate(src["seconds"]):
            rest = flat  # row-major, the last axis fastest (as rooflens lays tables out)
            for a in reversed(range(len(grid))):
                index[a] = rest % len(grid[a])
                rest //= len(grid[a])
            experts, rows, n, k = (int(grid[a][index[a]]) for a in range(4))
            seconds.append(None if measured is None else grouped_seconds(dtype, experts, rows, n, k))
        tables[f"moe_grouped.{dtype}"] = {"axes": src["axes"], "grid": grid, "seconds": seconds}
        print(f"moe_grouped.{dtype}: {sum(v is not None for v in seconds)} points", flush=True)
    doc = {"script": "scripts/gpu/moe_grouped_gemm.py --table", "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "profile": profile_path, "tables": tables}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


def merge(measured_path, profile_path):
    merge_tables(measured_path, profile_path, lambda m: {f"table {key}": (
        f"scripts/gpu/moe_grouped_gemm.py --table on {m['gpu']}: PyTorch {m['torch']}'s grouped GEMM "
        "(torch._grouped_mm; fp8 torch._scaled_grouped_mm, row-wise scales), kernel time under CUPTI, "
        "L2 flushed, at the points of the profile's moe table") for key in m["tables"]})


if __name__ == "__main__":
    if sys.argv[1] == "--grid":
        main_grid(sys.argv[2])
    elif sys.argv[1] == "--table":
        main_table(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--merge":
        merge(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
