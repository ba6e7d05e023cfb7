#!/usr/bin/env bash
# The bound-class check (issue: agreeing with Nsight Compute) over the judged cases: each case's
# replay under ncu (scripts/gpu/ncu_check.sh), its CSV and result JSON kept in OUT_DIR/<case>/. Run on
# the GPU machine from the checkout, with the bundle of scripts/dev/gpu_bundle.sh unpacked in BUNDLE.
# Clocks are not locked (--clock-control none): the replay runs at the clocks it times at.
#   scripts/gpu/ncu_suite.sh BUNDLE OUT_DIR [case ...]   (no case: all of them)
# CASE_TIMEOUT: seconds one case may take under ncu (default 300). PROFILE: the device profile
# (default the H100's; "-" for the one rooflens ships or derives for this GPU).
set -uo pipefail
bundle="$1"; out="$2"; shift 2
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$bundle:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
profile="${PROFILE:-data/profiles/h100-sxm.json}"  # "-": the profile shipped or derived for this GPU
onnx="${ONNX_DIR:-$out/onnx}"
declare -A cases=(
  [gpt2-prefill-b8x512-bf16]="samples/configs/gpt2/config.json --phase prefill --batch 8 --seq 512 --activations bf16 --weights bf16"
  [llama4l-prefill-b1x2048-bf16]="tests/data/reference/training/configs/llama-4l.json --phase prefill --batch 1 --seq 2048"
  # Over an fp8 KV cache: cuDNN's fp8 prefill attention, our decode kernel over e4m3 bytes.
  [llama4l-prefill-b1x2048-kvfp8]="tests/data/reference/training/configs/llama-4l.json --phase prefill --batch 1 --seq 2048 --kv-dtype fp8"
  [llama4l-decode-b32-c1024-kvfp8]="tests/data/reference/training/configs/llama-4l.json --phase decode --batch 32 --context 1024 --kv-dtype fp8"
  [llama4l-decode-b1-c1024]="tests/data/reference/training/configs/llama-4l.json --phase decode --batch 1 --context 1024"
  [llama4l-decode-b32-c1024]="tests/data/reference/training/configs/llama-4l.json --phase decode --batch 32 --context 1024"
  [mixtral4l-decode-b32-c1024]="tests/data/reference/training/configs/mixtral-4l.json --phase decode --batch 32 --context 1024"
  [resnet50-b1-bf16]="tests/data/onnx/resnet50-opset18.onnx --batch 1 --dtype bf16"
  [resnet50-b32-bf16]="samples/resnet50-opset17.onnx --batch 32 --dtype bf16"
  [resnet50-b32-fp32]="samples/resnet50-opset17.onnx --batch 32 --dtype fp32"
  [resnet50-b1-fp32]="samples/resnet50-opset17.onnx --batch 1 --dtype fp32"
  [mobilenetv3s-b1-bf16]="$onnx/mobilenet_v3_small-opset17.onnx --batch 1 --dtype bf16"
  [mobilenetv3s-b32-bf16]="$onnx/mobilenet_v3_small-opset17.onnx --batch 32 --dtype bf16"
  [mobilenetv3s-b32-fp32]="$onnx/mobilenet_v3_small-opset17.onnx --batch 32 --dtype fp32"
  [mobilenetv3s-b1-fp32]="$onnx/mobilenet_v3_small-opset17.onnx --batch 1 --dtype fp32"
  [efficientnetb0-b32-bf16]="$onnx/efficientnet_b0-opset17.onnx --batch 32 --dtype bf16"
  [convnext-t-b32-bf16]="tests/data/onnx/convnext_tiny-opset17.onnx --batch 32 --dtype bf16"
  # The export fixes the batch at 1 in the patch embedding's Reshape (to [1, 768, 196]): --batch 8 does not analyze.
  [vit-b16-b8-bf16]="tests/data/onnx/vit_b_16-opset17.onnx --batch 8 --dtype bf16"
  [vit-b16-b1-bf16]="tests/data/onnx/vit_b_16-opset17.onnx --batch 1 --dtype bf16"
  # Held out from every constant of the rule (session g): another Llama shape, an encoder.
  [tinyllama-decode-b16-c2048]="samples/configs/tinyllama-1.1b/config.json --phase decode --batch 16 --context 2048"
  # Held out from the GEMM tile's rule (session m): a Llama-family prefill at 4,096 wide.
  [mistral7b-prefill-b1x2048-bf16]="samples/configs/mistral-7b/config.json --phase prefill --batch 1 --seq 2048"
  [bert-prefill-b8x512-bf16]="samples/configs/bert-base-uncased/config.json --phase prefill --batch 8 --seq 512 --activations bf16 --weights bf16"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=("${!cases[@]}")
for c in "${names[@]}"; do
  mkdir -p "$out/$c"
  start=$SECONDS
  # shellcheck disable=SC2086
  timeout "${CASE_TIMEOUT:-300}" bash scripts/gpu/ncu_check.sh "$bundle/rooflens" "$profile" "$out/$c" ${cases[$c]} | tee "$out/$c/summary.txt"
  echo "$c: $((SECONDS - start)) s"
done
