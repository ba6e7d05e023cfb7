#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS on its seed corpus
# (fuzz/corpus, samples, tests' files) and on every saved regression input. A finding is copied
# to tests/data/fuzz/ so that the CPU tests keep it, and the script fails.
#   scripts/fuzz.sh [SECONDS per target, default 60]
#   scripts/fuzz.sh runs=N          (N executions per target instead; the benchmark figure)
set -euo pipefail
cd "$(dirname "$0")/.."
limit="-max_total_time=${1:-60}"
case "${1:-}" in runs=*) limit="-runs=${1#runs=}" ;; esac
source scripts/setup.sh fuzz
configure_sanitized_build  # scripts/sanitize.sh's build: after it, only the targets' own files compile
cmake --build build-asan -j"$(nproc)" --target fuzz_onnx fuzz_config fuzz_timeline
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/onnx" "$work/config" "$work/timeline" "$work/findings"
cp fuzz/corpus/onnx/* tests/data/bad/*.onnx "$work/onnx/"
cp fuzz/corpus/config/* tests/data/bad/*.json "$work/config/"
cp fuzz/corpus/timeline/* "$work/timeline/"
for f in tests/data/fuzz/*; do
  case "$f" in *.json) cp "$f" "$work/config/" ;; *.trace) cp "$f" "$work/timeline/" ;; *) cp "$f" "$work/onnx/" ;; esac
done
status=0
for target in onnx config timeline; do
  start=$(date +%s)
  log="$work/$target.log"
  if ! (cd "$work/findings" && "$OLDPWD/build-asan/fuzz/fuzz_$target" "$limit" -max_len=8192 -timeout=10 \
          -rss_limit_mb=3072 -print_final_stats=1 "$work/$target" > "$log" 2>&1); then
    status=1
    grep -E "ERROR|SUMMARY|what\(\)" "$log" | head -5 || true
    ext=$(case "$target" in config) echo json ;; timeline) echo trace ;; *) echo onnx ;; esac)
    for c in "$work"/findings/crash-* "$work"/findings/timeout-* "$work"/findings/oom-*; do
      [ -e "$c" ] && cp "$c" "tests/data/fuzz/${target}_$(basename "$c" | cut -c1-20).$ext" && echo "saved $c"
    done
  fi
  runs=$(grep -oE "number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+" || echo 0)
  rate=$(grep -oE "average_exec_per_sec: +[0-9]+" "$log" | grep -oE "[0-9]+$" || echo 0)
  echo "fuzz_$target: $runs executions in $(( $(date +%s) - start )) s ($rate/s), $(ls "$work/findings" | wc -l) findings"
  rm -f "$work"/findings/*
done
exit $status
