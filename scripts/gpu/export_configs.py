"""Write the sample transformer configs with transformers' own config classes (run on the GPU
machine, whose image has transformers), and count each model's parameters on the meta device
as a reference for the tests. Hyperparameters are the published ones of each model."""
import json, os, sys
import torch
import transformers as tf

out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
configs = {
    "llama-2-7b": tf.LlamaConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                 num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
                                 rms_norm_eps=1e-5, torch_dtype="float16"),
    "llama-3.1-8b": tf.LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                                   rms_norm_eps=1e-5, rope_theta=500000.0, bos_token_id=128000, eos_token_id=128001,
                                   rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                 "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                                   torch_dtype="bfloat16"),
    "llama-2-70b": tf.LlamaConfig(vocab_size=32000, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                                  num_attention_heads=64, num_key_value_heads=8, max_position_embeddings=4096,
                                  rms_norm_eps=1e-5, torch_dtype="float16"),
    "mistral-7b": tf.MistralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=8, sliding_window=4096,
                                   max_position_embeddings=32768, torch_dtype="bfloat16"),
    "qwen2-7b": tf.Qwen2Config(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                               num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=131072,
                               rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, torch_dtype="bfloat16"),
    "mixtral-8x7b": tf.MixtralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                     num_attention_heads=32, num_key_value_heads=8, num_local_experts=8,
                                     num_experts_per_tok=2, max_position_embeddings=32768, rope_theta=1e6,
                                     torch_dtype="bfloat16"),
    "gpt2": tf.GPT2Config(),
    "bert-base-uncased": tf.BertConfig(),
    "deepseek-v3": tf.DeepseekV3Config(vocab_size=129280, hidden_size=7168, intermediate_size=18432,
                                       moe_intermediate_size=2048, num_hidden_layers=61, num_attention_heads=128,
                                       num_key_value_heads=128, n_shared_experts=1, n_routed_experts=256,
                                       num_experts_per_tok=8, first_k_dense_replace=3, q_lora_rank=1536,
                                       kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                       n_group=8, topk_group=4, routed_scaling_factor=2.5,
                                       max_position_embeddings=163840, torch_dtype="bfloat16"),
}
# More families, with the hyperparameters scripts/gpu/reference_families.py writes (one source).
from reference_families import FAMILIES  # noqa: E402

for sample, family in {"qwen3-8b": "qwen3", "qwen3-30b-a3b": "qwen3_moe", "gpt-oss-20b": "gpt_oss", "gemma-2-2b": "gemma2",
                       "phi-3-mini": "phi3", "deepseek-v2-lite": "deepseek_v2", "mamba-130m": "mamba",
                       "llama-4-scout": "llama4_text"}.items():
    spec = FAMILIES[family]
    configs[sample] = spec["cls"](**spec["kwargs"])
classes = {"gpt2": tf.GPT2LMHeadModel, "bert-base-uncased": tf.BertModel}
report = {"transformers": tf.__version__}
for name, cfg in configs.items():
    d = os.path.join(out, name)
    cfg.save_pretrained(d)
    try:
        with torch.device("meta"):
            cls = classes.get(name, tf.AutoModelForCausalLM)
            model = cls(cfg) if name in classes else cls.from_config(cfg)
        seen = {}
        for n, p in model.named_parameters(remove_duplicate=True):
            seen[n] = p.numel()
        report[name] = {"params": sum(seen.values()),
                        "params_by_prefix": {k: sum(v for n, v in seen.items() if k in n)
                                             for k in ["embed", "lm_head", "experts", "shared_experts", "gate.weight", "pooler"]}}
    except Exception as e:
        report[name] = {"error": repr(e)[:500]}
with open(os.path.join(out, "config_report.json"), "w") as f:
    json.dump(report, f, indent=1)
print(json.dumps(report, indent=1))
