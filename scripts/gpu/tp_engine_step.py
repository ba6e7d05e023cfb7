#!/usr/bin/env python3
"""A tensor-parallel Llama step as a serving engine runs it, the "real PyTorch run" that
`rooflens analyze/profile --tp N` is checked against (issue 32; docs/multi_gpu.md).

multi_gpu_references.py's `tp` runs Hugging Face's eager model: 1,800 launches a decode step,
host-bound, and its CUDA-graph capture fails. This one is written as engines write it: one
process per GPU, Megatron's split (a fused q/k/v and a fused gate/up GEMM by output columns, o
and down by input rows, a vocabulary-parallel embedding and LM head), an all-reduce after the
embedding, o and down, grouped-query decode attention reading the KV cache in place through
flash attention (each KV head's query heads folded into rows: no copy of K and V), and the
decode step captured in one CUDA graph with its NCCL all-reduces inside, replayed as vLLM and
SGLang replay decode. Random bf16 weights, no download.

Variants (each timed on its own, a failure of one recorded and the others kept):
  graph          the plain PyTorch step (F.rms_norm, SiLU and multiply, rope apart) in a CUDA graph
  graph_compiled the same with each layer's element-wise work fused by torch.compile (Inductor),
                 the GEMMs, attention and all-reduces left to cuBLAS, flash attention and NCCL,
                 then captured in a CUDA graph
  prefill        one sequence's prefill (eager; GPU-bound at 2,048 tokens), plain and compiled

Per variant: the step's GPU time (CUDA events around a replay, median of 50, both ranks), and one
step's kernels under torch.profiler summed by kind (NCCL apart).

    torchrun-free: python3 tp_engine_step.py OUT.json [--gpus 2] [--config CONFIG.json]
        [--batch 8 --context 1024 --prompt 2048]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from multi_gpu_references import ROOT, init, kernel_categories, kernel_durations, top_kernels  # noqa: E402
from training_references import cuda_event_times  # noqa: E402


class ShardedLlama:
    """One rank's shard of a Llama: heads, KV heads, MLP width and vocabulary divided by world."""

    def __init__(self, torch, dist, c, rank, world, batch, max_len):
        self.torch, self.dist, self.world = torch, dist, world
        F = torch.nn.functional
        self.F = F
        h = c["hidden_size"]
        d = c.get("head_dim") or h // c["num_attention_heads"]
        self.h, self.d = h, d
        self.hq, self.hkv = c["num_attention_heads"] // world, c["num_key_value_heads"] // world
        self.g = self.hq // self.hkv
        self.inter = c["intermediate_size"] // world
        self.vocab = c["vocab_size"] // world
        self.vocab_start = rank * self.vocab
        self.eps = c.get("rms_norm_eps", 1e-5)
        bf = dict(device="cuda", dtype=torch.bfloat16)
        gen = torch.Generator(device="cuda").manual_seed(1 + rank)

        def w(*shape):
            return torch.randn(*shape, generator=gen, **bf) * 0.02

        L = c["num_hidden_layers"]
        self.embed = w(self.vocab, h)
        self.layers = [dict(ln1=torch.ones(h, **bf), ln2=torch.ones(h, **bf),
                            qkv=w((self.hq + 2 * self.hkv) * d, h), o=w(h, self.hq * d),
                            gate_up=w(2 * self.inter, h), down=w(h, self.inter)) for _ in range(L)]
        self.norm = torch.ones(h, **bf)
        self.lm_head = w(self.vocab, h)
        rp = c.get("rope_parameters") or {}
        theta = c.get("rope_theta") or rp.get("rope_theta", 10000.0)
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, device="cuda").float() / d))
        f = torch.outer(torch.arange(max_len, device="cuda").float(), inv)
        f = torch.cat([f, f], -1)
        self.cos, self.sin = f.cos().to(torch.bfloat16), f.sin().to(torch.bfloat16)
        # The cache as [layer][batch, kv head, position, d]: a decode reads positions 0..p in place.
        self.k = torch.zeros(L, batch, self.hkv, max_len, d, **bf)
        self.v = torch.zeros(L, batch, self.hkv, max_len, d, **bf)
        self.layer_fn = self.layer_plain

    def all_reduce(self, x):
        self.dist.all_reduce(x)
        return x

    def embed_tokens(self, tokens):
        local = tokens - self.vocab_start
        inside = (local >= 0) & (local < self.vocab)
        x = self.F.embedding(local.clamp(0, self.vocab - 1), self.embed) * inside.unsqueeze(-1)
        return self.all_reduce(x)

    def rope(self, x, cos, sin):
        half = self.d // 2
        return x * cos + self.torch.cat([-x[..., half:], x[..., :half]], -1) * sin

    # The element-wise parts of a layer, apart, so that torch.compile can fuse each of them.
    def pre_attention(self, x, ln1, qkv, cos, sin):
        hq, hkv, d = self.hq, self.hkv, self.d
        y = self.F.rms_norm(x, (self.h,), ln1, self.eps) @ qkv.t()
        T = y.shape[0]
        qk = self.rope(y[:, : (hq + hkv) * d].view(T, hq + hkv, d), cos, sin)
        return qk[:, :hq], qk[:, hq:], y[:, (hq + hkv) * d:].view(T, hkv, d)

    def mlp_in(self, x, attn_out, ln2, gate_up):
        x = x + attn_out
        gu = self.F.rms_norm(x, (self.h,), ln2, self.eps) @ gate_up.t()
        return x, self.F.silu(gu[:, : self.inter]) * gu[:, self.inter:]

    def layer_plain(self, i, x, pos, cos, sin, batch, seq):
        p = self.layers[i]
        q, k, v = self.pre_attention(x, p["ln1"], p["qkv"], cos, sin)
        kc, vc = self.k[i], self.v[i]
        hq, hkv, g, d = self.hq, self.hkv, self.g, self.d
        if seq == 1:  # decode: batch rows, one token each at position pos[0] (all equal here)
            kc.index_copy_(2, pos[:1], k.view(batch, hkv, 1, d))
            vc.index_copy_(2, pos[:1], v.view(batch, hkv, 1, d))
            n = self.context + 1
            Q = q.reshape(batch, hkv, g, d)
            o = self.F.scaled_dot_product_attention(Q, kc[:, :, :n], vc[:, :, :n]).reshape(batch, hq * d)
        else:  # prefill of one sequence: causal attention over its own tokens
            kt, vt = k.transpose(0, 1).unsqueeze(0), v.transpose(0, 1).unsqueeze(0)
            kc[:1, :, :seq] = kt
            vc[:1, :, :seq] = vt
            Q = q.transpose(0, 1).unsqueeze(0)
            o = self.F.scaled_dot_product_attention(Q, kt, vt, is_causal=True, enable_gqa=True)
            o = o.squeeze(0).transpose(0, 1).reshape(seq, hq * d)
        a = self.all_reduce(o @ p["o"].t())
        x, act = self.mlp_in(x, a, p["ln2"], p["gate_up"])
        return x + self.all_reduce(act @ p["down"].t())

    def compile_elementwise(self):
        """Fuse the element-wise work around the GEMMs (Inductor), as engines' compiled graphs do;
        the matmuls inside stay cuBLAS calls."""
        self.pre_attention = self.torch.compile(self.pre_attention, dynamic=False)
        self.mlp_in = self.torch.compile(self.mlp_in, dynamic=False)

    def forward(self, tokens, pos, batch, seq):
        x = self.embed_tokens(tokens)
        cos, sin = self.cos[pos].unsqueeze(1), self.sin[pos].unsqueeze(1)
        for i in range(len(self.layers)):
            x = self.layer_fn(i, x, pos, cos, sin, batch, seq)
        rows = x if seq == 1 else x[-1:]
        logits = self.F.rms_norm(rows, (self.h,), self.norm, self.eps) @ self.lm_head.t()
        return logits.argmax(-1)


def rank_main(rank, world, port, out, config_path, batch, context, prompt):
    torch, dist = init(rank, world, port)
    from torch.profiler import profile, ProfilerActivity

    with open(config_path) as f:
        c = json.load(f)
    torch.manual_seed(0)
    model = ShardedLlama(torch, dist, c, rank, world, batch, max(context + 16, prompt))
    model.context = context
    host = dist.new_group(backend="gloo")

    def gpu_times(fn, reps=50):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        dist.barrier(group=host)  # both ranks start timing together
        return cuda_event_times(fn, reps)

    def kernels_of(fn):
        dist.barrier(group=host)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        _, ks = kernel_durations(prof, ("",))
        return {"kernels_s": sum(e["dur"] for e in ks) * 1e-6, "kernel_count": len(ks),
                "by_kind_s": kernel_categories(ks), "top": top_kernels(ks)}

    def decode_graph():
        tok = torch.randint(0, c["vocab_size"], (batch,), device="cuda")
        pos = torch.full((batch,), context, dtype=torch.long, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model.forward(tok, pos, batch, 1)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model.forward(tok, pos, batch, 1)
        return graph.replay

    def prefill_step():
        ids = torch.randint(0, c["vocab_size"], (prompt,), device="cuda")
        pos = torch.arange(prompt, device="cuda")
        return lambda: model.forward(ids, pos, 1, prompt)

    results = {}
    with torch.no_grad():
        for name, compiled in (("graph", False), ("graph_compiled", True)):
            try:
                if compiled:
                    model.compile_elementwise()
                replay = decode_graph()
                times = gpu_times(replay)
                results[name] = {"step": "decode", "batch": batch, "context": context,
                                 "replay_s": statistics.median(times), "replay_min_s": min(times),
                                 **kernels_of(replay)}
                del replay
                prefill = prefill_step()
                times = gpu_times(prefill, reps=10)
                results["prefill" + ("_compiled" if compiled else "")] = {
                    "step": "prefill", "batch": 1, "seq": prompt, "gpu_s": statistics.median(times),
                    **kernels_of(prefill)}
            except Exception as e:  # noqa: BLE001 - a variant that fails is recorded, the rest kept
                results[name + "_error"] = f"{type(e).__name__}: {e}"[:400]
            torch.cuda.synchronize()
    rows = [None] * world
    dist.all_gather_object(rows, results, group=host)
    if rank == 0:
        import transformers  # noqa: F401 - only for the version in the record
        doc = {"what": "engine-style tensor-parallel Llama (scripts/gpu/tp_engine_step.py): fused qkv and gate/up, "
                       "vocabulary-parallel embedding and LM head, all-reduce after embedding, o and down, flash "
                       "attention over the cache in place; decode replayed from one CUDA graph (replay_s: CUDA "
                       "events, median of 50), prefill eager (gpu_s: median of 10); kernels: one step under "
                       "torch.profiler",
               "config": os.path.relpath(config_path, ROOT), "tp": world, "gpu": torch.cuda.get_device_name(),
               "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())), "ranks": rows}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--config", default=os.path.join(ROOT, "samples/configs/llama-3.1-8b/config.json"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--prompt", type=int, default=2048)
    a = ap.parse_args()
    import torch.multiprocessing as mp

    port = 29700 + os.getpid() % 1000
    mp.spawn(rank_main, args=(a.gpus, port, a.out, a.config, a.batch, a.context, a.prompt), nprocs=a.gpus)


if __name__ == "__main__":
    main()
