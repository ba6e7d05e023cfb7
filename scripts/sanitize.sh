#!/usr/bin/env bash
# The whole CPU test suite built with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The CUDA harness is left out: nvcc objects are not instrumented, and no GPU runs here.
cmake -S . -B build-asan -DROOFLENS_SANITIZE=ON -DROOFLENS_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-asan -j"$(nproc)" --target rooflens rooflens_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan -L cpu --output-on-failure
