#!/usr/bin/env python3
"""A closed-loop continuous-batching run on one GPU, to check `rooflens serve` (docs/serving.md).

A Llama-architecture model built from a Hugging Face config (random weights, no download; an MoE
config, Qwen3-MoE or Mixtral, gets its routed experts on fused_moe_triton.py's kernel, the design
vLLM and SGLang run, and Qwen3's per-head q/k norms), a
static KV cache of max_seqs slots, decode-only steps replayed from CUDA graphs (one per batch
size), and steps with prefill work run eagerly with the prompts' chunks mixed in: the linear
layers see the chunks' tokens and the decodes' tokens together, attention runs per prefill chunk
over its own sequence's cache and, for the decodes, over the slots' caches in one call.
The scheduler is the simulator's (analyzer/serving/scheduler.cpp): running sequences first, in
admission order, each taking the rest of its prompt chunked to the remaining token budget or one
decode token; then waiting requests in arrival order while the budget and the slots allow; a
closed loop of N clients, a new request arriving as one finishes.

The running sequences always occupy the cache slots 0..A-1 (a finished sequence's slot is taken
by the next admission, or, when none comes, the highest slot's cache is moved into it), so
attention reads a contiguous view of the cache and never copies it, as a paged kernel reads its
blocks in place. Attention uses grouped-query attention by folding each KV head's query heads
into rows (no repeat of K and V).

Writes JSON: per concurrency, mean/p50/p99 TTFT and TPOT (seconds; p99 interpolated as rooflens
does), end-to-end latency, output tokens/s, and the steps: count, wall time and host time (until
the step's kernels are enqueued; it also grows when a GPU-bound step fills the launch queue) by
kind (decode-only from a graph, decode-only eager, mixed, prefill-only), the mean decode batch,
the slot moves. Each concurrency first runs a short unmeasured loop (4 output tokens) as warm-up.

    python3 serving_closed_loop.py --config CONFIG.json --out OUT.json [--isl 512 --osl 128
        --budget 8192 --concurrency 1,2,4,8,16,32,64 --requests-per-client 8 --min-requests 32]
    python3 serving_closed_loop.py --config CONFIG.json --out OUT.json --probe   (step shapes:
        eager wall, GPU time from a CUDA graph replay, kernels by class under torch.profiler)
    python3 serving_closed_loop.py --check [--device cpu]   (the loop against a full recompute)

Used for tests/data/reference/serving/h100-closed-loop.json (docs/serving.md).
"""
import argparse
import gc
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F

import fused_moe_triton  # same folder: the MoE projections of an MoE config


class Llama:
    def __init__(self, c, max_seqs, max_len, device, dtype=torch.bfloat16, scale=0.02):
        self.c = c
        h, d = c["hidden_size"], c["head_dim"]
        self.h, self.hq, self.hkv, self.d = h, c["num_attention_heads"], c["num_key_value_heads"], d
        self.g = self.hq // self.hkv
        self.inter = c.get("moe_intermediate_size") or c["intermediate_size"]
        # An MoE config (Qwen3-MoE, Mixtral): every layer's MLP is `experts` experts of width
        # `inter`, top `topk` of a softmax router (renormalised where the config says so).
        self.experts = c.get("num_experts") or c.get("num_local_experts") or 0
        self.topk = c.get("num_experts_per_tok", 0)
        self.norm_topk = c.get("norm_topk_prob", c.get("model_type") == "mixtral")
        self.qk_norm = c.get("model_type", "").startswith("qwen3")  # per-head RMSNorm of q and k
        self.eps = c.get("rms_norm_eps", 1e-5)
        # The first MoE layer's routing, summed on the GPU (a CUDA graph's replays add to it too):
        # calls, routed tokens and the experts they touched, to compare with a uniform router's.
        self.routing = torch.zeros(4, dtype=torch.float64, device=device)
        self.device = device
        bf = dict(device=device, dtype=dtype)
        gen = torch.Generator(device=device).manual_seed(0)

        def w(*shape):
            return torch.randn(*shape, generator=gen, **bf) * scale

        L = c["num_hidden_layers"]
        self.embed = w(c["vocab_size"], h)
        self.layers = []
        for _ in range(L):
            layer = dict(ln1=torch.ones(h, **bf), ln2=torch.ones(h, **bf),
                         qkv=w((self.hq + 2 * self.hkv) * d, h), o=w(h, self.hq * d))
            if self.qk_norm:
                layer.update(q_norm=torch.ones(d, **bf), k_norm=torch.ones(d, **bf))
            if self.experts:
                layer.update(router=w(self.experts, h), gate_up=w(self.experts, 2 * self.inter, h),
                             down=w(self.experts, h, self.inter))
            else:
                layer.update(gate_up=w(2 * self.inter, h), down=w(h, self.inter))
            self.layers.append(layer)
        self.norm = torch.ones(h, **bf)
        self.lm_head = w(c["vocab_size"], h)
        rp = c.get("rope_parameters") or {}
        theta = c.get("rope_theta") or rp.get("rope_theta", 10000.0)
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=device).float() / d))
        f = torch.outer(torch.arange(max_len, device=device).float(), inv)
        f = torch.cat([f, f], -1)  # rotate-half layout, as transformers' Llama
        self.cos, self.sin = f.cos().to(dtype), f.sin().to(dtype)
        self.k = torch.zeros(L, max_seqs, self.hkv, max_len, d, **bf)
        self.v = torch.zeros(L, max_seqs, self.hkv, max_len, d, **bf)
        self.ar = torch.arange(max_len, device=device)
        self.max_len, self.max_seqs = max_len, max_seqs

    def route(self, p, x, key, layer):
        """Each row's top-k experts and their weights. A router of random weights collapses: from
        the second layer on, a 512-token prompt's rows pick 20-60 of Qwen3-30B-A3B's 128 experts
        (measured on the H100), where a trained one spreads them. So the experts come from a hash
        of the row's token, position and layer (k distinct ones, a uniform router's spread, the
        same for the loop and --check's recompute), weighted by the router's softmax as usual."""
        probs = torch.softmax((x @ p["router"].t()).float(), -1)
        h = key + layer * 15485863
        stride = 2 * ((h // self.experts) % (self.experts // 2)) + 1  # odd: k distinct experts
        j = torch.arange(self.topk, device=x.device)
        chosen = (h[:, None] + j[None, :] * stride[:, None]) % self.experts
        weights = probs.gather(1, chosen)
        if self.norm_topk:
            weights = weights / weights.sum(-1, keepdim=True)
        return weights, chosen

    def mlp(self, p, x, key=None, layer=0):
        """The MLP of normed rows x: dense, or the experts each row is routed to (key: [T], the
        rows' token and position, which the routing hashes)."""
        if not self.experts:
            gu = x @ p["gate_up"].t()
            return (F.silu(gu[:, : self.inter]) * gu[:, self.inter:]) @ p["down"].t()
        T = x.shape[0]
        weights, chosen = self.route(p, x, key, layer)
        first = layer == 0
        routed = chosen.flatten()
        if first:
            hit = torch.zeros(self.experts, device=x.device).index_fill_(0, routed, 1.0)
            uniform = self.experts * (1 - (1 - self.topk / self.experts) ** T)  # a uniform router's
            self.routing += torch.stack([torch.ones((), device=x.device), torch.full((), T, device=x.device,
                                         dtype=torch.float32), hit.sum(),
                                         torch.full((), uniform, device=x.device)]).double()
        if x.dtype == torch.bfloat16 and x.is_cuda:  # the engines' kernel (fused_moe_triton.py)
            rows = routed.numel()
            tile = fused_moe_triton.decode_tile(rows, self.experts)
            ids, blocks = fused_moe_triton.align_on_gpu(routed, self.experts, tile[0])
            gu = fused_moe_triton.moe_projection(x, p["gate_up"], ids, blocks, rows, self.topk, tile)
            act = F.silu(gu[:, : self.inter]) * gu[:, self.inter:]
            out = fused_moe_triton.moe_projection(act, p["down"], ids, blocks, rows, 1, tile)
        else:  # fp32 (--check) or the CPU: each routed row through its expert
            xr = x.repeat_interleave(self.topk, 0)
            gu = torch.einsum("rk,rnk->rn", xr, p["gate_up"][routed])
            act = F.silu(gu[:, : self.inter]) * gu[:, self.inter:]
            out = torch.einsum("rk,rnk->rn", act, p["down"][routed])
        return (out.view(T, self.topk, -1).float() * weights[..., None]).sum(1).to(x.dtype)

    def head_norm(self, p, x, which):  # x [T, H, d]: Qwen3's per-head RMSNorm of q or k
        return F.rms_norm(x, (self.d,), p[which], self.eps) if self.qk_norm else x

    def rope(self, x, cos, sin):  # x [T, H, d]; cos, sin [T, 1, d]
        half = self.d // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin

    def move(self, src, dst):
        """Copy the caches of slots src into slots dst (every layer, every position)."""
        s = torch.tensor(src, device=self.device)
        t = torch.tensor(dst, device=self.device)
        self.k[:, t] = self.k[:, s]
        self.v[:, t] = self.v[:, s]

    def forward(self, tokens, pos, active, dec, pre, logits_rows):
        """tokens, pos: [T]. The running sequences hold slots 0..active-1.
        dec: None, or (n, slots): rows 0..n-1 are decode tokens of those slots (slots None: the
        rows are the slots 0..n-1 in order, n == active). pre: [(slot, row, n, past, mask)]: rows
        row..row+n-1 are a prompt chunk of that slot with `past` tokens cached; mask [g*n, past+n]
        (causal, in the folded query layout). logits_rows: a [R] tensor of rows that sample, or
        None for every row. Returns the greedy tokens of those rows."""
        hq, hkv, g, d = self.hq, self.hkv, self.g, self.d
        x = F.embedding(tokens, self.embed)
        key = tokens * 7919 + pos * 104729  # what an MoE layer's routing hashes
        cos, sin = self.cos[pos].unsqueeze(1), self.sin[pos].unsqueeze(1)
        if dec is not None:
            nd, dslots = dec
            dpos = pos[:nd]
            if dslots is None:
                dmask = (self.ar[None, :] <= dpos[:, None]).view(nd, 1, 1, -1)
            else:  # slots that are not decoding (prefilling) attend to position 0; rows dropped
                p_all = torch.zeros(active, dtype=pos.dtype, device=pos.device).index_copy(0, dslots, dpos)
                dmask = (self.ar[None, :] <= p_all[:, None]).view(active, 1, 1, -1)
        for i, p in enumerate(self.layers):
            hdn = F.rms_norm(x, (self.h,), p["ln1"], self.eps)
            qkv = hdn @ p["qkv"].t()
            T = qkv.shape[0]
            q = self.rope(self.head_norm(p, qkv[:, : hq * d].view(T, hq, d), "q_norm"), cos, sin)
            k = self.rope(self.head_norm(p, qkv[:, hq * d: (hq + hkv) * d].view(T, hkv, d), "k_norm"),
                          cos, sin)
            v = qkv[:, (hq + hkv) * d:].view(T, hkv, d)
            kc, vc = self.k[i], self.v[i]  # [S, hkv, max_len, d]
            outs = []
            if dec is not None:
                ids = torch.arange(nd, device=x.device) if dslots is None else dslots
                kc[ids, :, dpos] = k[:nd]
                vc[ids, :, dpos] = v[:nd]
                qd = q[:nd].view(nd, hkv, g, d)
                if dslots is None:
                    Q = qd
                else:
                    Q = torch.zeros(active, hkv, g, d, dtype=x.dtype, device=x.device).index_copy(0, dslots, qd)
                o = F.scaled_dot_product_attention(Q, kc[:active], vc[:active], attn_mask=dmask)
                if dslots is not None:
                    o = o.index_select(0, dslots)
                outs.append(o.reshape(nd, hq * d))
            for slot, row, n, past, mask in pre:
                kc[slot, :, past:past + n] = k[row:row + n].transpose(0, 1)
                vc[slot, :, past:past + n] = v[row:row + n].transpose(0, 1)
                Q = q[row:row + n].reshape(n, hkv, g, d).permute(1, 2, 0, 3).reshape(1, hkv, g * n, d)
                o = F.scaled_dot_product_attention(Q, kc[slot, :, : past + n].unsqueeze(0),
                                                   vc[slot, :, : past + n].unsqueeze(0), attn_mask=mask)
                outs.append(o.view(hkv, g, n, d).permute(2, 0, 1, 3).reshape(n, hq * d))
            a = outs[0] if len(outs) == 1 else torch.cat(outs, 0)
            x = x + a @ p["o"].t()
            x = x + self.mlp(p, F.rms_norm(x, (self.h,), p["ln2"], self.eps), key, i)
        if logits_rows is not None:
            x = x.index_select(0, logits_rows)
        return (F.rms_norm(x, (self.h,), self.norm, self.eps) @ self.lm_head.t()).argmax(-1)

    def prefill_mask(self, n, past):
        m = torch.ones(n, past + n, dtype=torch.bool, device=self.device).tril(past)
        return m.repeat(self.g, 1)  # the folded rows: query head r of a KV head, then token

    def reference(self, prompt, steps):
        """Greedy tokens by recomputing the whole sequence each time, no cache (for --check)."""
        seq, out = list(prompt), []
        for _ in range(steps):
            t = torch.tensor(seq, device=self.device)
            n = len(seq)
            x = F.embedding(t, self.embed)
            key = t * 7919 + torch.arange(n, device=self.device) * 104729
            cos, sin = self.cos[:n].unsqueeze(1), self.sin[:n].unsqueeze(1)
            for i, p in enumerate(self.layers):
                hdn = F.rms_norm(x, (self.h,), p["ln1"], self.eps)
                qkv = hdn @ p["qkv"].t()
                q, k, v = qkv.split([self.hq * self.d, self.hkv * self.d, self.hkv * self.d], -1)
                q = self.rope(self.head_norm(p, q.view(n, self.hq, self.d), "q_norm"), cos, sin).transpose(0, 1)
                k = self.rope(self.head_norm(p, k.view(n, self.hkv, self.d), "k_norm"), cos, sin).transpose(0, 1)
                v = v.view(n, self.hkv, self.d).transpose(0, 1)
                o = F.scaled_dot_product_attention(q, k.repeat_interleave(self.g, 0),
                                                   v.repeat_interleave(self.g, 0), is_causal=True)
                x = x + o.transpose(0, 1).reshape(n, -1) @ p["o"].t()
                x = x + self.mlp(p, F.rms_norm(x, (self.h,), p["ln2"], self.eps), key, i)
            tok = int((F.rms_norm(x[-1:], (self.h,), self.norm, self.eps) @ self.lm_head.t()).argmax(-1))
            out.append(tok)
            seq.append(tok)
        return out


class DecodeGraphs:
    """One CUDA graph per decode batch size b: the sequences in slots 0..b-1, one token each."""

    def __init__(self, model, max_seqs, device):
        self.m, self.graphs, self.io, self.device = model, {}, {}, device
        pool = torch.cuda.graph_pool_handle()
        for b in range(max_seqs, 0, -1):  # largest first, one memory pool shared (as vLLM)
            tok = torch.zeros(b, dtype=torch.long, device=device)
            pos = torch.zeros(b, dtype=torch.long, device=device)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    model.forward(tok, pos, b, (b, None), [], None)
            torch.cuda.current_stream().wait_stream(s)
            gr = torch.cuda.CUDAGraph()
            with torch.cuda.graph(gr, pool=pool):
                out = model.forward(tok, pos, b, (b, None), [], None)
            self.graphs[b] = gr
            self.io[b] = (tok, pos, out)
        model.k.zero_(), model.v.zero_()

    def run(self, tokens, positions):
        b = len(tokens)
        tok, pos, out = self.io[b]
        staged = torch.tensor([tokens, positions], dtype=torch.long).to(self.device, non_blocking=False)
        tok.copy_(staged[0])
        pos.copy_(staged[1])
        self.graphs[b].replay()
        return out


def prompt_token(rid, j, vocab):  # distinct prompts, so that --check sees a wrong cache or mask
    return (rid * 7919 + j * 104729 + 1) % vocab


def percentile(v, p):  # as rooflens's percentile (analyzer/serving/serving.cpp)
    v = sorted(v)
    x = p / 100.0 * (len(v) - 1)
    i = int(math.floor(x))
    if i + 1 >= len(v):
        return v[-1]
    return v[i] + (v[i + 1] - v[i]) * (x - i)


def run_loop(model, graphs, concurrency, n_requests, isl, osl, budget, device, keep_tokens=False):
    vocab = model.c["vocab_size"]
    waiting = [{"id": i} for i in range(n_requests)]
    issued, running, done, queue = 0, [], [], []
    free = set(range(model.max_seqs))
    kinds = ("decode_graph", "decode_eager", "mixed", "prefill_only")
    steps = {k: {"count": 0, "wall_s": 0.0, "host_s": 0.0} for k in kinds}
    moves, decode_rows, n_steps = 0, 0, 0
    torch.cuda.synchronize() if device != "cpu" else None
    model.routing.zero_()
    t0 = time.perf_counter()
    prev = t0
    while issued < min(concurrency, n_requests):
        r = waiting[issued]; r["arrival"] = 0.0; queue.append(r); issued += 1
    while len(done) < n_requests:
        left = budget
        sched = []
        for r in running:  # running first: the rest of a prompt (chunked) or one decode token
            n = min(isl - r["computed"], left) if r["computed"] < isl else 1
            if n <= 0 or left <= 0:
                continue
            sched.append((r, n)); left -= n
        while queue and len(running) < concurrency and left > 0:
            r = queue.pop(0)
            slot = min(free); free.remove(slot)
            r.update(slot=slot, computed=0, generated=0, last=0, tokens=[])
            running.append(r)
            n = min(isl, left)
            sched.append((r, n)); left -= n
        active = len(running)
        holes = sorted(s for s in free if s < active)
        if holes:  # keep the running sequences in slots 0..active-1
            movers = sorted((r for r in running if r["slot"] >= active), key=lambda r: r["slot"])
            model.move([r["slot"] for r in movers], holes)
            for r, s in zip(movers, holes):
                free.add(r["slot"]); free.discard(s); r["slot"] = s
            moves += len(holes)
        prefills = [(r, n) for r, n in sched if r["computed"] < isl]
        decodes = [(r, n) for r, n in sched if r["computed"] >= isl]
        if not prefills and graphs is not None and len(decodes) == active:
            kind = "decode_graph"
            by_slot = sorted(decodes, key=lambda rn: rn[0]["slot"])
            out = graphs.run([r["last"] for r, _ in by_slot], [r["computed"] for r, _ in by_slot])
            order = by_slot
        else:
            kind = "decode_eager" if not prefills else "mixed" if decodes else "prefill_only"
            toks, pos, pre, rows, row = [], [], [], [], 0
            if decodes:
                toks += [r["last"] for r, _ in decodes]
                pos += [r["computed"] for r, _ in decodes]
                rows += list(range(len(decodes)))
                row = len(decodes)
            for r, n in prefills:
                pre.append((r["slot"], row, n, r["computed"], model.prefill_mask(n, r["computed"])))
                toks += [prompt_token(r["id"], j, vocab) for j in range(r["computed"], r["computed"] + n)]
                pos += list(range(r["computed"], r["computed"] + n))
                row += n
                rows.append(row - 1)
            staged = torch.tensor([toks, pos], dtype=torch.long).to(device)
            dec = None
            if decodes:
                dec = (len(decodes), torch.tensor([r["slot"] for r, _ in decodes], device=device))
            out = model.forward(staged[0], staged[1], active, dec, pre, torch.tensor(rows, device=device))
            order = decodes + prefills
        launched = time.perf_counter()
        sampled = out.tolist()  # waits for the step
        now = time.perf_counter()
        st = steps[kind]
        st["count"] += 1; st["wall_s"] += now - prev; st["host_s"] += launched - prev
        prev = now
        n_steps += 1
        decode_rows += len(decodes)
        now -= t0
        for (r, n), tok in zip(order, sampled):
            r["computed"] += n
            if r["computed"] < isl:
                continue  # a chunk short of the prompt's end samples nothing
            r["generated"] += 1; r["last"] = int(tok)
            if keep_tokens:
                r["tokens"].append(int(tok))
            if r["generated"] == 1:
                r["first"] = now
            if r["generated"] == osl:
                r["finish"] = now
                running.remove(r); free.add(r["slot"]); done.append(r)
                if issued < n_requests:
                    q = waiting[issued]; q["arrival"] = now; queue.append(q); issued += 1
    wall = time.perf_counter() - t0
    ttft = [r["first"] - r["arrival"] for r in done]
    tpot = [(r["finish"] - r["first"]) / (osl - 1) for r in done] if osl > 1 else [0.0]
    e2e = [r["finish"] - r["arrival"] for r in done]
    makespan = max(r["finish"] for r in done)
    for st in steps.values():
        st["mean_wall_s"] = st["wall_s"] / st["count"] if st["count"] else 0.0
        st["mean_host_s"] = st["host_s"] / st["count"] if st["count"] else 0.0
    res = {"concurrency": concurrency, "requests": n_requests,
           "ttft_mean_s": statistics.mean(ttft), "ttft_p50_s": percentile(ttft, 50),
           "ttft_p99_s": percentile(ttft, 99), "tpot_mean_s": statistics.mean(tpot),
           "tpot_p50_s": percentile(tpot, 50), "tpot_p99_s": percentile(tpot, 99),
           "e2e_latency_mean_s": statistics.mean(e2e),
           "throughput_tokens_per_s": n_requests * osl / makespan, "requests_per_s": n_requests / makespan,
           "wall_s": wall, "steps": n_steps, "mean_step_s": makespan / n_steps,
           "mean_decode_batch": decode_rows / n_steps, "slot_moves": moves, "by_kind": steps}
    if model.experts:
        calls, tokens, touched, uniform = model.routing.tolist()
        res["moe_first_layer"] = {"calls": calls, "mean_tokens": tokens / calls,
                                  "mean_experts_touched": touched / calls,
                                  "mean_experts_uniform_router": uniform / calls}
    if keep_tokens:
        res["tokens"] = {r["id"]: r["tokens"] for r in done}
    return res


def kernel_class(name):
    n = name.lower()
    if "moe_projection" in n:  # fused_moe_triton.py's expert kernel
        return "moe"
    if any(k in n for k in ("fmha", "attention", "flash", "attn")):
        return "attention"
    if any(k in n for k in ("gemm", "gemv", "nvjet", "cutlass", "sm90_xmma", "cublas", "splitk")):
        return "gemm"
    if any(k in n for k in ("index", "scatter", "gather")):
        return "index"
    if "norm" in n:
        return "norm"
    return "elementwise"


def probe(model, device, shapes, reps=5):
    """Per step shape: the eager step's wall time (the loop's path), the same step's GPU time
    replayed from a CUDA graph (no host in the way), and the eager step's kernels by class
    (torch.profiler, CUPTI): separates host overhead from GPU time."""
    from torch.profiler import ProfilerActivity, profile
    rows = []
    for name, ndec, ctx, chunks in shapes:
        active = ndec + len(chunks)
        toks, pos, pre, lrows, row = [], [], [], [], 0
        # distinct tokens, so that an MoE router spreads them as a batch of real ones
        vocab = model.c["vocab_size"]
        toks += [prompt_token(i, ctx, vocab) for i in range(ndec)]
        pos += [ctx] * ndec; lrows += list(range(ndec)); row = ndec
        for j, n in enumerate(chunks):
            pre.append((ndec + j, row, n, 0, model.prefill_mask(n, 0)))
            toks += [prompt_token(ndec + j, i, vocab) for i in range(n)]
            pos += list(range(n)); row += n; lrows.append(row - 1)
        tok_t = torch.tensor(toks, device=device); pos_t = torch.tensor(pos, device=device)
        rows_t = torch.tensor(lrows, device=device)
        if ndec and not chunks:
            dec = (ndec, None)
        elif ndec:
            dec = (ndec, torch.arange(ndec, device=device))
        else:
            dec = None

        def step():
            return model.forward(tok_t, pos_t, active, dec, pre, rows_t)

        for _ in range(2):
            step().tolist()
        walls = []
        for _ in range(reps):
            t = time.perf_counter(); step().tolist(); walls.append(time.perf_counter() - t)
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        g.replay(); torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps * 2):
            g.replay()
        e1.record(); torch.cuda.synchronize()
        graph_s = e0.elapsed_time(e1) / 1e3 / (reps * 2)
        del g
        with profile(activities=[ProfilerActivity.CUDA if device != "cpu" else ProfilerActivity.CPU]) as prof:
            step().tolist()
        by, launches = {}, {}
        top = []
        for ev in prof.key_averages():
            t = getattr(ev, "device_time_total", 0) / 1e6
            if t <= 0:
                continue
            c = kernel_class(ev.key)
            by[c] = by.get(c, 0.0) + t
            launches[c] = launches.get(c, 0) + ev.count
            top.append((t, ev.key[:90], ev.count))
        top.sort(reverse=True)
        r = {"shape": name, "decodes": ndec, "context": ctx, "chunks": chunks,
             "eager_wall_s": statistics.median(walls), "graph_gpu_s": graph_s,
             "eager_kernels_s": sum(by.values()), "by_class_s": by, "kernels_by_class": launches,
             "top_kernels": [{"s": t, "name": k, "count": n} for t, k, n in top[:8]]}
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "top_kernels"}), flush=True)
        model.k.zero_(); model.v.zero_()
    return rows


def check(device):
    """The loop (chunked prompts, mixed steps, slot moves, graphs on a GPU) against a full
    recompute in fp32: every request must produce the reference's greedy tokens."""
    dense = dict(hidden_size=128, head_dim=32, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=256, num_hidden_layers=2, vocab_size=257, rope_theta=10000.0)
    # Qwen3-MoE's shape in small: q/k norms, 8 experts, top 2 renormalised (fp32: the experts
    # through PyTorch here; fused_moe_triton.py --check holds the bf16 kernel to the same sums)
    moe = dict(dense, model_type="qwen3_moe", num_experts=8, num_experts_per_tok=2,
               moe_intermediate_size=64, norm_topk_prob=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    isl, osl = 20, 6
    bad = 0
    for c in (dense, moe):
        with torch.inference_mode():
            m = Llama(c, 4, isl + osl + 8, device, dtype=torch.float32, scale=0.3)
            graphs = DecodeGraphs(m, 4, device) if device != "cpu" else None
            cases = [(3, 7, 16), (1, 2, 64), (4, 9, 30), (3, 5, 7)]  # concurrency, requests, budget
            for conc, nreq, budget in cases:
                res = run_loop(m, graphs, conc, nreq, isl, osl, budget, device, keep_tokens=True)
                wrong = [i for i, t in res["tokens"].items()
                         if t != m.reference([prompt_token(i, j, c["vocab_size"]) for j in range(isl)], osl)]
                bad += len(wrong)
                print(f"check {'moe' if c is moe else 'dense'} concurrency {conc} requests {nreq} budget "
                      f"{budget}: {nreq - len(wrong)}/{nreq} match; moves {res['slot_moves']}; steps " +
                      ", ".join(f"{k} {v['count']}" for k, v in res["by_kind"].items()), flush=True)
    print("check:", "ok" if bad == 0 else f"{bad} requests differ from the reference", flush=True)
    return bad == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--out")
    ap.add_argument("--isl", type=int, default=512)
    ap.add_argument("--osl", type=int, default=128)
    ap.add_argument("--budget", type=int, default=8192)
    ap.add_argument("--concurrency", default="1,2,4,8,16,32,64")
    ap.add_argument("--requests-per-client", type=int, default=8)
    ap.add_argument("--min-requests", type=int, default=32)
    ap.add_argument("--check", action="store_true", help="test the loop against a full recompute and exit")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--probe", action="store_true",
                    help="time step shapes eager, from a CUDA graph and by kernel class; no loop")
    a = ap.parse_args()
    if a.check:
        raise SystemExit(0 if check(a.device) else 1)
    c = json.load(open(a.config))
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    device = a.device
    levels = [int(x) for x in a.concurrency.split(",")]
    max_seqs = max(levels)
    max_len = a.isl + a.osl + 8
    torch.manual_seed(0)
    meta = {"gpu": torch.cuda.get_device_name() if device != "cpu" else "cpu", "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "isl": a.isl, "osl": a.osl, "budget": a.budget, "max_seqs": max_seqs, "max_len": max_len,
            "config": a.config, "dtype": "bfloat16", "cuda_graphs": "decode-only steps, batch 1.." + str(max_seqs),
            "requests": f"max({a.min_requests}, {a.requests_per_client} x concurrency)",
            "method": "scripts/gpu/serving_closed_loop.py: decode-only steps replayed from CUDA graphs, steps "
                      "with prefill work eager; step times from time.perf_counter after the step's result is "
                      "read back (a synchronisation); host_s: until the step's kernels are enqueued"}
    results = []

    def save():
        with open(a.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)

    with torch.inference_mode():
        model = Llama(c, max_seqs, max_len, device)
        if a.probe:
            ctx = a.isl + a.osl // 2  # the mean context of a decode
            big = [a.isl] * (a.budget // a.isl)
            shapes = [(f"decode {b}", b, ctx, []) for b in (1, 8, 32, 64) if b <= max_seqs] + [
                (f"prefill 1x{a.isl}", 0, ctx, [a.isl]), (f"prefill {len(big)}x{a.isl}", 0, ctx, big),
                (f"mixed {max_seqs - 1} decodes + 1x{a.isl}", max_seqs - 1, ctx, [a.isl])]
            nd = max_seqs * 3 // 4  # a cohort's arrival at the largest concurrency: a full budget
            rest = a.budget - nd
            chunks = ([a.isl] * (rest // a.isl) + ([rest % a.isl] if rest % a.isl else []))[: max_seqs - nd]
            shapes.append((f"mixed {nd} decodes + {len(chunks)} chunks ({sum(chunks)} tokens)", nd, ctx, chunks))
            meta["probe"] = probe(model, device, shapes)
            save()
            return
        t = time.perf_counter()
        try:
            graphs = DecodeGraphs(model, max_seqs, device) if device != "cpu" else None
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on eagerly
            graphs, meta["cuda_graphs"] = None, f"failed: {e!r}"
        meta["graph_capture_s"] = time.perf_counter() - t
        for n in levels:
            # warm-up at this concurrency (the eager shapes of its ramp), then the measured loop
            run_loop(model, graphs, n, n, a.isl, 4, a.budget, device)
            gc.collect()
            results.append(run_loop(model, graphs, n, max(a.min_requests, a.requests_per_client * n),
                                    a.isl, a.osl, a.budget, device))
            print(json.dumps({k: v for k, v in results[-1].items() if k != "by_kind"}), flush=True)
            save()
    save()


if __name__ == "__main__":
    main()
