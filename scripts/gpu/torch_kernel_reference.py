#!/usr/bin/env python3
"""What PyTorch's own kernels take on the shapes rooflens replays: the reference for the
vendor-kernel harness (docs/profile.md). Run on the GPU machine:

    python3 scripts/gpu/torch_kernel_reference.py --out $OUT/torch_reference.json

Kernel time is the sum of the CUDA kernel records the PyTorch profiler (CUPTI) keeps for one
iteration, launch overhead excluded: the median over iterations. Each case is timed hot (back to
back) and cold (L2 emptied before each iteration by a pass over a 2x-L2 buffer, as `rooflens
profile --l2 cold` does; that pass's own kernels, recorded once alone, are recognised by name
and left out). The pass only reads: a pass that writes leaves dirty lines whose write-back lands
in the next kernel's time.
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

FLUSH_NAMES = set()  # kernels of the L2-emptying pass, recorded by flush_kernel_names()


def kernel_events(prof):
    out = []
    for e in prof.events():
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
            out.append(e)
    return out


def flush(buf):
    """Reads the 2x-L2 buffer once (a max over it), writing one element."""
    buf.amax()


def flush_kernel_names(buf):
    flush(buf)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        flush(buf)
        torch.cuda.synchronize()
    FLUSH_NAMES.update(e.name for e in kernel_events(prof))


def time_case(fn, iters=20, cold=False, flush_buf=None):
    """Median per-iteration kernel time (s) and the distinct kernel names, in launch order."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per_iter = []
    names = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(iters):
            if cold:
                flush(flush_buf)
            with torch.profiler.record_function(f"iter{i}"):
                fn()
        torch.cuda.synchronize()
    events = [e for e in kernel_events(prof) if not (cold and e.name in FLUSH_NAMES)]
    events.sort(key=lambda e: e.time_range.start)
    # Kernels of one iteration: as many as the total divides into, in launch order.
    if not events:
        return None, []
    per = len(events) // iters
    if per * iters != len(events) or per == 0:
        total = sum(e.device_time for e in events) * 1e-6
        return total / iters, sorted({e.name for e in events})
    for i in range(iters):
        chunk = events[i * per:(i + 1) * per]
        per_iter.append(sum(e.device_time for e in chunk) * 1e-6)
        if i == 0:
            for e in chunk:
                if e.name not in names:
                    names.append(e.name)
    return statistics.median(per_iter), names


def gemm_cases():
    # (m, n, k): activations [m, k] times nn.Linear weights [n, k], bf16.
    return [
        (8, 11008, 4096), (8, 4096, 11008), (8, 4096, 4096), (1, 4096, 4096), (16, 4096, 4096),
        (1000, 2304, 768), (1000, 768, 768), (1000, 3072, 768), (1000, 768, 3072),
        (1000, 50257, 768), (1000, 50264, 768), (1, 50257, 768),
        (2048, 4096, 4096), (2048, 11008, 4096), (2048, 4096, 11008), (2048, 32000, 4096),
        (8, 32000, 4096), (4096, 4096, 4096),
    ]


def attention_cases():
    # (batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal)
    return [
        (1, 12, 12, 1000, 1000, 64, True),
        (1, 12, 12, 1024, 1024, 64, True),
        (1, 32, 32, 2048, 2048, 128, True),
        (1, 32, 8, 2048, 2048, 128, True),
        (1, 32, 8, 1, 8193, 128, False),
        (16, 32, 8, 1, 8193, 128, False),
        (1, 32, 32, 1, 2049, 128, False),
        (8, 32, 32, 1, 513, 128, False),
        (1, 12, 12, 1, 1001, 64, False),
        (1, 12, 12, 1, 1025, 64, False),
        (16, 32, 8, 1, 4096, 128, False),  # Mistral-7B v0.1 decode: the sliding-window cache holds 4096 keys
    ]


def sdpa_backends():
    from torch.nn.attention import SDPBackend
    return {"default": None, "flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION}


def run_attention(results, flush_buf):
    from torch.nn.attention import sdpa_kernel
    dt = torch.bfloat16
    for (b, hq, hkv, sq, skv, d, causal) in attention_cases():
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=dt)
        k = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        v = torch.randn(b, hkv, skv, d, device="cuda", dtype=dt)
        row = {"batch": b, "q_heads": hq, "kv_heads": hkv, "q_len": sq, "kv_len": skv, "head_dim": d, "causal": causal,
               "dtype": "bf16", "backends": {}}
        for name, backend in sdpa_backends().items():
            def fn(backend=backend):
                if backend is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hq != hkv)
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hq != hkv)
            try:
                hot, names = time_case(fn)
                cold, _ = time_case(fn, cold=True, flush_buf=flush_buf)
                row["backends"][name] = {"hot_s": hot, "cold_s": cold, "kernels": names}
            except Exception as e:  # a backend that does not take the shape
                row["backends"][name] = {"error": str(e).splitlines()[0][:200]}
        results["attention"].append(row)
        print("attention", b, hq, hkv, sq, skv, d, {k: v.get("cold_s") for k, v in row["backends"].items()}, flush=True)


def run_gemms(results, flush_buf):
    dt = torch.bfloat16
    for (m, n, k) in gemm_cases():
        x = torch.randn(m, k, device="cuda", dtype=dt)
        w = torch.randn(n, k, device="cuda", dtype=dt)
        fn = lambda: F.linear(x, w)
        hot, names = time_case(fn)
        cold, _ = time_case(fn, cold=True, flush_buf=flush_buf)
        results["gemm"].append({"m": m, "n": n, "k": k, "dtype": "bf16", "hot_s": hot, "cold_s": cold, "kernels": names})
        print("gemm", m, n, k, hot, cold, flush=True)
    # The decode-batch case as a config lays it out: [8, 1, 4096] activations against one weight.
    x = torch.randn(8, 1, 4096, device="cuda", dtype=dt)
    w = torch.randn(11008, 4096, device="cuda", dtype=dt)
    fn = lambda: F.linear(x, w)
    hot, names = time_case(fn)
    cold, _ = time_case(fn, cold=True, flush_buf=flush_buf)
    results["gemm"].append({"m": 8, "n": 11008, "k": 4096, "layout": "[8,1,4096]", "dtype": "bf16", "hot_s": hot,
                            "cold_s": cold, "kernels": names})


def model_convs(batch, name="resnet50"):
    """Every Conv2d of a torchvision model (ResNet-50 by default) with the input it sees at this batch."""
    import torchvision
    model = getattr(torchvision.models, name)().cuda().eval()
    seen = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: seen.append((mod, tuple(inp[0].shape))))
             for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(torch.randn(batch, 3, 224, 224, device="cuda"))
    for h in hooks:
        h.remove()
    return seen


def run_convs(results, flush_buf):
    for batch in (1, 32):
        convs = model_convs(batch)
        for dtype_name, dt, tf32 in (("bf16", torch.bfloat16, False), ("fp32", torch.float32, False),
                                     ("fp32-tf32", torch.float32, True)):
            for layout in ("nchw", "channels_last"):
                torch.backends.cudnn.allow_tf32 = tf32
                torch.backends.cudnn.benchmark = True
                rows = conv_rows(convs, dt, layout, flush_buf)
                total_hot = sum(r["hot_s"] for r in rows)
                total_cold = sum(r["cold_s"] for r in rows)
                results["resnet50_convs"].append({"batch": batch, "dtype": dtype_name, "layout": layout, "convs": rows,
                                                  "total_hot_s": total_hot, "total_cold_s": total_cold})
                print("resnet50 convs", batch, dtype_name, layout, total_hot, total_cold, flush=True)
    torch.backends.cudnn.allow_tf32 = True


def run_mobilenet(results, flush_buf):
    """MobileNetV3-small's and EfficientNet-B0's convolutions at batch 64 in bf16 (their depthwise
    ones are what the replay's cuDNN NCHW engines ran 4x slower than PyTorch), ConvNeXt-T's (7x7
    depthwise) at batch 32, NCHW and channels_last."""
    torch.backends.cudnn.benchmark = True
    # ResNeXt-50 for its grouped 3x3 convolutions (32 groups of 4-32 channels).
    for model, batch in (("mobilenet_v3_small", 64), ("efficientnet_b0", 64), ("convnext_tiny", 32),
                         ("resnext50_32x4d", 32)):
        convs = model_convs(batch, model)
        for layout in ("nchw", "channels_last"):
            depthwise_layout(results, flush_buf, model, batch, convs, layout)
        # As the exported graphs have them, and the replay runs them: BatchNorm folded into a bias
        # on every convolution (PyTorch adds it with a kernel of its own after cuDNN's).
        depthwise_layout(results, flush_buf, model, batch, convs, "channels_last", bias=True)


def conv_rows(convs, dt, layout, flush_buf, bias=False):
    """Each convolution of `convs` (module, input shape) rebuilt in `dt` and `layout`, timed hot and
    cold; with `bias`, every one with a bias (else as the module has it)."""
    rows = []
    for mod, shape in convs:
        conv = torch.nn.Conv2d(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                               mod.dilation, mod.groups, bias=bias or mod.bias is not None).cuda().to(dt).eval()
        x = torch.randn(*shape, device="cuda", dtype=dt)
        if layout == "channels_last":
            conv = conv.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            fn = lambda: conv(x)
            hot, names = time_case(fn, iters=10)
            cold, _ = time_case(fn, iters=10, cold=True, flush_buf=flush_buf)
        rows.append({"input": list(shape), "out_channels": mod.out_channels, "groups": mod.groups,
                     "kernel": list(mod.kernel_size), "stride": list(mod.stride), "padding": list(mod.padding),
                     "hot_s": hot, "cold_s": cold, "kernels": names})
    return rows


def depthwise_layout(results, flush_buf, model, batch, convs, layout, bias=False):
    """A model's convolutions in one layout, bf16, into results["depthwise_models"]."""
    rows = conv_rows(convs, torch.bfloat16, layout, flush_buf, bias)
    results["depthwise_models"].append({"model": model, "batch": batch, "dtype": "bf16", "layout": layout,
                                        "bias": bias, "convs": rows})
    print(model, "convs", layout, sum(r["cold_s"] for r in rows), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="gemm,attention,conv")
    args = ap.parse_args()
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    flush_buf = torch.randn(2 * props.L2_cache_size // 2, dtype=torch.bfloat16, device="cuda")
    flush_kernel_names(flush_buf)
    results = {"gpu": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version(), "flush_kernels": sorted(FLUSH_NAMES), "gemm": [], "attention": [], "resnet50_convs": [],
               "depthwise_models": []}
    only = set(args.only.split(","))
    steps = [("gemm", run_gemms), ("attention", run_attention), ("conv", run_convs), ("mobilenet", run_mobilenet)]
    for key, step in steps:
        if key not in only:
            continue
        try:
            step(results, flush_buf)
        except Exception as e:  # keep what the other steps measured
            results.setdefault("errors", []).append(f"{key}: {e}")
            print("error in", key, e, file=sys.stderr, flush=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
