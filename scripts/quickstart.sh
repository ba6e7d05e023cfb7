#!/usr/bin/env bash
# First run on a fresh machine: install, build, analyze the ResNet-50 sample.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(cuda_flags) > /dev/null
cmake --build build -j"$(nproc)" --target rooflens
./build/cli/rooflens analyze samples/resnet50-opset17.onnx "$@"
