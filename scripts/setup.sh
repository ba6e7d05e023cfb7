#!/usr/bin/env bash
# Installs what rooflens needs from Debian's packages (idempotent) and configures the build.
# The CUDA toolkit, where present, is expected at /usr/local/cuda; nothing here needs it.
set -euo pipefail
packages=(cmake g++ make libonnx-dev libprotobuf-dev protobuf-compiler libfmt-dev libcli11-dev
          nlohmann-json3-dev catch2)
# `scripts/setup.sh fuzz` adds clang and its libFuzzer/sanitizer runtimes.
if [ "${1:-}" = fuzz ]; then packages+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
