#!/usr/bin/env bash
# Packs what runs on a GPU machine that has the CUDA toolkit but none of the Debian -dev packages
# (the GPU machines here): the rooflens binary, the GPU module and its cuDNN plugin, the record
# injection library (build/lib/*.so), the GPU tests and benchmarks with record's test program, and
# the non-system libraries the binary loads (fmt, onnx, protobuf), stripped, in one folder. There: LD_LIBRARY_PATH=<folder>:/usr/local/cuda/lib64 <folder>/rooflens ...
#   scripts/dev/gpu_bundle.sh [build dir] [out dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:-carry}"
rm -rf "$out"
mkdir -p "$out"
cp "$build/cli/rooflens" "$build"/lib/*.so "$out/"
for t in "$build/tests/rooflens_gpu_tests" "$build/tests/rooflens_multi_gpu_tests" "$build/bench/rooflens_bench_vendor" "$build/bench/rooflens_bench_kernels" \
         "$build/bench/rooflens_record_target" "$build/bench/rooflens_bench_record"; do
  if [ -f "$t" ]; then cp "$t" "$out/"; fi
done
for lib in $(ldd "$out/rooflens" | awk '/libfmt|libonnx|libprotobuf/ {print $3}'); do cp -L "$lib" "$out/"; done
strip --strip-unneeded "$out"/*
du -sh "$out"
# One compressed file travels better than the folder (the device tool takes 64 MiB).
mkdir -p devrun
tar -C "$out" -cJf devrun/bundle.tar.xz .
du -sh devrun/bundle.tar.xz
