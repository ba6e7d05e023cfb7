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
"""
import json
import statistics
import sys

import torch

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


if __name__ == "__main__":
    main(sys.argv[1])
