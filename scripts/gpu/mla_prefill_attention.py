#!/usr/bin/env python3
"""DeepSeek-V3's prefill attention (MLA, not absorbed: 192-deep queries and keys, 128-deep values,
causal) as one GPU of a tensor-parallel deployment runs it, on PyTorch's SDPA backends: how far
the kernels engines use for it stay from the tensor-core roof that rooflens prices it at (no table
of these head dims).

    python3 mla_prefill_attention.py OUT.json

Kernel time under CUPTI (moe_grouped_gemm.py's kernel_seconds: L2 flushed before each call),
bf16, one sequence, heads 128 / tp for tp 8 and 1, prompts of 1k-8k tokens.
"""
import datetime
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from moe_grouped_gemm import kernel_seconds  # same folder

QK_DIM, V_DIM, HEADS = 192, 128, 128  # DeepSeek-V3: qk_nope 128 + qk_rope 64; v_head_dim 128
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def causal_flops(heads, seq):
    """Both GEMMs over the causal half: QK^T (QK_DIM deep) and PV (V_DIM deep), 2 FLOPs a MAC."""
    pairs = seq * (seq + 1) / 2
    return 2 * heads * pairs * (QK_DIM + V_DIM)


def main(out_path):
    rows = []
    for tp in (8, 1):
        heads = HEADS // tp
        for seq in (1024, 2048, 4096, 8192):
            q = torch.randn(1, heads, seq, QK_DIM, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(1, heads, seq, QK_DIM, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(1, heads, seq, V_DIM, device="cuda", dtype=torch.bfloat16)
            row = {"tp": tp, "heads": heads, "seq": seq, "flops": causal_flops(heads, seq)}
            for name, backend in BACKENDS.items():
                try:
                    with sdpa_kernel([backend]):
                        def call():
                            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                        call()
                        seconds, kernels = kernel_seconds(call)
                    row[name] = {"s": seconds, "TFLOPS": row["flops"] / seconds / 1e12, "kernels": kernels}
                except RuntimeError as e:  # a backend that does not take these head dims
                    row[name] = {"error": str(e).splitlines()[0][:160]}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items()}), flush=True)
            with open(out_path, "w") as f:
                json.dump({"provenance": {"script": "scripts/gpu/mla_prefill_attention.py", "arguments": "OUT.json",
                                          "machine": f"{torch.cuda.get_device_name()}, torch {torch.__version__}",
                                          "date": datetime.date.today().isoformat()},
                           "what": "DeepSeek-V3 MLA prefill attention, causal, bf16, qk 192 / v 128 deep, "
                                   "one sequence; kernel time under CUPTI, L2 flushed",
                           "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
