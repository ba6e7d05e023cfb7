#!/usr/bin/env bash
# The whole CPU test suite built with AddressSanitizer and UndefinedBehaviorSanitizer (clang).
# The build (build-asan/) is the one scripts/fuzz.sh runs its libFuzzer targets from: one
# instrumented build for both, not two (the two took CI's 2 cores over an hour).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh fuzz
configure_sanitized_build
cmake --build build-asan -j"$(nproc)" --target rooflens rooflens_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan -L cpu -j"$(nproc)" --output-on-failure
