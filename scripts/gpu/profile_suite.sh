#!/usr/bin/env bash
# The cases rooflens's predictions are judged by (docs/profile.md), each profiled on this GPU:
#   scripts/gpu/profile_suite.sh ROOFLENS_BIN DEVICE_PROFILE OUT_DIR [case ...]
# DEVICE_PROFILE "-": none given, rooflens's own choice (the shipped or derived profile of this GPU).
# writes OUT_DIR/<case>.json (the result with measurements) and OUT_DIR/<case>.txt (the report).
set -uo pipefail
bin="$1"; profile="$2"; out="$3"; shift 3
cd "$(dirname "$0")/../.."
mkdir -p "$out"
profile_args=(--device-profile "$profile")
[ "$profile" = "-" ] && profile_args=()
declare -A cases=(
  [llama2-7b-decode-b1-c2048]="samples/configs/llama-2-7b/config.json --phase decode --batch 1 --context 2048"
  [llama2-7b-decode-b8-c512]="samples/configs/llama-2-7b/config.json --phase decode --batch 8 --context 512"
  [llama2-7b-prefill-2048]="samples/configs/llama-2-7b/config.json --phase prefill --seq 2048"
  [llama31-8b-decode-b1-c2048]="samples/configs/llama-3.1-8b/config.json --phase decode --batch 1 --context 2048"
  [mixtral-decode-b1-c2048]="samples/configs/mixtral-8x7b/config.json --phase decode --batch 1 --context 2048"
  [gpt2-prefill-1000]="samples/configs/gpt2/config.json --phase prefill --seq 1000"
  [gpt2-decode-c1000]="samples/configs/gpt2/config.json --phase decode --context 1000"
  [resnet50-fp32]="samples/resnet50-opset17.onnx"
  [resnet50-bf16]="samples/resnet50-opset17.onnx --dtype bf16"
  [vit-b16-bf16]="tests/data/onnx/vit_b_16-opset17.onnx --dtype bf16"
  [bert-base-prefill-512]="samples/configs/bert-base-uncased/config.json --phase prefill --seq 512"
  # Issue 25's further targets: a sliding-window config, fp8 weights (W8A8 as fp8 checkpoints run
  # on Hopper), depthwise and large-kernel convolutions.
  [mistral-decode-b16-c4096]="samples/configs/mistral-7b/config.json --phase decode --batch 16 --context 4096"
  [llama31-8b-fp8-decode-b1-c2048]="samples/configs/llama-3.1-8b/config.json --phase decode --batch 1 --context 2048 --weights fp8 --activations fp8"
  [mobilenetv3-b64-bf16]="tests/data/onnx/mobilenet_v3_small-opset17.onnx --batch 64 --dtype bf16"
  [efficientnet-b0-b64-bf16]="tests/data/onnx/efficientnet_b0-opset17.onnx --batch 64 --dtype bf16"
  [convnext-t-b32-bf16]="tests/data/onnx/convnext_tiny-opset17.onnx --batch 32 --dtype bf16"
  # MoE layers at a few rows an expert (decode) and at a prefill's hundreds: the expert tables.
  [mixtral-decode-b32-c1024]="samples/configs/mixtral-8x7b/config.json --phase decode --batch 32 --context 1024"
  [qwen3-moe-decode-b64-c1024]="samples/configs/qwen3-30b-a3b/config.json --phase decode --batch 64 --context 1024"
  [qwen3-moe-prefill-2048]="samples/configs/qwen3-30b-a3b/config.json --phase prefill --seq 2048"
  [deepseek-v2-lite-decode-b32-c1024]="samples/configs/deepseek-v2-lite/config.json --phase decode --batch 32 --context 1024"
  # Weight-only int4/int8 (GPTQ-style groups of 128; int8 per channel): the woq tables, a decode's
  # GEMV and a larger batch's or a prefill's dequantize + GEMM.
  [llama2-7b-int4-decode-b1-c2048]="samples/configs/llama-2-7b/config.json --phase decode --batch 1 --context 2048 --weights int4"
  [llama31-8b-int4-decode-b16-c1024]="samples/configs/llama-3.1-8b/config.json --phase decode --batch 16 --context 1024 --weights int4"
  [llama31-8b-int8-decode-b4-c2048]="samples/configs/llama-3.1-8b/config.json --phase decode --batch 4 --context 2048 --weights int8"
  [llama2-7b-int4-prefill-1024]="samples/configs/llama-2-7b/config.json --phase prefill --seq 1024 --weights int4"
  # An fp8 (e4m3) KV cache under bf16 weights and activations (vLLM's kv_cache_dtype fp8): the
  # attn_decode kv_fp8 table. Llama-3's groups of 4 at a long context; Llama-2's MHA with fp8
  # weights and activations too (an fp8 deployment).
  [llama31-8b-kvfp8-decode-b16-c4096]="samples/configs/llama-3.1-8b/config.json --phase decode --batch 16 --context 4096 --kv-dtype fp8"
  [llama2-7b-fp8-kvfp8-decode-b8-c2048]="samples/configs/llama-2-7b/config.json --phase decode --batch 8 --context 2048 --weights fp8 --activations fp8 --kv-dtype fp8"
  # A prefill over an fp8 cache runs fp8 attention (the attn_prefill fp8 table): a long prompt,
  # where the attention is a quarter of the time.
  [llama31-8b-kvfp8-prefill-8192]="samples/configs/llama-3.1-8b/config.json --phase prefill --seq 8192 --kv-dtype fp8"
)
order=(llama2-7b-decode-b1-c2048 llama2-7b-decode-b8-c512 llama2-7b-prefill-2048 llama31-8b-decode-b1-c2048
       mixtral-decode-b1-c2048 gpt2-prefill-1000 gpt2-decode-c1000 resnet50-fp32 resnet50-bf16 vit-b16-bf16 bert-base-prefill-512)
[ $# -gt 0 ] && order=("$@")
for c in "${order[@]}"; do
  start=$SECONDS
  # shellcheck disable=SC2086
  "$bin" profile ${cases[$c]} "${profile_args[@]}" --top 12 --json "$out/$c.json" > "$out/$c.txt" 2>&1
  echo "$c: exit $? in $((SECONDS - start)) s; $(grep -m1 'model sum' "$out/$c.txt")"
done
