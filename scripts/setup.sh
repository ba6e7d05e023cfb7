#!/usr/bin/env bash
# Installs what rooflens needs from Debian's packages (idempotent) and configures the build.
# The CUDA toolkit, where present, is expected at /usr/local/cuda: with it the build adds the replay
# harness (kernels/, profiler/); without it `rooflens analyze` and `report` still build and work.
set -euo pipefail
# chromium: the HTML report's tests load the page in headless Chromium. python3: the layout and
# data manifest checks (scripts/dev/). python3-dev, python3-venv: the Python package (python/).
# clang-format: the formatting check (scripts/dev/check_format.py; Debian's is version 14).
packages=(cmake g++ make libonnx-dev libprotobuf-dev protobuf-compiler libfmt-dev libcli11-dev
          nlohmann-json3-dev catch2 chromium python3 python3-dev python3-venv clang-format)
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

# The cuDNN frontend's headers (header-only C++; the GPU module's cuDNN plugin is built with them)
# come from NVIDIA's PyPI wheel, unpacked into .deps/ of the checkout; only where CUDA is.
cudnn_frontend_version=1.32.0
if [ -x /usr/local/cuda/bin/nvcc ]; then
  fe_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/cudnn-frontend"
  if [ ! -f "$fe_dir/include/cudnn_frontend.h" ] || [ "$(cat "$fe_dir/VERSION" 2>/dev/null)" != "$cudnn_frontend_version" ]; then
    rm -rf "$fe_dir"
    python3 -m pip install -q --no-deps --disable-pip-version-check --root-user-action=ignore --target "$fe_dir" "nvidia-cudnn-frontend==$cudnn_frontend_version" \
      && echo "$cudnn_frontend_version" > "$fe_dir/VERSION" \
      || echo "setup: could not fetch nvidia-cudnn-frontend; the build leaves out the cuDNN plugin" >&2
  fi
fi

# The Python package's build and test tools (python/requirements-dev.txt, from PyPI) in .venv/ of
# the checkout, reinstalled when that list changes; scripts/test.sh calls it (quickstart does not
# need Python).
rooflens_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rooflens_venv="$rooflens_root/.venv"
python_env() {
  local requirements="$rooflens_root/python/requirements-dev.txt"
  if ! cmp -s "$requirements" "$rooflens_venv/requirements-dev.txt"; then
    [ -x "$rooflens_venv/bin/python" ] || python3 -m venv "$rooflens_venv"
    "$rooflens_venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$rooflens_venv/requirements-dev.txt"
  fi
}
# CMake flags for the Python extension, built for the interpreter in .venv/.
python_flags() {
  echo "-DROOFLENS_PYTHON=ON -DPython_EXECUTABLE=$rooflens_venv/bin/python"
}

# The CUDA compiler for CMake: nvcc is often not on PATH even where the toolkit is installed.
cuda_flags() {
  if [ -x /usr/local/cuda/bin/nvcc ]; then echo "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc"; fi
}

# The instrumented build in build-asan/ that scripts/sanitize.sh tests and scripts/fuzz.sh fuzzes
# from: clang with ASan + UBSan and libFuzzer's coverage hooks (which the test binaries ignore),
# no CUDA. -O1 and line tables only: what ASan recommends for its stack traces, and about half the
# compile time of -O2 -g on the 2-core CI machine.
configure_sanitized_build() {
  CC=clang CXX=clang++ cmake -S "$rooflens_root" -B "$rooflens_root/build-asan" -DROOFLENS_SANITIZE=ON \
    -DROOFLENS_FUZZ=ON -DROOFLENS_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" > /dev/null
}
