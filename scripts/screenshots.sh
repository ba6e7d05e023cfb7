#!/usr/bin/env bash
# The README's pictures of the HTML report: ResNet-50, GPT-2 decode, Llama-2-7B generate and
# Mixtral-8x7B decode under tensor parallelism, rendered by headless Chromium into docs/img/.
# Run after a build (scripts/test.sh); look at each PNG before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/cli/rooflens
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p docs/img
"$bin" analyze samples/resnet50-opset17.onnx --html "$out/resnet50.html" > /dev/null
"$bin" analyze samples/configs/gpt2/config.json --phase decode --batch 8 --context 1024 --html "$out/gpt2-decode.html" > /dev/null
"$bin" analyze samples/configs/llama-2-7b/config.json --phase generate --prompt 2048 --gen 256 --html "$out/llama-2-7b-generate.html" > /dev/null
"$bin" analyze samples/configs/mixtral-8x7b/config.json --phase decode --batch 16 --context 4096 --tp 2 --html "$out/mixtral-8x7b-decode-tp2.html" > /dev/null
for page in "$out"/*.html; do
  name=$(basename "$page" .html)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2800 \
    --screenshot="docs/img/$name.png" "file://$page" > /dev/null 2>&1
  echo "docs/img/$name.png"
done
