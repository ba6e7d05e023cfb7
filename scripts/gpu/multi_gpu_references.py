#!/usr/bin/env python3
"""Real multi-GPU runs in PyTorch, the references `calibrate --gpus N`, `profile --tp N` and
`--phase train --dp N --zero Z` are checked against (issue 32). One process per GPU
(torch.multiprocessing, NCCL backend), as torchrun would start them; rank 0 writes the JSON.

  scripts/gpu/multi_gpu_references.py collectives OUT.json [--gpus N]
      torch.distributed's all-reduce, all-gather, reduce-scatter, all-to-all and a send/recv ring
      in bf16 from 1 KiB to 1 GiB: per size the median NCCL kernel time (torch.profiler's CUPTI
      records) and the call's host time to completion (no profiler attached). Each profiled call
      starts aligned on every rank, as rooflens times them: a host barrier (gloo), then a 2 ms
      spin on the GPU that the collective queues behind; a sample's time is the fastest rank's
      kernel (the rank that arrives last waits for no other), the slowest rank's is kept beside it.
  scripts/gpu/multi_gpu_references.py tp OUT.json [--gpus N] [--config PATH]
      A hand-sharded Hugging Face Llama (Megatron's split: q/k/v/gate/up by output columns,
      o/down by input rows, the vocabulary halved in the embedding and the LM head; an
      all-reduce after the embedding, o_proj and down_proj), random bf16 weights, sdpa: a decode
      step (batch 8, 1,024 cached tokens, a StaticCache) and a prefill (batch 1, 2,048 tokens),
      each as the GPU ran it (kernel time summed per step under torch.profiler, NCCL apart) and
      as the host did (wall time per step, no profiler).
  scripts/gpu/multi_gpu_references.py train-host OUT.json [--gpus N] [--layers 2,4,8,qwen2:4]
      The host's time per phase of the same step at several depths, FSDP2 beside the unsharded
      model on the same GPU: what FSDP adds on the host (its step is host-bound on 2 GPUs).
  scripts/gpu/multi_gpu_references.py train OUT.json [--gpus N]
      The llama-4l training case of scripts/gpu/training_references.py (batch 4 x 1,024 tokens,
      AdamW) data-parallel: DDP (fp32 weights, torch.autocast bf16; ZeRO 0) and FSDP2's
      fully_shard on every decoder layer and the root (bf16 compute, fp32 gradient reduction;
      ZeRO 3): each rank's peak memory (max_memory_allocated over step 2), the step time
      (CUDA events, median of 5), and the host's time until step() returns beside the step's wall
      time (median of 10; equal when the host is the bound).

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1, set here for every rank unless already set).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_k, _v)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def init(rank, world, port):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    return torch, dist


def kernel_durations(prof, match):
    """Durations (s) of the kernels whose name contains any of `match`, in start order."""
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    ks = [e for e in events if e.get("cat") == "kernel" and any(m in e["name"].lower() for m in match)]
    ks.sort(key=lambda e: e["ts"])
    return [e["dur"] * 1e-6 for e in ks], ks


def kernel_categories(ks):
    """Summed kernel time (s) by kind, from the kernel names: NCCL, GEMMs, attention, the rest."""
    out = {"nccl": 0.0, "gemm": 0.0, "attention": 0.0, "other": 0.0}
    for e in ks:
        n = e["name"].lower()
        kind = ("nccl" if "nccl" in n else
                "attention" if any(m in n for m in ("flash", "fmha", "attention", "sdpa")) else
                "gemm" if any(m in n for m in ("gemm", "gemv", "nvjet", "cutlass", "sm90_xmma", "splitk")) else "other")
        out[kind] += e["dur"] * 1e-6
    return out


def top_kernels(ks, n=12):
    by = {}
    for e in ks:
        k = e["name"][:90]
        t, c = by.get(k, (0.0, 0))
        by[k] = (t + e["dur"] * 1e-6, c + 1)
    return [{"name": k, "s": t, "count": c} for k, (t, c) in sorted(by.items(), key=lambda x: -x[1][0])[:n]]


# ---- collectives ---------------------------------------------------------------------------

def collectives_rank(rank, world, port, out):
    torch, dist = init(rank, world, port)
    from torch.profiler import profile, ProfilerActivity

    sizes = [1024 * 4 ** k for k in range(11)]  # 1 KiB .. 1 GiB
    big = sizes[-1] // 2
    send = torch.ones(big, dtype=torch.bfloat16, device="cuda")
    recv = torch.empty(big, dtype=torch.bfloat16, device="cuda")

    def call(name, nbytes):
        n = nbytes // 2
        if name == "all-reduce":
            return lambda: dist.all_reduce(send[:n])
        if name == "all-gather":
            return lambda: dist.all_gather_into_tensor(recv[:n], send[:n // world])
        if name == "reduce-scatter":
            return lambda: dist.reduce_scatter_tensor(recv[:n // world], send[:n])
        if name == "all-to-all":
            return lambda: dist.all_to_all_single(recv[:n], send[:n])
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        return lambda: dist.batch_isend_irecv([dist.P2POp(dist.isend, send[:n], nxt),
                                               dist.P2POp(dist.irecv, recv[:n], prv)])

    # Host-side barrier (no NCCL kernel in the profile) and ~2 ms of GPU spin behind which every
    # rank's collective is queued before any of them starts.
    host_group = dist.new_group(backend="gloo")
    spin_cycles = 4_000_000  # ~2 ms at the 1.7-2.0 GHz of H100 and H200
    results = {}
    reps = 20
    for name in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send/recv"):
        rows = []
        for nbytes in sizes:
            nbytes = max(2 * world, nbytes // (2 * world) * (2 * world))
            fn = call(name, nbytes)

            def once():
                r = fn()
                if isinstance(r, list):
                    for w in r:
                        w.wait()
                torch.cuda.synchronize()

            for _ in range(3):
                once()
            dist.barrier()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(reps):
                    once()
            unaligned, _ = kernel_durations(prof, ("nccl",))
            dist.barrier()
            wall = []
            for _ in range(reps):
                t0 = time.perf_counter()
                once()
                wall.append(time.perf_counter() - t0)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(reps):
                    dist.barrier(group=host_group)
                    torch.cuda._sleep(spin_cycles)
                    once()
            durs, _ = kernel_durations(prof, ("nccl",))
            per_rank = [None] * world
            dist.all_gather_object(per_rank, durs, group=host_group)
            samples = list(zip(*per_rank)) if all(per_rank) else []

            def med(values):
                return statistics.median(values) if values else None

            # The rank that arrives last waits for no one: the fastest rank's kernel of a sample is the
            # collective's own time; the slowest rank's adds whatever launch skew is left.
            rows.append({"bytes": nbytes, "kernel_s": med([min(x) for x in samples]),
                         "kernel_s_slowest_rank": med([max(x) for x in samples]),
                         "kernel_s_unaligned_rank0": med(unaligned),
                         "kernels": len(samples), "wall_s": statistics.median(wall)})
        results[name] = rows
    if rank == 0:
        doc = {"what": "torch.distributed NCCL collectives, bf16, each call synchronized; kernel: median "
                       "over samples of the fastest rank's NCCL kernel duration under torch.profiler (the last "
                       "to arrive waits for no one), every call queued behind a 2 ms GPU spin after a host "
                       "barrier; kernel_s_slowest_rank: the slowest rank's; kernel_s_unaligned_rank0: "
                       "rank 0's median without that alignment; wall: median host time of the call until "
                       "the stream finished (no profiler)",
               "gpus": world, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())), "curves": results}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


# ---- tensor-parallel Llama -----------------------------------------------------------------

def tp_rank(rank, world, port, out, config_path, graphs):
    torch, dist = init(rank, world, port)
    import transformers
    from torch.profiler import profile, ProfilerActivity

    with open(config_path) as f:
        full = json.load(f)
    shard = dict(full)
    for key in ("num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size"):
        shard[key] = full[key] // world
    # head_dim stays the full model's (hidden / heads): halving the heads must not change it.
    shard["head_dim"] = full.get("head_dim", full["hidden_size"] // full["num_attention_heads"])
    shard.pop("architectures", None)
    shard.pop("torch_dtype", None)
    shard.pop("dtype", None)
    model_type = shard.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **shard)
    torch.manual_seed(rank)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa",
                                                              dtype=torch.bfloat16).eval()

    def reduce_output(_module, _inputs, output):
        dist.all_reduce(output)
        return output

    model.model.embed_tokens.register_forward_hook(reduce_output)
    for layer in model.model.layers:
        layer.self_attn.o_proj.register_forward_hook(reduce_output)
        layer.mlp.down_proj.register_forward_hook(reduce_output)

    def static_cache(batch, length):
        try:
            return transformers.StaticCache(config=config, max_cache_len=length)
        except TypeError:
            return transformers.StaticCache(config=config, max_batch_size=batch, max_cache_len=length,
                                            device="cuda", dtype=torch.bfloat16)

    def step_figures(run, steps):
        """Per step: host wall time (no profiler), then under torch.profiler the kernels' summed
        time and NCCL's share, and the GPU span from first kernel start to last end."""
        for _ in range(3):
            run(0)
        torch.cuda.synchronize()
        dist.barrier()
        wall = []
        for i in range(steps):
            t0 = time.perf_counter()
            run(i)
            torch.cuda.synchronize()
            wall.append(time.perf_counter() - t0)
        dist.barrier()
        per_step = []
        for i in range(3):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                run(i)
                torch.cuda.synchronize()
            _, ks = kernel_durations(prof, ("",))
            nccl = sum(e["dur"] for e in ks if "nccl" in e["name"].lower()) * 1e-6
            total = sum(e["dur"] for e in ks) * 1e-6
            span = (max(e["ts"] + e["dur"] for e in ks) - min(e["ts"] for e in ks)) * 1e-6
            per_step.append({"kernels_s": total, "nccl_s": nccl, "gpu_span_s": span, "kernel_count": len(ks),
                             "by_kind_s": kernel_categories(ks), "top": top_kernels(ks)})
        pick = sorted(per_step, key=lambda s: s["kernels_s"])[1]
        return {"wall_s": statistics.median(wall), **pick}

    def graph_figures(run):
        """The step captured in one CUDA graph and replayed, as serving engines run decode: the
        replay's time (CUDA events, median of 20), and one replay's kernels under torch.profiler."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                run(0)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run(0)
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        dist.barrier()
        times = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            graph.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        dist.barrier()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            graph.replay()
            torch.cuda.synchronize()
        _, ks = kernel_durations(prof, ("",))
        return {"replay_s": statistics.median(times), "kernels_s": sum(e["dur"] for e in ks) * 1e-6,
                "kernel_count": len(ks), "by_kind_s": kernel_categories(ks), "top": top_kernels(ks)}

    results = {}
    with torch.no_grad():
        # Decode: batch 8, 1,024 tokens cached, one new token a step.
        batch, context = 8, 1024
        cache = static_cache(batch, context + 16)
        ids = torch.randint(0, config.vocab_size, (batch, context), device="cuda")
        model(input_ids=ids, past_key_values=cache, cache_position=torch.arange(context, device="cuda"), use_cache=True)
        token = torch.randint(0, config.vocab_size, (batch, 1), device="cuda")
        position = torch.tensor([context], device="cuda")

        def decode(_i):
            model(input_ids=token, past_key_values=cache, cache_position=position, use_cache=True)

        results["decode"] = {"batch": batch, "context": context, **step_figures(decode, 10)}
        if graphs:
            # Off by default: on 2 x H200 (torch 2.11, transformers 5.17) capturing HF's decode step
            # with its StaticCache ended in a device-side assert that took the process down.
            results["decode_cuda_graph"] = {"batch": batch, "context": context, **graph_figures(decode)}
        del cache
        torch.cuda.empty_cache()
        # Prefill: batch 1, 2,048 tokens, no cache kept.
        prompt = torch.randint(0, config.vocab_size, (1, 2048), device="cuda")

        def prefill(_i):
            model(input_ids=prompt, use_cache=False)

        results["prefill"] = {"batch": 1, "seq": 2048, **step_figures(prefill, 5)}
    if rank == 0:
        doc = {"what": "hand-sharded HF Llama, tensor parallel over the GPUs (all-reduce after embed_tokens, "
                       "o_proj, down_proj), bf16, sdpa; kernels_s: summed kernel time of one step under "
                       "torch.profiler (the middle of 3), nccl_s: NCCL's part; wall_s: host time per step without a "
                       "profiler (median)",
               "config": os.path.relpath(config_path, ROOT), "tp": world, "gpu": torch.cuda.get_device_name(),
               "torch": torch.__version__, "transformers": transformers.__version__, "steps": results}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


# ---- data-parallel training ----------------------------------------------------------------

def train_rank(rank, world, port, out, mode):
    torch, dist = init(rank, world, port)
    from training_references import MODELS, cuda_event_times
    import transformers

    fields = dict(MODELS["llama-4l"])
    model_type = fields.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").cuda().train()
    batch, seq = 4, 1024
    if mode in ("ddp", "ddpview"):
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank],
                                                          gradient_as_bucket_view=mode == "ddpview")
        autocast = True
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        autocast = False
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    x = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    at_rest = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    peaks = []
    for _ in range(3):  # steps 2, 3, 4 each on its own (DDP rebuilds its buckets in step 2)
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated())
    peak = peaks[0]
    times = sorted(cuda_event_times(step, 5))
    # The host's share: time until step() returns (its kernels enqueued), then until the GPU is done.
    # A step whose host time is as long as its wall time is bound by the host, not the GPU.
    host, wall = [], []
    for _ in range(10):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        host.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        wall.append(time.perf_counter() - t0)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    _, ks = kernel_durations(prof, ("",))
    row = {"rank": rank, "at_rest_bytes": at_rest, "peak_bytes": peak, "peaks_steps_2_4": peaks,
           "step_time_s": times[len(times) // 2], "step_times_s": times,
           "host_s": statistics.median(host), "wall_s": statistics.median(wall),
           "profiled_step": {"kernels_s": sum(e["dur"] for e in ks) * 1e-6, "kernel_count": len(ks),
                             "gpu_span_s": (max(e["ts"] + e["dur"] for e in ks) - min(e["ts"] for e in ks)) * 1e-6,
                             "by_kind_s": kernel_categories(ks), "top": top_kernels(ks, 8)}}
    rows = [None] * world
    dist.all_gather_object(rows, row)
    if rank == 0:
        doc = {"what": f"llama-4l (scripts/gpu/training_references.py), batch {batch} x {seq} per GPU, AdamW, "
                       + ("DDP, fp32 weights under torch.autocast(bf16)" if mode == "ddp" else
                          "DDP with gradient_as_bucket_view=True, fp32 weights under torch.autocast(bf16)"
                          if mode == "ddpview" else
                          "FSDP2 fully_shard per decoder layer and root, bf16 params, fp32 gradient reduction"),
               "mode": mode, "gpus": world, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
               "transformers": transformers.__version__, "batch": batch, "seq": seq, "ranks": rows}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


def train_host_rank(rank, world, port, out, layer_counts):
    """Where FSDP2's step time goes when the host is the bound: for llama-4l at several depths, the
    host's time per phase (forward until the loss is returned, backward until loss.backward()
    returns, optimizer step and zero_grad) with FSDP2 over `world` GPUs and, on the same GPU and
    process, the same model unsharded under torch.autocast (no communication): the difference is
    what FSDP adds on the host. Median of 10 steps after 3, no profiler attached."""
    torch, dist = init(rank, world, port)
    import transformers
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    batch, seq = 4, 1024
    rows = []
    for spec in layer_counts:
        from training_references import MODELS
        # "qwen2:4": the same shape as Qwen2 (q/k/v biases: 12 tensors a layer where Llama has 9),
        # so that a cost per FSDP unit and a cost per parameter tensor can be told apart.
        arch, _, layers = spec.rpartition(":")
        layers = int(layers)
        fields = dict(MODELS["llama-4l"], num_hidden_layers=layers)
        model_type = fields.pop("model_type")
        if arch:
            model_type = arch
            fields.pop("attention_bias", None)
            fields.pop("mlp_bias", None)
        config = transformers.AutoConfig.for_model(model_type, **fields)
        x = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
        for mode in ("plain", "fsdp"):
            torch.manual_seed(0)
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").cuda().train()
            autocast = mode == "plain"
            if mode == "fsdp":
                policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                for layer in model.model.layers:
                    fully_shard(layer, mp_policy=policy)
                fully_shard(model, mp_policy=policy)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
            phases = {"forward": [], "backward": [], "optimizer": [], "host": [], "wall": []}
            for i in range(13):
                torch.cuda.synchronize()
                dist.barrier()
                t0 = time.perf_counter()
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                    loss = model(input_ids=x, labels=x, use_cache=False).loss
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                opt.step()
                opt.zero_grad(set_to_none=True)
                t3 = time.perf_counter()
                torch.cuda.synchronize()
                t4 = time.perf_counter()
                if i >= 3:
                    for k, v in (("forward", t1 - t0), ("backward", t2 - t1), ("optimizer", t3 - t2),
                                 ("host", t3 - t0), ("wall", t4 - t0)):
                        phases[k].append(v)
            rows.append({"rank": rank, "model_type": model_type, "layers": layers, "mode": mode,
                         "param_tensors": sum(1 for _ in model.parameters()),
                         **{k + "_s": statistics.median(v) for k, v in phases.items()}})
            del model, opt
            torch.cuda.empty_cache()
    gathered = [None] * world
    dist.all_gather_object(gathered, rows)
    if rank == 0:
        doc = {"what": "llama-4l's shape at several depths, batch 4 x 1,024 a GPU, AdamW: host time per phase "
                       "(median of 10 steps, no profiler) unsharded under torch.autocast(bf16) ('plain', no "
                       "communication) and under FSDP2 (fully_shard per decoder layer and root, bf16 params, fp32 "
                       "reduction); wall: to the end of the step's GPU work",
               "gpus": world, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
               "transformers": transformers.__version__, "rows": [r for g in gathered for r in g]}
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["collectives", "tp", "train-ddp", "train-ddpview", "train-fsdp", "train-host"])
    ap.add_argument("out")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--graphs", action="store_true", help="tp: also capture the decode step in a CUDA graph")
    ap.add_argument("--layers", type=lambda t: t.split(","), default=["2", "4", "8", "qwen2:4"],
                    help="train-host: the depths to time (ARCH:N for another architecture's layers)")
    ap.add_argument("--config", default=os.path.join(ROOT, "samples/configs/llama-3.1-8b/config.json"))
    a = ap.parse_args()
    import torch.multiprocessing as mp

    port = 29500 + os.getpid() % 1000
    if a.what == "collectives":
        mp.spawn(collectives_rank, args=(a.gpus, port, a.out), nprocs=a.gpus)
    elif a.what == "tp":
        mp.spawn(tp_rank, args=(a.gpus, port, a.out, a.config, a.graphs), nprocs=a.gpus)
    elif a.what == "train-host":
        mp.spawn(train_host_rank, args=(a.gpus, port, a.out, a.layers), nprocs=a.gpus)
    else:
        mp.spawn(train_rank, args=(a.gpus, port, a.out, a.what.split("-")[1]), nprocs=a.gpus)


if __name__ == "__main__":
    main()
