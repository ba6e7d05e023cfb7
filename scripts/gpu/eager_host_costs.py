#!/usr/bin/env python3
"""What eager PyTorch costs the host per op, on the machine it runs on (issue 17's step time).

A training step in eager PyTorch is a queue: Python issues each op (dispatch, autograd's record,
the launch) and the GPU runs the kernels behind it. When kernels are shorter than their issue, the
GPU waits on the host. This script measures the host's side with tensors so small that the GPU is
never the bottleneck, each figure the median of several repetitions of N ops divided by N:

  forward_op_s       an op under autograd (input requires grad): x * c, x + y, x.float() ...
  forward_view_s     a view under autograd (view, transpose, reshape of a contiguous tensor)
  nograd_op_s        an op without autograd (the router's top-k, index bookkeeping)
  backward_node_s    one autograd node of the backward (mul's backward: one kernel)
  linear_forward_s   F.linear with a bias (one addmm) under autograd
  linear_backward_s  its backward node (two GEMMs and the bias's row sum)
  module_call_s      nn.Module.__call__ around a forward that returns its input
  sync_s             a host synchronisation with an idle GPU (tensor.tolist())
  optimizer          AdamW (foreach) and SGD step host time for T parameter tensors: fixed + per tensor
  launch_s           the GPU time of an empty kernel back to back (for comparison)

  scripts/gpu/eager_host_costs.py OUT.json
On the GPU machine: /opt/torch/.venv/bin/python3 scripts/gpu/eager_host_costs.py $OUT/eager-host.json
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

N = 2000
REPEATS = 7


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def per_op(body, n=N, setup=None):
    """Median over REPEATS of the host time of body() divided by n; the GPU is synchronised before
    and after each repetition, so queued work never counts."""
    times = []
    for _ in range(REPEATS):
        state = setup() if setup else None
        sync()
        t0 = time.perf_counter()
        body(state)
        sync()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: only to try the script out
    small = lambda: torch.randn(64, device=dev, requires_grad=True)
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name() if dev == "cuda" else "cpu", "n": N, "repeats": REPEATS}

    def chain_mul(x):
        y = x
        for _ in range(N):
            y = y * 1.0001
        return y

    per_op(chain_mul, setup=small)  # warm-up
    out["forward_op_s"] = per_op(chain_mul, setup=small)

    def chain_add(x):
        y, z = x, x.detach().clone()
        for _ in range(N):
            y = y + z
        return y

    out["forward_add_s"] = per_op(chain_add, setup=small)

    def chain_view(x):
        y = x
        for _ in range(N // 2):
            y = y.view(8, 8).transpose(0, 1).reshape(64)
        return y

    out["forward_view_s"] = per_op(chain_view, n=3 * (N // 2), setup=small)

    def chain_nograd(x):
        y = x.detach()
        with torch.no_grad():
            for _ in range(N):
                y = y * 1.0001
        return y

    out["nograd_op_s"] = per_op(chain_nograd, setup=small)

    # The backward of a chain of N muls: N autograd nodes, each one mul kernel.
    def build_chain():
        return chain_mul(small()).sum()

    out["backward_node_s"] = per_op(lambda loss: loss.backward(), setup=build_chain)

    # A weight of its own per linear, as in a model (a shared one would add gradient sums).
    ws = [torch.randn(16, 16, device=dev, requires_grad=True) for _ in range(N)]
    bs = [torch.randn(16, device=dev, requires_grad=True) for _ in range(N)]

    def chain_linear(x):
        y = x
        for w, b in zip(ws, bs):
            y = F.linear(y, w, b)
        return y

    small_2d = lambda: torch.randn(4, 16, device=dev, requires_grad=True)
    out["linear_forward_s"] = per_op(chain_linear, setup=small_2d)
    # Each linear's node: two GEMMs (input and weight gradients) and the bias's sum, and the
    # AccumulateGrad nodes of its weight and bias (which take the gradients as they are).
    def linear_loss():
        for w in ws + bs:
            w.grad = None
        return chain_linear(small_2d()).sum()

    out["linear_backward_s"] = per_op(lambda loss: loss.backward(), setup=linear_loss)

    class Identity(torch.nn.Module):
        def forward(self, x):
            return x

    ident = Identity().to(dev)

    def modules(x):
        y = x
        for _ in range(N):
            y = ident(y)
        return y

    out["module_call_s"] = per_op(modules, setup=small)

    # A synchronisation with nothing queued: what the host pays beyond waiting.
    t = torch.arange(4, device=dev)
    out["sync_s"] = per_op(lambda _: [t.tolist() for _ in range(N // 10)], n=N // 10)

    # Optimizer steps on T tiny tensors: the host time, fixed + per tensor (least squares over T).
    opt_rows = {}
    for name, make in (("adamw", lambda ps: torch.optim.AdamW(ps, lr=1e-5)),
                       ("sgd", lambda ps: torch.optim.SGD(ps, lr=1e-5))):
        pts = []
        for count in (16, 64, 256):
            ps = [torch.randn(64, device=dev, requires_grad=True) for _ in range(count)]
            opt = make(ps)
            for p in ps:
                p.grad = torch.randn_like(p)
            opt.step()  # states allocated

            def steps(_):
                for _ in range(20):
                    opt.step()

            pts.append((count, per_op(steps, n=20)))
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        opt_rows[name] = {"fixed_s": my - slope * mx, "per_tensor_s": slope, "points": pts}
    out["optimizer"] = opt_rows

    # The GPU's side: empty-ish kernels back to back, queued without waiting on the host.
    if dev == "cuda":
        out["launch_s"] = graph_launch_s()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
    for k, v in out.items():
        if k.endswith("_s"):
            print(f"{k:20s} {v * 1e6:8.2f} us")
    for k, v in opt_rows.items():
        print(f"{k}: fixed {v['fixed_s'] * 1e6:.1f} us + {v['per_tensor_s'] * 1e6:.2f} us per tensor")


def graph_launch_s():
    """An add of one element, 500 times in a CUDA graph: the GPU's time per kernel when the host
    is out of the way."""
    dev = "cuda"
    x = torch.zeros(1, device=dev)
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(500):
            x.add_(1)
    g.replay()
    torch.cuda.synchronize()
    s.record()
    g.replay()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / 500


if __name__ == "__main__":
    main()
