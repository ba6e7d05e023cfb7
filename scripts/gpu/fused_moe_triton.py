#!/usr/bin/env python3
"""An MoE projection as vLLM and SGLang run it on Hopper: one Triton kernel over the routed rows
sorted by expert and padded to the tile's rows, each program a tile of one expert's output
(vLLM's `fused_moe` and SGLang's `fused_moe_triton` are kernels of this design; this one is
written here, not taken from them). Each shape is tuned over a small set of tiles, as those
engines ship per-GPU tuned tiles, and the fastest tile's kernel time is what is recorded.

bf16: bf16 rows and weights, fp32 accumulation. fp8: e4m3 rows and weights with 128 x 128 block
scales on the weights and 1 x 128 group scales on the rows (DeepSeek-V3's and Qwen3-FP8's
checkpoints), applied at each 128-deep step of the reduction, bf16 out. mxfp4: bf16 rows, MXFP4
experts (gpt-oss: e2m1 weights two a byte, an e8m0 scale per 32 along the reduction) upcast to
bf16 in the kernel, as Hopper engines run them (no fp4 tensor cores there).

The mxfp4 mode was written on 2026-12-08 in a session that was lent no GPU: it has not run yet.
Its --check, --layers gpt-oss-20b and --table ... mxfp4 are the next GPU session's first calls;
until a profile holds moe_fused.mxfp4, serve prices MXFP4 experts as their weights' stream.

    python3 fused_moe_triton.py --check
        the kernel against torch.matmul on a few shapes (both precisions)
    python3 fused_moe_triton.py --table PROFILE.json OUT.json [bf16] [fp8] [mxfp4]
        every point of the profile's expert tables (moe.bf16, moe.fp8: experts, rows an expert,
        n, k; weights [experts, n, k]) on this kernel, and reductions of 128 and 256 besides, as
        moe_fused.bf16 and moe_fused.fp8 with the same axes (null where the profile's point is);
        mxfp4 at moe.bf16's points, as moe_fused.mxfp4
    python3 fused_moe_triton.py --merge OUT.json PROFILE.json
        those tables into a profile; `rooflens serve --engine vllm|sglang` prices MoE
        projections from them
    python3 fused_moe_triton.py --layers NAME OUT.json   (--decode OUT.json: qwen3-30b-a3b)
        whole MoE layers as one GPU of a deployment runs them (NAME: qwen3-30b-a3b, bf16, 1 GPU;
        deepseek-v3-tp8 and deepseek-v3-ep8, fp8, a GPU of 8 in tensor or expert parallel;
        deepseek-v3-tp8-prefill, prompts of 1k-8k tokens; gpt-oss-20b, mxfp4, 1 GPU) at decode
        batches under uniform random
        routing: both projections on this kernel (and on
        PyTorch's grouped GEMM in bf16), the expert weights touched and the bandwidth reached

Times are kernel times under the profiler (CUPTI), the L2 flushed before each call, as
`rooflens calibrate` times a table point.
"""
import json
import math
import sys

try:
    import torch
    import triton
    import triton.language as tl
except ImportError:  # --merge runs where PyTorch is not installed
    torch = triton = tl = None

from moe_grouped_gemm import kernel_seconds as cupti_kernel_seconds  # same folder
from profile_tables import merge_tables  # same folder
from training_references import cuda_event_times  # same folder

SCALE_BLOCK = 128  # the fp8 checkpoints' scale blocks
MX_BLOCK = 32  # MXFP4: one e8m0 scale per 32 weights along the reduction (OCP microscaling)
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
WEIGHT_BYTES = {"bf16": 2, "fp8": 1, "mxfp4": 0.5 + 1 / MX_BLOCK}  # a weight, its scale's share

if triton is not None:

    @triton.jit
    def _e2m1(code, scale):
        """4-bit e2m1 codes (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6)
        times 2^(scale - 127) (e8m0), as bf16: the fp32 bits built directly, as upcasting kernels
        do."""
        mag = code & 7
        e = mag >> 1
        m = mag & 1
        bits = (tl.where(e > 0, e + 126, 126) + scale - 127) << 23
        bits = bits | tl.where(e > 0, m << 22, 0)
        bits = tl.where(mag != 0, bits, 0) | ((code >> 3) << 31)
        return bits.to(tl.float32, bitcast=True).to(tl.bfloat16)

    @triton.jit
    def _moe_projection(x_ptr, w_ptr, out_ptr, ids_ptr, block_expert_ptr, xs_ptr, ws_ptr,
                        valid_rows, padded_rows, N, K, stride_x, stride_we, stride_wn, stride_out,
                        stride_xs, stride_wse, stride_wsn, num_experts,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                        GROUP_M: tl.constexpr, BLOCK_SCALED: tl.constexpr, TOPK: tl.constexpr,
                        MXFP4: tl.constexpr):
        # Row r of the output is assignment r; it reads row r // TOPK of x (a token's TOPK
        # assignments share its row). Blocks past the routed ones (expert == num_experts) exit, so
        # that a CUDA graph can launch the largest grid a step can need.
        # Tiles in groups of GROUP_M row blocks, so that neighbouring programs share a weight tile.
        pid = tl.program_id(0)
        blocks_m = tl.cdiv(padded_rows, BM)
        blocks_n = N // BN
        per_group = GROUP_M * blocks_n
        first_m = (pid // per_group) * GROUP_M
        group_m = tl.minimum(blocks_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_m
        pid_n = (pid % per_group) // group_m

        rows = pid_m * BM + tl.arange(0, BM)
        ids = tl.load(ids_ptr + rows)
        valid = ids < valid_rows  # padding slots hold valid_rows
        expert = tl.load(block_expert_ptr + pid_m).to(tl.int64)
        if expert >= num_experts:
            return
        cols = pid_n * BN + tl.arange(0, BN)
        depth = tl.arange(0, BK)
        a_ptrs = x_ptr + (ids // TOPK)[:, None].to(tl.int64) * stride_x + depth[None, :]
        if MXFP4:  # two e2m1 weights a byte along k (the even one low), an e8m0 scale per 32
            pairs = tl.arange(0, BK // 2)
            b_ptrs = w_ptr + expert * stride_we + cols[None, :].to(tl.int64) * stride_wn + pairs[:, None]
            s_ptrs = ws_ptr + expert * stride_wse + cols[None, :].to(tl.int64) * stride_wsn + (pairs // 16)[:, None]
        else:
            b_ptrs = w_ptr + expert * stride_we + cols[None, :].to(tl.int64) * stride_wn + depth[:, None]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for step in range(0, K // BK):
            a = tl.load(a_ptrs, mask=valid[:, None], other=0.0)
            if MXFP4:
                packed = tl.load(b_ptrs).to(tl.int32)
                scale = tl.load(s_ptrs).to(tl.int32)
                b = tl.reshape(tl.permute(tl.join(_e2m1(packed & 15, scale), _e2m1(packed >> 4, scale)),
                                          (0, 2, 1)), (BK, BN))
                acc = tl.dot(a, b, acc)
                b_ptrs += BK // 2
                s_ptrs += BK // 32
            elif BLOCK_SCALED:  # BK == 128: one row scale and one weight scale a step
                b = tl.load(b_ptrs)
                xs = tl.load(xs_ptr + ids * stride_xs + step, mask=valid, other=0.0)
                ws = tl.load(ws_ptr + expert * stride_wse + (cols // 128) * stride_wsn + step)
                acc += tl.dot(a, b) * xs[:, None] * ws[None, :]
                b_ptrs += BK
            else:
                b = tl.load(b_ptrs)
                acc = tl.dot(a, b, acc)
                b_ptrs += BK
            a_ptrs += BK
        out_ptrs = out_ptr + ids[:, None].to(tl.int64) * stride_out + cols[None, :]
        tl.store(out_ptrs, acc.to(tl.bfloat16), mask=valid[:, None])


# (BM, BN, BK, warps, stages): few-row tiles for decodes, wide ones for prefills.
TILES = [(16, 32, 256, 4, 4), (16, 64, 128, 4, 4), (16, 64, 128, 4, 6), (16, 64, 256, 4, 3),
         (16, 64, 256, 4, 4), (16, 128, 128, 4, 3), (16, 128, 128, 4, 5), (16, 128, 256, 4, 3),
         (16, 256, 128, 8, 3), (32, 128, 128, 4, 4), (64, 128, 64, 4, 4), (64, 128, 128, 4, 3),
         (64, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 128, 8, 3), (128, 256, 64, 8, 3)]


# MXFP4 besides: reductions of 64, for gpt-oss's 2,880 (2^6 x 45), in few-row tiles.
MX_TILES = [(16, 32, 64, 4, 4), (16, 64, 64, 2, 4), (16, 64, 64, 4, 3), (16, 64, 64, 4, 4),
            (16, 128, 64, 4, 3), (16, 128, 64, 4, 4), (32, 64, 64, 4, 4), (32, 128, 64, 4, 4)]


def tiles_for(dtype, rows_per_expert, n, k):
    out = []
    for bm, bn, bk, warps, stages in TILES + (MX_TILES if dtype == "mxfp4" else []):
        if dtype == "fp8" and bk != SCALE_BLOCK:
            continue
        if dtype == "mxfp4" and bk % MX_BLOCK:
            continue
        if n % bn or k % bk or bm > max(16, 4 * rows_per_expert):
            continue
        out.append((bm, bn, bk, warps, stages))
    return out


def sort_rows(expert_of_row, experts, bm):
    """Rows sorted by expert, each expert's padded to a multiple of bm (padding = row count), and
    each bm-row block's expert: what the engines' alignment step produces."""
    valid = expert_of_row.numel()
    ids, block_expert = [], []
    order = torch.argsort(expert_of_row.cpu(), stable=True)
    counts = torch.bincount(expert_of_row.cpu(), minlength=experts).tolist()
    start = 0
    for e, c in enumerate(counts):
        if c == 0:
            continue
        blocks = math.ceil(c / bm)
        ids.extend(order[start:start + c].tolist() + [valid] * (blocks * bm - c))
        block_expert.extend([e] * blocks)
        start += c
    dev = expert_of_row.device
    return (torch.tensor(ids, dtype=torch.int32, device=dev),
            torch.tensor(block_expert, dtype=torch.int32, device=dev))


def quantize_weights(w):
    """[experts, n, k] weights to e4m3 with a scale per 128 x 128 block."""
    experts, n = w.shape[0], w.shape[1]
    wb = w.float().view(experts, n // SCALE_BLOCK, SCALE_BLOCK, -1, SCALE_BLOCK)
    ws = (wb.abs().amax((2, 4)) / 448).clamp(min=1e-12)
    return (wb / ws[:, :, None, :, None]).view_as(w).to(torch.float8_e4m3fn), ws


def quantize_mxfp4(w):
    """[experts, n, k] weights to MXFP4: e2m1 codes two a byte along k (the even one in the low
    nibble) and an e8m0 scale per 32, the block's largest magnitude brought to at most 6 (OCP's
    shared exponent floor(log2 amax) - 2), each weight rounded to the nearest e2m1 value."""
    experts, n, k = w.shape
    g = w.float().view(experts, n, k // MX_BLOCK, MX_BLOCK)
    amax = g.abs().amax(-1).clamp(min=2.0 ** -120)
    exp = torch.floor(torch.log2(amax)) - 2
    q = g / torch.exp2(exp)[..., None]
    levels = torch.tensor(E2M1, device=w.device)
    code = (q.abs()[..., None] - levels).abs().argmin(-1) | ((q < 0).to(torch.int64) << 3)
    code = code.view(experts, n, k).to(torch.uint8)
    packed = code[..., 0::2] | (code[..., 1::2] << 4)
    return packed.contiguous(), (exp + 127).to(torch.uint8).contiguous()


def dequantize_mxfp4(packed, scales):
    levels = torch.tensor(E2M1, device=packed.device)
    codes = torch.stack((packed & 15, packed >> 4), -1).flatten(-2).long()
    values = levels[codes & 7] * torch.where(codes >= 8, -1.0, 1.0)
    experts, n, k = values.shape
    scale = torch.exp2(scales.float() - 127)
    return (values.view(experts, n, k // MX_BLOCK, MX_BLOCK) * scale[..., None]).view(experts, n, k)


def random_mxfp4(experts, n, k):
    """MXFP4 weights of random codes and scales near 1, for timing (quantizing the largest table
    points' experts would need their bf16 weights, 4x the memory)."""
    packed = torch.randint(0, 256, (experts, n, k // 2), device="cuda", dtype=torch.uint8)
    scales = torch.randint(120, 128, (experts, n, k // MX_BLOCK), device="cuda", dtype=torch.uint8)
    return packed, scales


class Projection:
    """One MoE projection, out[r] = x[r] @ w[expert_of_row[r]]^T, ready to launch per tile."""

    def __init__(self, dtype, x, w, expert_of_row, fp8_weights=None):
        """fp8_weights: (w, scales) already quantized (quantizing large experts takes seconds).
        mxfp4: w may be (packed, scales) already."""
        self.dtype = dtype
        if isinstance(w, tuple):  # packed mxfp4: k / 2 bytes a row
            self.experts, self.n, self.k = w[0].shape[0], w[0].shape[1], 2 * w[0].shape[2]
        else:
            self.experts, self.n, self.k = w.shape
        self.expert_of_row = expert_of_row
        self.out = torch.empty(x.shape[0], self.n, device="cuda", dtype=torch.bfloat16)
        if dtype == "bf16":
            self.x, self.w = x, w
            self.xs = self.ws = torch.empty(1, device="cuda", dtype=torch.float32)
        elif dtype == "mxfp4":  # bf16 rows; w: (packed, scales) or bf16 weights to quantize
            self.x, (self.w, self.ws) = x, (w if isinstance(w, tuple) else quantize_mxfp4(w))
            self.xs = torch.empty(1, device="cuda", dtype=torch.float32)
        else:  # quantize per 1 x 128 row group and per 128 x 128 weight block
            g = x.float().view(x.shape[0], -1, SCALE_BLOCK)
            self.xs = (g.abs().amax(-1) / 448).clamp(min=1e-12)
            self.x = (g / self.xs[..., None]).view_as(x).to(torch.float8_e4m3fn)
            self.w, self.ws = fp8_weights or quantize_weights(w)
        self.sorted = {}

    def launch(self, tile):
        bm = tile[0]
        if bm not in self.sorted:
            self.sorted[bm] = sort_rows(self.expert_of_row, self.experts, bm)
        ids, block_expert = self.sorted[bm]
        launch(self.x, self.w, self.out, ids, block_expert, self.x.shape[0], 1, tile, self.xs, self.ws,
               mxfp4=self.dtype == "mxfp4")
        return self.out

    def reference(self):
        if self.dtype == "bf16":
            xf, wf = self.x.float(), self.w.float()
        elif self.dtype == "mxfp4":
            xf, wf = self.x.float(), dequantize_mxfp4(self.w, self.ws)
        else:
            xf = (self.x.float().view(self.x.shape[0], -1, SCALE_BLOCK) * self.xs[..., None]).view(self.x.shape)
            wf = (self.w.float().view(self.experts, self.n // SCALE_BLOCK, SCALE_BLOCK, -1, SCALE_BLOCK)
                  * self.ws[:, :, None, :, None]).view(self.w.shape)
        out = torch.empty(self.x.shape[0], self.n, device="cuda")
        for e in range(self.experts):
            sel = self.expert_of_row == e
            if sel.any():
                out[sel] = xf[sel] @ wf[e].t()
        return out


def align_on_gpu(expert_of_row, experts, bm):
    """sort_rows without leaving the GPU (so a CUDA graph can hold it): the ids of the largest
    grid a step of these rows can need, padding and the blocks past the routed ones marked."""
    rows = expert_of_row.numel()
    dev = expert_of_row.device
    counts = torch.zeros(experts, dtype=torch.int64, device=dev).scatter_add_(
        0, expert_of_row, torch.ones_like(expert_of_row))
    padded = (counts + bm - 1) // bm * bm
    order = torch.argsort(expert_of_row, stable=True)
    by_expert = expert_of_row[order]
    rank = torch.arange(rows, device=dev) - (torch.cumsum(counts, 0) - counts)[by_expert]
    slot = (torch.cumsum(padded, 0) - padded)[by_expert] + rank
    blocks = (rows + experts * (bm - 1) + bm - 1) // bm
    ids = torch.full((blocks * bm,), rows, dtype=torch.int32, device=dev)
    ids[slot] = order.to(torch.int32)
    block_expert = torch.searchsorted(torch.cumsum(padded // bm, 0),
                                      torch.arange(blocks, device=dev), right=True)
    return ids, block_expert.to(torch.int32)


def launch(x, w, out, ids, block_expert, rows, topk, tile, xs=None, ws=None, mxfp4=False):
    """The kernel over `rows` routed rows into out; xs, ws: the fp8 block scales (None: bf16);
    mxfp4: w the packed codes [experts, n, k / 2], ws their scales [experts, n, k / 32]."""
    bm, bn, bk, warps, stages = tile
    n, k = w.shape[1], w.shape[2] * (2 if mxfp4 else 1)
    scaled = not mxfp4 and ws is not None and ws.dim() == 3
    if not scaled and not mxfp4:
        xs = ws = torch.empty(1, device=x.device, dtype=torch.float32)
    if mxfp4:
        xs = torch.empty(1, device=x.device, dtype=torch.float32)
    grid = (block_expert.numel() * (n // bn),)
    _moe_projection[grid](x, w, out, ids, block_expert, xs, ws, rows, ids.numel(), n, k,
                          x.stride(0), w.stride(0), w.stride(1), out.stride(0), xs.stride(0),
                          ws.stride(0) if scaled or mxfp4 else 0, ws.stride(1) if scaled or mxfp4 else 0,
                          w.shape[0], BM=bm, BN=bn, BK=bk, GROUP_M=8, BLOCK_SCALED=scaled, TOPK=topk,
                          MXFP4=mxfp4, num_warps=warps, num_stages=stages)
    return out


def moe_projection(x, w, ids, block_expert, rows, topk, tile):
    """out[r] = x[r // topk] @ w[expert of r]^T for the `rows` routed rows (bf16)."""
    out = torch.empty(rows, w.shape[1], device=x.device, dtype=torch.bfloat16)
    return launch(x, w, out, ids, block_expert, rows, topk, tile)


def decode_tile(rows, experts):
    """The tile for a step of `rows` routed rows: the few-row tile the --decode runs picked most
    while the experts get a few rows each, a wide one for prefills."""
    return (16, 128, 128, 4, 3) if rows <= 16 * experts else (64, 128, 64, 4, 4)


def kernel_seconds(fn):
    """fn's kernel time under CUPTI, the L2 flushed before each call (moe_grouped_gemm.py's)."""
    return cupti_kernel_seconds(fn)[0]


def event_seconds(fn, reps=8):
    """Quick ranking of tiles: CUDA events around each call, the L2 flushed before it."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    times = sorted(cuda_event_times(fn, reps, warm=1, before=flush.zero_))
    return times[len(times) // 2]


def tuned_seconds(p, rows_per_expert):
    """The fastest tile's kernel time, and the tile."""
    ranked = []
    for tile in tiles_for(p.dtype, rows_per_expert, p.n, p.k):
        try:
            ranked.append((event_seconds(lambda: p.launch(tile)), tile))
        except Exception as e:  # noqa: BLE001 - a tile this GPU cannot hold (shared memory)
            if "resource" not in str(e).lower() and "shared" not in str(e).lower():
                raise
    ranked.sort()
    best = [kernel_seconds(lambda: p.launch(t)) for _, t in ranked[:2]]
    i = min(range(len(best)), key=best.__getitem__)
    return best[i], ranked[i][1]


def even_routing(experts, rows):
    return torch.arange(experts, device="cuda", dtype=torch.int64).repeat_interleave(rows)


def check():
    torch.manual_seed(0)
    bad = 0
    for dtype in ("bf16", "fp8", "mxfp4"):
        for experts, rows, n, k in ((4, 3, 512, 512), (8, 40, 1024, 2048), (3, 130, 768, 1024)):
            x = torch.randn(experts * rows, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.05
            route = torch.randint(0, experts, (experts * rows,), device="cuda")
            p = Projection(dtype, x, w, route)
            ref = p.reference()
            for tile in tiles_for(dtype, rows, n, k):
                got = p.launch(tile).float()
                err = ((got - ref).abs().max() / ref.abs().max()).item()
                ok = err < 2e-2
                bad += not ok
                print(f"{dtype} e={experts} rows={rows} n={n} k={k} tile={tile}: max rel err {err:.2e}"
                      f" {'ok' if ok else 'WRONG'}", flush=True)
    # The serving loop's path: routing on the GPU, a token's top-k rows read from its one row.
    for tokens, experts, topk, n, k in ((5, 16, 4, 256, 512), (300, 64, 8, 512, 256)):
        x = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.05
        routed = torch.stack([torch.randperm(experts, device="cuda")[:topk] for _ in range(tokens)]).flatten()
        tile = decode_tile(routed.numel(), experts)
        ids, blocks = align_on_gpu(routed, experts, tile[0])
        got = moe_projection(x, w, ids, blocks, routed.numel(), topk, tile).float()
        ref = torch.einsum("rk,rnk->rn", x.float().repeat_interleave(topk, 0), w.float()[routed])
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        bad += not err < 2e-2
        print(f"routed: {tokens} tokens, top {topk} of {experts}, tile {tile}: max rel err {err:.2e} "
              f"{'ok' if err < 2e-2 else 'WRONG'}", flush=True)
    print("check:", "all agree" if bad == 0 else f"{bad} disagree")
    return bad == 0


def table_points(src):
    grid = src["grid"]
    for flat, measured in enumerate(src["seconds"]):
        index, rest = [0] * len(grid), flat  # row-major, the last axis fastest
        for a in reversed(range(len(grid))):
            index[a] = rest % len(grid[a])
            rest //= len(grid[a])
        yield measured, tuple(int(grid[a][index[a]]) for a in range(len(grid)))


# Reductions shorter than the moe tables' 512: a tensor-parallel GPU's slice of an expert's width
# (DeepSeek-V3's down projection at TP 8 reduces over 256, Qwen3-235B's over 192), where a tile's
# fixed work (its output) weighs more than the roofline's scaling from 512 allows.
EXTRA_K = (128.0, 256.0)


def fused_grid(src):
    """The moe table's grid with EXTRA_K on its reduction axis, and each point's source value
    (None where the moe table skipped the point: too many weights a call)."""
    grid = [list(axis) for axis in src["grid"]]
    grid[3] = sorted(set(grid[3]) | set(EXTRA_K))
    known = {point: measured for measured, point in table_points(src)}
    table = {"grid": grid, "seconds": [0.0] * math.prod(len(a) for a in grid)}
    return grid, [(known.get(point, 0.0), point) for _, point in table_points(table)]


def main_table(profile_path, out_path, dtypes=("bf16", "fp8")):
    with open(profile_path) as f:
        profile = json.load(f)
    tables, picks = {}, {}
    for dtype in dtypes:
        src = profile["tables"][f"moe.{'bf16' if dtype == 'mxfp4' else dtype}"]  # mxfp4: bf16's points
        grid, points = fused_grid(src)
        seconds = []
        for measured, (experts, rows, n, k) in points:
            if measured is None:
                seconds.append(None)
                continue
            x = torch.randn(experts * rows, k, device="cuda", dtype=torch.bfloat16)
            w = (random_mxfp4(experts, n, k) if dtype == "mxfp4"
                 else torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.02)
            p = Projection(dtype, x, w, even_routing(experts, rows))
            del x, w
            t, tile = tuned_seconds(p, rows)
            seconds.append(t)
            picks[f"{dtype} {experts} {rows} {n} {k}"] = list(tile)
            print(json.dumps({"dtype": dtype, "experts": experts, "rows": rows, "n": n, "k": k, "s": t,
                              "tile": tile, "weight_TBps": experts * n * k * WEIGHT_BYTES[dtype] / t / 1e12}),
                  flush=True)
            del p
            torch.cuda.empty_cache()
            # what is measured so far survives a cut-short run (the rest of the grid still absent)
            partial = seconds + [None] * (len(points) - len(seconds))
            tables[f"moe_fused.{dtype}"] = {"axes": src["axes"], "grid": grid, "seconds": partial}
            with open(out_path, "w") as f:
                json.dump({"script": "scripts/gpu/fused_moe_triton.py --table", "torch": torch.__version__,
                           "triton": triton.__version__, "gpu": torch.cuda.get_device_name(),
                           "profile": profile_path, "complete": False, "tables": tables, "tiles": picks},
                          f, indent=1)
    with open(out_path) as f:
        doc = json.load(f)
    doc["complete"] = True
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


def provenance(arguments):
    import datetime
    return {"script": "scripts/gpu/fused_moe_triton.py", "arguments": arguments,
            "machine": f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}",
            "date": datetime.date.today().isoformat()}


# Whole MoE layers as a deployment's GPU runs them: (experts on the GPU, experts in the model,
# top k, hidden, the GPU's width of an expert, dtype, token counts). Under tensor parallelism a
# GPU holds every expert's slice of the width and sees every token; under expert parallelism it
# holds whole experts and receives the rows routed to them from every GPU's tokens.
LAYERS = {
    "qwen3-30b-a3b": (128, 128, 8, 2048, 768, "bf16", (1, 2, 4, 8, 10, 16, 32, 64)),
    "deepseek-v3-tp8": (256, 256, 8, 7168, 2048 // 8, "fp8", (4, 8, 16, 32, 64, 128)),
    "deepseek-v3-ep8": (32, 256, 8, 7168, 2048, "fp8", (4, 8, 16, 32, 64, 128, 256, 1024)),
    "deepseek-v3-tp8-prefill": (256, 256, 8, 7168, 2048 // 8, "fp8", (1024, 2048, 4096, 8192)),
    "gpt-oss-20b": (32, 32, 4, 2880, 2880, "mxfp4", (1, 2, 4, 8, 16, 32, 64)),
}


def main_layers(out_path, name="qwen3-30b-a3b"):
    local, experts, topk, hidden, inter, dtype, token_counts = LAYERS[name]
    torch.manual_seed(0)
    w_up = torch.randn(local, 2 * inter, hidden, device="cuda", dtype=torch.bfloat16) * 0.02
    w_down = torch.randn(local, hidden, inter, device="cuda", dtype=torch.bfloat16) * 0.02
    # the fp8 weights, quantized once for every batch
    up_w, down_w = (quantize_weights(w_up), quantize_weights(w_down)) if dtype == "fp8" else (None, None)
    if dtype == "mxfp4":  # the packed experts stand in for the bf16 ones
        w_up, w_down = quantize_mxfp4(w_up), quantize_mxfp4(w_down)
    rows_out = []
    for tokens in token_counts:
        route = torch.stack([torch.randperm(experts, device="cuda")[:topk] for _ in range(tokens)]).flatten()
        route = route[route < local]  # the rows this GPU's experts receive
        if route.numel() == 0:
            continue
        touched = int(torch.unique(route).numel())
        x = torch.randn(route.numel(), hidden, device="cuda", dtype=torch.bfloat16)
        h = torch.randn(route.numel(), inter, device="cuda", dtype=torch.bfloat16)
        per_expert = max(1, math.ceil(route.numel() / touched))
        up = Projection(dtype, x, w_up, route, up_w)
        down = Projection(dtype, h, w_down, route, down_w)
        t_up, tile_up = tuned_seconds(up, per_expert)
        t_down, tile_down = tuned_seconds(down, per_expert)
        weight_bytes = touched * 3 * inter * hidden * WEIGHT_BYTES[dtype]
        row = {"tokens": tokens, "rows": int(route.numel()), "experts_touched": touched,
               "weight_bytes": weight_bytes, "fused_up_s": t_up, "fused_down_s": t_down,
               "fused_tiles": [tile_up, tile_down], "fused_TBps": weight_bytes / (t_up + t_down) / 1e12}
        if dtype == "bf16":  # PyTorch's grouped GEMM over the same rows, an offset per expert
            order = torch.argsort(route)
            offs = torch.cumsum(torch.bincount(route, minlength=local), 0).to(torch.int32)
            xs, hs = x[order].contiguous(), h[order].contiguous()
            row["grouped_mm_up_s"] = kernel_seconds(
                lambda: torch._grouped_mm(xs, w_up.transpose(-2, -1), offs=offs))
            row["grouped_mm_down_s"] = kernel_seconds(
                lambda: torch._grouped_mm(hs, w_down.transpose(-2, -1), offs=offs))
            row["grouped_mm_TBps"] = weight_bytes / (row["grouped_mm_up_s"] + row["grouped_mm_down_s"]) / 1e12
        rows_out.append(row)
        print(json.dumps(row), flush=True)
        with open(out_path, "w") as f:
            json.dump({"provenance": provenance(f"--layers {name} {out_path}"),
                       "gpu": torch.cuda.get_device_name(),
                       "model": f"{name} MoE layer: {local} of {experts} experts on this GPU, top {topk}, "
                                f"{hidden} -> 2 x {inter} -> {hidden}, {dtype}, uniform random routing",
                       "rows": rows_out}, f, indent=1)


def merge(measured_path, profile_path):
    with open(measured_path) as f:
        if not json.load(f).get("complete"):
            sys.exit(f"{measured_path}: the run was cut short; its tables are not merged")
    merge_tables(measured_path, profile_path, lambda m: {f"table {key}": (
        f"scripts/gpu/fused_moe_triton.py --table on {m['gpu']}: a Triton fused-MoE projection "
        f"(Triton {m['triton']}; rows sorted by expert and padded to the tile, the fastest of up to "
        "16 tiles a point; fp8 with 128x128 weight and 1x128 row block scales), kernel time under "
        "CUPTI, L2 flushed, at the points of the profile's moe table") for key in m["tables"]})


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--check":
        sys.exit(0 if check() else 1)
    elif sys.argv[1] == "--table":
        main_table(sys.argv[2], sys.argv[3], sys.argv[4:] or ("bf16", "fp8"))
    elif sys.argv[1] == "--merge":
        merge(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "--decode":  # the Qwen3-30B-A3B layers of the first run
        main_layers(sys.argv[2])
    elif sys.argv[1] == "--layers":
        main_layers(sys.argv[3], sys.argv[2])
    else:
        sys.exit(__doc__)
