#!/usr/bin/env bash
# The README's pictures of the HTML report: ResNet-50, GPT-2 decode, Llama-2-7B generate,
# Mixtral-8x7B decode under tensor parallelism, a GPT-2 training step and a compare page (GPT-2
# prefill against its recorded H100 trace), rendered by headless Chromium at 1280 px into docs/img/.
# Run after a build (scripts/test.sh); look at each PNG before committing it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/cli/rooflens
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p docs/img
"$bin" analyze samples/resnet50-opset17.onnx --html "$out/resnet50.html" > /dev/null
"$bin" analyze samples/configs/gpt2/config.json --phase decode --batch 8 --context 1024 --html "$out/gpt2-decode.html" > /dev/null
"$bin" analyze samples/configs/llama-2-7b/config.json --phase generate --prompt 2048 --gen 256 --html "$out/llama-2-7b-generate.html" > /dev/null
"$bin" analyze samples/configs/mixtral-8x7b/config.json --phase decode --batch 16 --context 4096 --tp 2 --html "$out/mixtral-8x7b-decode-tp2.html" > /dev/null
"$bin" analyze samples/configs/gpt2/config.json --phase train --batch 8 --seq 1024 --html "$out/gpt2-train.html" > /dev/null
"$bin" compare tests/data/traces/h100/gpt2.config.json tests/data/traces/h100/gpt2-prefill.vanilla.h100.json.gz \
  --phase prefill --seq 512 --html "$out/gpt2-compare.html" > /dev/null
for page in "$out"/*.html; do
  name=$(basename "$page" .html)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2800 \
    --screenshot="docs/img/$name.png" "file://$page" > /dev/null 2>&1
  echo "docs/img/$name.png"
done
