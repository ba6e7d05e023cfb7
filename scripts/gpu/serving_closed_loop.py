#!/usr/bin/env python3
"""A closed-loop continuous-batching run on one GPU, to check `rooflens serve` (docs/serving.md).

A Llama-architecture model built from a config (random bf16 weights, no download), a static KV
cache of max_seqs slots, decode-only steps replayed from CUDA graphs (one per batch size), and
steps with prefill work run eagerly with the prompt's chunk mixed in: the linear layers see the
chunk's tokens and the decodes' tokens together, attention runs per sequence over its own cache.
The scheduler is the simulator's: running sequences first, then waiting ones while the token
budget and the slots allow; a closed loop of N clients, a new request as one finishes.

Writes JSON: per concurrency, mean/p50 TTFT and TPOT (seconds), output tokens/s, step counts.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Llama(torch.nn.Module):
    def __init__(self, c, max_seqs, max_len, device):
        super().__init__()
        self.c = c
        h, d = c["hidden_size"], c["head_dim"]
        self.hq, self.hkv, self.d = c["num_attention_heads"], c["num_key_value_heads"], d
        bf = dict(device=device, dtype=torch.bfloat16)
        g = torch.Generator(device=device).manual_seed(0)

        def w(*shape):
            return torch.randn(*shape, generator=g, **bf) * 0.02

        L = c["num_hidden_layers"]
        self.embed = w(c["vocab_size"], h)
        self.layers = []
        for _ in range(L):
            self.layers.append(dict(
                ln1=torch.ones(h, **bf), ln2=torch.ones(h, **bf),
                qkv=w((self.hq + 2 * self.hkv) * d, h), o=w(h, self.hq * d),
                gate_up=w(2 * c["intermediate_size"], h), down=w(h, c["intermediate_size"])))
        self.norm = torch.ones(h, **bf)
        self.lm_head = w(c["vocab_size"], h)
        theta = c.get("rope_theta") or c.get("rope_parameters", {}).get("rope_theta", 10000.0)
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=device).float() / d))
        t = torch.arange(max_len, device=device).float()
        f = torch.outer(t, inv)
        self.cos, self.sin = f.cos().to(torch.bfloat16), f.sin().to(torch.bfloat16)
        self.k = torch.zeros(L, max_seqs, self.hkv, max_len, d, **bf)
        self.v = torch.zeros(L, max_seqs, self.hkv, max_len, d, **bf)
        self.max_len = max_len

    @staticmethod
    def rms(x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def attend(self, q, k, v, mask):  # GQA: each KV head serves hq / hkv query heads
        g = self.hq // self.hkv
        return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1), attn_mask=mask)

    def rope(self, x, pos):  # x [T, H, d], pos [T]
        c, s = self.cos[pos][:, None, :], self.sin[pos][:, None, :]
        x1, x2 = x[..., : self.d // 2], x[..., self.d // 2:]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    def forward(self, tokens, pos, groups, logits_rows):
        """tokens, pos: [T]; groups: list of (kind, slot tensor/int, start row, n rows, past) where
        kind 'decode' covers a batch of slots (one token each, masks by length) and 'prefill' one
        slot's chunk attending to its cache plus itself (causal)."""
        x = self.embed[tokens]
        for i, p in enumerate(self.layers):
            hdn = self.rms(x, p["ln1"])
            qkv = hdn @ p["qkv"].t()
            q, k, v = qkv.split([self.hq * self.d, self.hkv * self.d, self.hkv * self.d], -1)
            q = self.rope(q.view(-1, self.hq, self.d), pos)
            k = self.rope(k.view(-1, self.hkv, self.d), pos)
            v = v.view(-1, self.hkv, self.d)
            outs = []
            for kind, slots, row, n, extra in groups:
                if kind == "decode":
                    # write the new token's K/V at each slot's position, attend over the static cache
                    self.k[i, slots, :, pos[row:row + n]] = k[row:row + n]
                    self.v[i, slots, :, pos[row:row + n]] = v[row:row + n]
                    kk, vv = self.k[i, slots], self.v[i, slots]          # [n, hkv, max_len, d]
                    qq = q[row:row + n].unsqueeze(2)                       # [n, hq, 1, d]
                    out = self.attend(qq, kk, vv, extra)
                    outs.append(out.squeeze(2).reshape(n, -1))
                else:
                    past = extra
                    self.k[i, slots, :, past:past + n] = k[row:row + n].transpose(0, 1)
                    self.v[i, slots, :, past:past + n] = v[row:row + n].transpose(0, 1)
                    kk = self.k[i, slots, :, : past + n].unsqueeze(0)
                    vv = self.v[i, slots, :, : past + n].unsqueeze(0)
                    qq = q[row:row + n].transpose(0, 1).unsqueeze(0)       # [1, hq, n, d]
                    mask = torch.ones(n, past + n, dtype=torch.bool, device=x.device).tril(past)
                    out = self.attend(qq, kk, vv, mask)
                    outs.append(out[0].transpose(0, 1).reshape(n, -1))
            x = x + torch.cat(outs, 0) @ p["o"].t()
            gu = self.rms(x, p["ln2"]) @ p["gate_up"].t()
            g_, u = gu.chunk(2, -1)
            x = x + (F.silu(g_) * u) @ p["down"].t()
        x = self.rms(x[logits_rows], self.norm)
        return (x @ self.lm_head.t()).argmax(-1)


class DecodeGraphs:
    """One CUDA graph per decode batch size over fixed slot buffers."""

    def __init__(self, model, max_seqs, device):
        self.m, self.graphs, self.io = model, {}, {}
        self.device = device
        for b in range(1, max_seqs + 1):
            tok = torch.zeros(b, dtype=torch.long, device=device)
            pos = torch.zeros(b, dtype=torch.long, device=device)
            slots = torch.arange(b, device=device)
            mask = torch.zeros(b, 1, 1, model.max_len, dtype=torch.bool, device=device)
            rows = torch.arange(b, device=device)
            groups = [("decode", slots, 0, b, mask)]
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    model(tok, pos, groups, rows)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = model(tok, pos, groups, rows)
            self.graphs[b] = g
            self.io[b] = (tok, pos, slots, mask, out)

    def run(self, slot_list, tokens, positions):
        b = len(slot_list)
        tok, pos, slots, mask, out = self.io[b]
        tok.copy_(torch.tensor(tokens, device=self.device))
        pos.copy_(torch.tensor(positions, device=self.device))
        slots.copy_(torch.tensor(slot_list, device=self.device))
        ar = torch.arange(self.m.max_len, device=self.device)
        mask.copy_((ar[None, :] <= pos[:, None]).view(b, 1, 1, -1))
        self.graphs[b].replay()
        return out


def run_loop(model, graphs, concurrency, n_requests, isl, osl, budget, device):
    free = list(range(concurrency))
    waiting = [{"id": i, "arrival": None} for i in range(n_requests)]
    issued, running, done = 0, [], []
    steps = {"mixed": 0, "prefill_only": 0, "decode_only": 0}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    queue = []
    while issued < min(concurrency, n_requests):
        r = waiting[issued]; r["arrival"] = 0.0; queue.append(r); issued += 1
    while len(done) < n_requests:
        left = budget
        sched = []
        for r in running:  # running first: decodes (1 token) or the rest of a prompt
            n = min(isl - r["computed"], left) if r["computed"] < isl else 1
            if n <= 0 or left <= 0:
                continue
            sched.append((r, n)); left -= n
        while queue and free and left > 0:
            r = queue.pop(0)
            r.update(slot=free.pop(0), computed=0, generated=0, last=0)
            running.append(r)
            n = min(isl, left)
            sched.append((r, n)); left -= n
        prefills = [(r, n) for r, n in sched if r["computed"] < isl]
        decodes = [(r, n) for r, n in sched if r["computed"] >= isl]
        steps["decode_only" if not prefills else "mixed" if decodes else "prefill_only"] += 1
        if not prefills and graphs is not None:
            out = graphs.run([r["slot"] for r, _ in decodes], [r["last"] for r, _ in decodes],
                             [r["computed"] for r, _ in decodes])
            sampled = out.tolist()
        else:
            toks, pos, groups, rows, row = [], [], [], [], 0
            if decodes:
                b = len(decodes)
                ar = torch.arange(model.max_len, device=device)
                p = torch.tensor([r["computed"] for r, _ in decodes], device=device)
                groups.append(("decode", torch.tensor([r["slot"] for r, _ in decodes], device=device), 0, b,
                               (ar[None, :] <= p[:, None]).view(b, 1, 1, -1)))
                toks += [r["last"] for r, _ in decodes]; pos += p.tolist(); rows += list(range(b)); row = b
            for r, n in prefills:
                groups.append(("prefill", r["slot"], row, n, r["computed"]))
                toks += [1] * n; pos += list(range(r["computed"], r["computed"] + n))
                row += n; rows.append(row - 1)
            out = model(torch.tensor(toks, device=device), torch.tensor(pos, device=device), groups,
                        torch.tensor(rows, device=device))
            sampled = out.tolist()
        torch.cuda.synchronize()
        now = time.perf_counter() - t0
        order = decodes + prefills
        for (r, n), tok in zip(order, sampled):
            r["computed"] += n
            if r["computed"] < isl:
                continue  # a chunk short of the prompt's end samples nothing
            r["generated"] += 1; r["last"] = int(tok) % model.c["vocab_size"]
            if r["generated"] == 1:
                r["first"] = now
            if r["generated"] == osl:
                r["finish"] = now
                running.remove(r); free.append(r["slot"]); done.append(r)
                if issued < n_requests:
                    q = waiting[issued]; q["arrival"] = now; queue.append(q); issued += 1
    wall = time.perf_counter() - t0
    ttft = [r["first"] - r["arrival"] for r in done]
    tpot = [(r["finish"] - r["first"]) / (osl - 1) for r in done]
    return {"concurrency": concurrency, "requests": n_requests, "ttft_mean_s": statistics.mean(ttft),
            "ttft_p50_s": statistics.median(ttft), "tpot_mean_s": statistics.mean(tpot),
            "tpot_p50_s": statistics.median(tpot), "throughput_tokens_per_s": n_requests * osl / wall,
            "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--isl", type=int, default=512)
    ap.add_argument("--osl", type=int, default=128)
    ap.add_argument("--budget", type=int, default=512)
    ap.add_argument("--concurrency", default="1,2,4,8,16")
    ap.add_argument("--requests-per-client", type=int, default=4)
    a = ap.parse_args()
    c = json.load(open(a.config))
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    device = "cuda"
    levels = [int(x) for x in a.concurrency.split(",")]
    max_seqs = max(levels)
    max_len = a.isl + a.osl + 8
    torch.manual_seed(0)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "isl": a.isl, "osl": a.osl,
            "budget": a.budget, "max_seqs": max_seqs, "config": a.config, "cuda_graphs": True,
            "method": "scripts/gpu/serving_closed_loop.py: decode-only steps from CUDA graphs, mixed steps eager; "
                      "times from time.perf_counter after torch.cuda.synchronize per step"}
    results = []

    def save():
        json.dump({"meta": meta, "results": results}, open(a.out, "w"), indent=1)

    with torch.inference_mode():
        model = Llama(c, max_seqs, max_len, device)
        try:
            graphs = DecodeGraphs(model, max_seqs, device)
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on eagerly
            graphs, meta["cuda_graphs"] = None, f"failed: {e!r}"
        run_loop(model, graphs, 2, 2, a.isl, 8, a.budget, device)  # warm-up: the eager kernels' autotuning
        for n in levels:
            results.append(run_loop(model, graphs, n, max(4, a.requests_per_client * n), a.isl, a.osl, a.budget, device))
            print(json.dumps(results[-1]), flush=True)
            save()
    save()


if __name__ == "__main__":
    main()
