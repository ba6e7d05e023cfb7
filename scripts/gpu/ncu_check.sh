#!/usr/bin/env bash
# The bound class rooflens predicts per layer against Nsight Compute's SpeedOfLight on the replay
# (docs/profile.md): runs `rooflens profile` under ncu, profiling the kernels of each layer's first
# sample only (NVTX range "<layer>#0" in domain rooflens), and counts the layers whose class
# agrees. CUPTI is ncu's there, so rooflens times with CUDA events (--timing events).
#   scripts/gpu/ncu_check.sh ROOFLENS_BIN DEVICE_PROFILE OUT_DIR MODEL [model flags ...]
# NCU_FLAGS: more ncu flags (say --cache-control none).
set -uo pipefail
bin="$1"; profile="$2"; out="$3"; shift 3
cd "$(dirname "$0")/../.."
mkdir -p "$out"
name="$(basename "$1" | sed 's/\.[a-z]*$//')-$(echo "$*" | md5sum | cut -c1-6)"
ncu --clock-control none ${NCU_FLAGS:-} --nvtx --nvtx-include "regex:rooflens@.*#0/" --print-nvtx-rename kernel --section SpeedOfLight --csv \
    "$bin" profile "$@" --device-profile "$profile" --timing events --min-samples 1 --max-samples 10 \
    --json "$out/$name.json" > "$out/$name.ncu.csv" 2> "$out/$name.log"
python3 scripts/gpu/ncu_classes.py "$out/$name.json" "$out/$name.ncu.csv" --layers
