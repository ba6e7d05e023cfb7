#!/usr/bin/env bash
# The replay against PyTorch's kernels on the same shapes (docs/profile.md), on a GPU machine with
# PyTorch: bench_vendor, then torch_kernel_reference.py, then the side-by-side table.
#   scripts/gpu/vendor_table.sh BIN_DIR OUT_DIR     (BIN_DIR holds rooflens_bench_vendor)
set -uo pipefail
bin="$1"; out="$2"
cd "$(dirname "$0")/../.."
mkdir -p "$out"
"$bin/rooflens_bench_vendor" --out "$out/ours.json" > "$out/bench_vendor.log" 2>&1 || { tail -5 "$out/bench_vendor.log"; exit 1; }
PYTHONUNBUFFERED=1 python3 scripts/gpu/torch_kernel_reference.py --out "$out/torch_reference.json" > "$out/torch.log" 2>&1 || { tail -5 "$out/torch.log"; exit 1; }
python3 scripts/gpu/compare_vendor.py "$out/ours.json" "$out/torch_reference.json" | tee "$out/compare.md"
