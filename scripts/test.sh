#!/usr/bin/env bash
# The whole CPU test suite: set-up, build, then every test labelled cpu: the C++ tests (Catch2) and
# the Python package's (pytest, tests/python: the API, then the wheel in a fresh environment).
# GPU tests (label gpu) run where a GPU is: scripts/test.sh gpu (without one, ctest reports them
# skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
label="${1:-cpu}"
source scripts/setup.sh
python_env
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(cuda_flags) $(python_flags) > /dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build -L "$label" -j"$(nproc)" --output-on-failure
