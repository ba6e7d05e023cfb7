#!/usr/bin/env bash
# Issue 15 on the GPU machine, in one command: the GPU tests of `rooflens record`, its overhead
# benchmark, and the timelines `compare` is tested on (HF GPT-2, a Llama-2-7B-shaped model with 4
# layers, prefill and decode; torchvision ResNet-50), each as a vanilla torch.profiler trace, an
# annotated one, and a `rooflens record` file of the same run, with `compare` run on each. Writes at
# most 8 files under $OUT, none over 15 MiB:
#   log.txt             every command and its output (tests, benchmark, step times, compare reports)
#   timelines.tar.gz    trimmed timelines (2 steps) for tests/data/traces/, the configs, compare --json
#   full.tar.xz.NN      the untrimmed timelines, xz-compressed and split in 15 MiB parts (up to 6)
#
#   scripts/gpu/record_timelines.sh BUNDLE      BUNDLE: scripts/dev/gpu_bundle.sh's devrun/bundle.tar.xz, or
#                                           the folder it was unpacked to
# The repository root is the working directory; python3 with torch, transformers and torchvision is
# /opt/torch/.venv/bin/python3 ($PYTHON overrides). MODELS="gpt2 llama resnet50" (the default)
# picks the models, to split the run in two where one call has too little time; SKIP_TESTS=1 skips
# step 1; NO_FULL=1 skips the untrimmed copies.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle="${1:?usage: scripts/gpu/record_timelines.sh BUNDLE (devrun/bundle.tar.xz or its folder)}"
out="${OUT:?OUT must name the folder to write to}"
py="${PYTHON:-/opt/torch/.venv/bin/python3}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -f "$bundle" ]; then
  mkdir -p "$work/bundle"
  tar -C "$work/bundle" -xJf "$bundle"
  bundle="$work/bundle"
fi
bundle="$(cd "$bundle" && pwd)"
export LD_LIBRARY_PATH="$bundle:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log="$out/log.txt"
: > "$log"
started=$(date +%s)

# Runs a command with a time limit, its output and exit status into the log.
run() {
  local limit=$1
  shift
  echo "+ $* ($(($(date +%s) - started)) s in)" >> "$log"
  timeout "$limit" "$@" >> "$log" 2>&1
  echo "exit $?" >> "$log"
}

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; "$py" -c "import torch, transformers, torchvision; print('torch', torch.__version__, 'transformers', transformers.__version__, 'torchvision', torchvision.__version__)"; } >> "$log" 2>&1

# 1. record's GPU tests (known kernels, ranges, graphs, exit codes, SIGTERM) and its overhead.
models="${MODELS:-gpt2 llama resnet50}"
wanted() { case " $models " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ -z "${SKIP_TESTS:-}" ]; then
  run 120 "$bundle/rooflens_gpu_tests" "record*"
  run 120 "$bundle/rooflens_bench_record" 200 5
fi

# 2. The timelines: per model and phase, one process for the profiler traces and the plain timing,
#    one under `rooflens record`.
t="$work/timelines"
mkdir -p "$t"
for spec in "gpt2 prefill" "gpt2 decode" "llama prefill" "llama decode" "resnet50 forward"; do
  set -- $spec
  model=$1 phase=$2
  wanted "$model" || continue
  run 240 "$py" scripts/gpu/timeline_models.py "$model" "$phase" plain,vanilla,annotated "$t"
  # The same steps under record: step_ms here against "plain" above is record's cost on a real program.
  run 240 "$bundle/rooflens" record --out "$t/$model-$phase.record.json.gz" -- "$py" scripts/gpu/timeline_models.py "$model" "$phase" plain,nvtx "$t"
done

# 3. compare on every timeline: the figures phase 2 checks (attributed share, totals), kept as JSON.
for spec in "gpt2 prefill --seq 512" "gpt2 decode --context 512" "llama prefill --seq 2048" "llama decode --context 2048"; do
  set -- $spec
  model=$1 phase=$2
  wanted "$model" || continue
  for kind in vanilla annotated; do
    run 60 "$bundle/rooflens" compare "$t/$model.config.json" "$t/$model-$phase.$kind.json" --phase "$phase" "$3" "$4" \
      --json "$t/$model-$phase.$kind.compare.json" --top 12
  done
  run 60 "$bundle/rooflens" compare "$t/$model.config.json" "$t/$model-$phase.record.json.gz" --phase "$phase" "$3" "$4" \
    --json "$t/$model-$phase.record.compare.json" --top 12
done
for kind in vanilla.json annotated.json record.json.gz; do
  wanted resnet50 || break
  run 60 "$bundle/rooflens" compare tests/data/onnx/resnet50-opset18.onnx "$t/resnet50-forward.$kind" --dtype bf16 \
    --json "$t/resnet50-forward.${kind%%.*}.compare.json" --top 12
done

# 4. Trimmed copies for tests/data/traces (2 steps each), the configs and compare results.
trimmed="$work/trimmed"
mkdir -p "$trimmed"
for f in "$t"/*.vanilla.json "$t"/*.annotated.json "$t"/*.record.json.gz; do
  [ -f "$f" ] || continue
  name="$(basename "$f")"
  name="${name%.gz}"
  run 120 "$py" scripts/dev/trim_timeline.py "$f" "$trimmed/${name%.json}.h100.json.gz" --steps 2
done
cp "$t"/*.config.json "$t"/*.compare.json "$trimmed/" 2>/dev/null
tar -C "$trimmed" -czf "$out/timelines.tar.gz" .

# 5. The untrimmed timelines, in parts that fit what comes back. (NO_FULL=1 skips them).
if [ -z "${NO_FULL:-}" ]; then
  tar -C "$t" -cJf "$work/full.tar.xz" --exclude='*.compare.json' .
  split -b 15M -d -a 2 "$work/full.tar.xz" "$out/full.tar.xz."
  parts=$(ls "$out"/full.tar.xz.* | wc -l)
  if [ "$parts" -gt 6 ]; then
    echo "full timelines: $parts parts of 15 MiB, only the first 6 kept" >> "$log"
    ls "$out"/full.tar.xz.* | tail -n +7 | xargs rm -f
  fi
fi
echo "done in $(($(date +%s) - started)) s; $(ls "$out" | wc -l) files" >> "$log"
ls -la "$out" >> "$log"
