#include "analyzer/serving/engines.hpp"

#include <fmt/format.h>

#include "analyzer/core/errors.hpp"

namespace rooflens {
namespace {

constexpr int64_t kGiB = 1LL << 30;

// vLLM V1, `vllm serve` (the OpenAI server usage context) on a GPU of >= 70 GiB that is not an
// A100: https://docs.vllm.ai/en/latest/configuration/engine_args.html and
// https://docs.vllm.ai/en/latest/configuration/optimization.html ("chunked prefill is always
// enabled by default in V1"); the per-GPU tiers are EngineArgs.get_batch_defaults in
// vllm/engine/arg_utils.py (8192 tokens / 1024 sequences; 2048 / 256 below 70 GiB).
EngineDefaults vllm(int64_t memory) {
  EngineDefaults e;
  e.name = "vllm";
  e.expert_kernel = ExpertKernel::fused;
  bool big = memory >= 70 * kGiB;
  e.max_batched_tokens = big ? 8192 : 2048;
  e.max_seqs = big ? 1024 : 256;
  e.block_size = 16;
  e.memory_fraction = 0.9;
  e.fraction_of = CacheFractionOf::device_total;
  e.chunked_prefill = true;
  e.graph_max_tokens =
      512;  // CompilationConfig: capture sizes up to 512 (vllm/config/compilation.py)
  e.graph_mixed_steps =
      true;  // piecewise CUDA graphs: attention runs outside, the rest is captured
  e.windowed_blocks = true;
  e.sources = {
      fmt::format("max_num_batched_tokens {} (vllm serve, GPU {} 70 GiB): "
                  "EngineArgs.get_batch_defaults, vllm/engine/arg_utils.py; "
                  "https://docs.vllm.ai/en/latest/configuration/engine_args.html",
                  e.max_batched_tokens, big ? ">=" : "<"),
      fmt::format("max_num_seqs {}: same place", e.max_seqs),
      "block_size 16 (CUDA): https://docs.vllm.ai/en/latest/configuration/engine_args.html",
      "gpu_memory_utilization 0.9 of the GPU's memory for weights, activations and cache: same "
      "page",
      "chunked prefill always on in V1: "
      "https://docs.vllm.ai/en/latest/configuration/optimization.html",
      "CUDA graphs (piecewise) for steps up to 512 tokens: max_capture_size, "
      "vllm/config/compilation.py",
      "MoE experts on the Triton fused-MoE kernel (TritonExperts, "
      "vllm/model_executor/layers/fused_moe/fused_moe.py; tuned tiles per GPU in "
      "fused_moe/configs/)",
      "sliding-window layers keep their last window - 1 tokens' blocks, the rest freed "
      "(SlidingWindowManager.get_num_skipped_tokens, vllm/v1/core/single_type_kv_cache_manager.py; "
      "the hybrid KV-cache manager, docs/design/hybrid_kv_cache_manager.md); off for chunked "
      "attention (Llama 4: VllmConfig, vllm/config/vllm.py), whose layers keep every token",
  };
  return e;
}

// SGLang: https://docs.sglang.ai/advanced_features/server_arguments.html; the memory-dependent
// defaults are ServerArgs.__post_init__ in python/sglang/srt/server_args.py: chunked_prefill_size
// 8192 on 35-160 GiB GPUs (H100, H200), mem_fraction_static 0.88/0.87/0.85/0.81 at TP 1/2/4/8,
// cuda_graph_max_bs 256 below TP 4 and 512 from TP 4 on 80-160 GiB GPUs; page_size 1; with
// max_running_requests unset the running batch is bounded by the KV pool.
EngineDefaults sglang(int64_t tp, int64_t memory) {
  EngineDefaults e;
  e.name = "sglang";
  e.expert_kernel = ExpertKernel::fused;
  e.max_batched_tokens = memory < 35 * kGiB ? 2048 : memory < 160 * kGiB ? 8192 : 16384;
  e.max_seqs = 0;
  e.block_size = 1;
  e.memory_fraction = tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
  e.fraction_of = CacheFractionOf::device_total_static;
  e.chunked_prefill = true;
  e.graph_max_tokens = tp >= 4 ? 512 : 256;
  e.graph_mixed_steps = false;  // decode batches only
  e.sources = {
      fmt::format("chunked_prefill_size {}: ServerArgs, python/sglang/srt/server_args.py; "
                  "https://docs.sglang.ai/advanced_features/server_arguments.html",
                  e.max_batched_tokens),
      "max_running_requests unset: the KV pool bounds the batch (same page)",
      "page_size 1: same page",
      fmt::format("mem_fraction_static {:.2f} (TP {}) of the GPU's memory for weights and the KV "
                  "pool: server_args.py; "
                  "https://docs.sglang.ai/advanced_features/hyperparameter_tuning.html",
                  e.memory_fraction, tp),
      fmt::format("cuda_graph_max_bs {} (decode batches): server_args.py", e.graph_max_tokens),
      "MoE experts on the Triton fused-MoE kernel (python/sglang/srt/layers/moe/"
      "fused_moe_triton/; tuned tiles per GPU in its configs/)",
  };
  return e;
}

// TensorRT-LLM (LLM API / trtllm-serve): BuildConfig max_batch_size 2048 and max_num_tokens 8192;
// KvCacheConfig free_gpu_memory_fraction 0.9 of the memory left after weights and activations,
// tokens_per_block 32 (tensorrt_llm/llmapi/llm_args.py;
// https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html); enable_chunked_prefill
// False; the capacity scheduler's default policy GUARANTEED_NO_EVICT reserves a request's whole
// output before admitting it (https://nvidia.github.io/TensorRT-LLM/torch/scheduler.html).
EngineDefaults trtllm() {
  EngineDefaults e;
  e.name = "trtllm";
  e.max_batched_tokens = 8192;
  e.max_seqs = 2048;
  e.block_size = 32;
  e.memory_fraction = 0.9;
  e.fraction_of = CacheFractionOf::free_after_model;
  e.chunked_prefill = false;
  e.reserve_full_output = true;
  e.graph_max_tokens = 128;
  e.graph_mixed_steps = false;
  e.expert_kernel = ExpertKernel::grouped;
  e.sources = {
      "max_num_tokens 8192, max_batch_size 2048: BuildConfig, tensorrt_llm/builder.py; "
      "https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve.html",
      "tokens_per_block 32: KvCacheConfig, tensorrt_llm/llmapi/llm_args.py",
      "free_gpu_memory_fraction 0.9 of the free memory after weights and activations: "
      "https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html",
      "enable_chunked_prefill False: tensorrt_llm/llmapi/llm_args.py",
      "GUARANTEED_NO_EVICT capacity scheduling (the whole output reserved at admission): "
      "https://nvidia.github.io/TensorRT-LLM/torch/scheduler.html",
      "CUDA graphs for generation-only batches up to 128 sequences (PyTorch backend's "
      "CudaGraphConfig when no sizes are given)",
      "MoE experts on CUTLASS grouped GEMMs (the PyTorch backend's CutlassFusedMoE, "
      "tensorrt_llm/_torch/modules/fused_moe/create_moe.py, MoeConfig backend CUTLASS; "
      "cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/)",
  };
  return e;
}

}  // namespace

EngineDefaults engine_defaults(const std::string& engine, int64_t tp, int64_t device_memory_bytes) {
  if (engine == "vllm") return vllm(device_memory_bytes);
  if (engine == "sglang") return sglang(tp, device_memory_bytes);
  if (engine == "trtllm") return trtllm();
  throw InputError(fmt::format("--engine {}: expected vllm, sglang or trtllm", engine));
}

}  // namespace rooflens
