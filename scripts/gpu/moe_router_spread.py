#!/usr/bin/env python3
"""How many experts a random-weight MoE model's router picks, layer by layer: why
serving_closed_loop.py routes by a hash instead (docs/serving.md, "An MoE closed loop").

Qwen3-30B-A3B built as serving_closed_loop.py builds it (random bf16 weights), one 512-token
prompt of distinct tokens through every layer with the router's own top-8 counted per layer; then
one gate_up projection of 512 tokens under a uniform top-8 on fused_moe_triton.py's wide tile
(kernel time under CUPTI, L2 flushed).

    python3 moe_router_spread.py OUT.json      (from scripts/gpu, with the checkout's samples/)
"""
import json
import os
import sys

import torch

import serving_closed_loop as loop  # same folder
from fused_moe_triton import align_on_gpu, decode_tile, kernel_seconds, moe_projection

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main(out_path):
    c = json.load(open(os.path.join(ROOT, "samples/configs/qwen3-30b-a3b/config.json")))
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    out = {}
    with torch.inference_mode():
        m = loop.Llama(c, 4, 700, "cuda")
        touched = []

        def own_router(p, x, key, layer):  # the router's top-8, counted
            weights, chosen = torch.softmax((x @ p["router"].t()).float(), -1).topk(m.topk, -1)
            touched.append(int(torch.unique(chosen).numel()))
            return weights / weights.sum(-1, keepdim=True), chosen

        m.route = own_router
        for name, rid in (("probe prefill 512", 0), ("loop prompt 512", 3)):
            touched.clear()
            toks = torch.tensor([loop.prompt_token(rid, j, c["vocab_size"]) for j in range(512)], device="cuda")
            pre = [(0, 0, 512, 0, m.prefill_mask(512, 0))]
            m.forward(toks, torch.arange(512, device="cuda"), 1, None, pre, torch.tensor([511], device="cuda"))
            out[name] = list(touched)
            print(name, touched, flush=True)
        x = torch.randn(512, c["hidden_size"], device="cuda", dtype=torch.bfloat16)
        routed = torch.stack([torch.randperm(m.experts, device="cuda")[:m.topk] for _ in range(512)]).flatten()
        tile = decode_tile(routed.numel(), m.experts)
        ids, blocks = align_on_gpu(routed, m.experts, tile[0])
        w = m.layers[0]["gate_up"]
        s = kernel_seconds(lambda: moe_projection(x, w, ids, blocks, routed.numel(), m.topk, tile))
        print(f"gate_up, 512 tokens, uniform top-{m.topk}, tile {tile}: {s * 1e6:.1f} us", flush=True)
        out["gate_up_512_uniform_s"] = s
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
