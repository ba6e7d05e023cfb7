#!/usr/bin/env bash
# The bound class rooflens predicts per layer against Nsight Compute's SpeedOfLight on the replay
# (docs/profile.md): runs `rooflens profile` under ncu, profiling the kernels of each layer's first
# sample only (NVTX range "<layer>#0" in domain rooflens), and counts the layers whose class
# agrees. CUPTI is ncu's there, so rooflens times with CUDA events (--timing events).
#   scripts/gpu/ncu_check.sh ROOFLENS_BIN DEVICE_PROFILE OUT_DIR MODEL [model flags ...]
# DEVICE_PROFILE "-": none given, so profile predicts with the profile it ships or derives for this
# GPU (an H200's is derived from the H100's).
# NCU_FLAGS: more ncu flags (say --cache-control none). TUNING_CACHE: a tuning cache to use (and
# fill) instead of a fresh one in OUT_DIR.
set -uo pipefail
bin="$1"; profile="$2"; out="$3"; shift 3
cd "$(dirname "$0")/../.."
mkdir -p "$out"
name="$(basename "$1" | sed 's/\.[a-z]*$//')-$(echo "$*" | md5sum | cut -c1-6)"
# The kernels are picked first by a run timed with CUPTI and kept in a tuning cache: under ncu the
# candidates' CUDA-event times measure the profiler, and near-equal GEMM tiles (whose SM and memory
# throughput can tie) would be picked at random.
cache="${TUNING_CACHE:-$out/$name.tuning.json}"
roofs=(--device-profile "$profile")
[ "$profile" = "-" ] && roofs=()
"$bin" profile "$@" ${roofs[@]+"${roofs[@]}"} --min-samples 1 --max-samples 3 --tuning-cache "$cache" \
    --json "$out/$name.tuned.json" > /dev/null 2> "$out/$name.tune.log"
rc=$?; [ $rc -eq 0 ] || [ $rc -eq 3 ] || { cat "$out/$name.tune.log"; exit 1; }
ncu --clock-control none ${NCU_FLAGS:-} --nvtx --nvtx-include "regex:rooflens@.*#0/" --print-nvtx-rename kernel --section SpeedOfLight --csv \
    "$bin" profile "$@" ${roofs[@]+"${roofs[@]}"} --timing events --min-samples 1 --max-samples 10 \
    --tuning-cache "$cache" --json "$out/$name.json" > "$out/$name.ncu.csv" 2> "$out/$name.log"
python3 scripts/gpu/ncu_classes.py "$out/$name.json" "$out/$name.ncu.csv" --layers --measured "$out/$name.tuned.json"
