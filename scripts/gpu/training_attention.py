#!/usr/bin/env python3
"""PyTorch's SDPA forward and backward as a training step runs them (the kernel PyTorch picks),
with and without dropout, on a grid of shapes (issue 17: attention's backward and dropout in the
step time). Per shape: forward and forward+backward medians (CUDA events, 20 runs after 5) and
the backward's ratio to the forward. Which kernel ran is not recorded (no profiler here). The
medians over the shapes are the constants of analyzer/core/formulas.hpp (AttentionTrainingTime), held
to this file by test_training.cpp.

  scripts/gpu/training_attention.py OUT.json
"""
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

from training_references import cuda_event_times  # noqa: E402


def timed(fn, reps=20, warm=5):
    return statistics.median(cuda_event_times(fn, reps, warm))


def main():
    rows = []
    for dtype in (torch.bfloat16, torch.float32):
        for (b, h, kv, s, d) in ((8, 12, 12, 1024, 64), (4, 16, 4, 1024, 128), (4, 16, 4, 512, 64), (2, 32, 8, 2048, 128), (4, 16, 16, 2048, 64)):
            for dropout in (0.0, 0.1):
                q = torch.randn(b, h, s, d, device="cuda", dtype=dtype, requires_grad=True)
                k = torch.randn(b, kv, s, d, device="cuda", dtype=dtype, requires_grad=True)
                v = torch.randn(b, kv, s, d, device="cuda", dtype=dtype, requires_grad=True)
                gqa = kv != h
                if gqa and dtype == torch.float32:
                    # transformers repeats K/V for the math path when the kernel takes no GQA
                    k2, v2 = k.repeat_interleave(h // kv, 1).detach().requires_grad_(), v.repeat_interleave(h // kv, 1).detach().requires_grad_()
                else:
                    k2, v2 = k, v
                kw = {"enable_gqa": True} if gqa and dtype != torch.float32 else {}
                fwd = lambda: F.scaled_dot_product_attention(q, k2, v2, is_causal=True, dropout_p=dropout, **kw)
                o = fwd()
                g = torch.randn_like(o)
                def both():
                    out = fwd()
                    out.backward(g)
                try:
                    tf, tb = timed(fwd), timed(both)
                except RuntimeError as e:
                    print("skip", dtype, b, h, kv, s, d, dropout, str(e)[:80])
                    continue
                r = {"dtype": str(dtype).split(".")[-1], "batch": b, "heads": h, "kv_heads": kv, "seq": s, "head_dim": d,
                     "dropout": dropout, "forward_s": tf, "forward_backward_s": tb, "backward_over_forward": (tb - tf) / tf}
                rows.append(r)
                print(f"{r['dtype']:9s} b{b} h{h}/{kv} s{s} d{d} p{dropout}: fwd {tf * 1e6:7.1f} us bwd {(tb - tf) * 1e6:7.1f} us ratio {r['backward_over_forward']:.2f}", flush=True)
                del q, k, v, k2, v2, o, g
    with open(sys.argv[1], "w") as f:
        json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
