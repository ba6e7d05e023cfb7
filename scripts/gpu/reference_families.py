"""References for the decoder families rooflens lowers from config.json, all from transformers itself.

For each family it writes, with the family's own config class (the published hyperparameters of a
real model where one is named below, else the class defaults):
  tests/data/configs/<model_type>/config.json            the full model's config
  tests/data/configs/<model_type>/two-layer/config.json  a 2-layer copy (overrides listed per family)
and records in tests/data/configs/family_reference.json:
  params              the full model's parameter count, built on the meta device (tied weights once)
  two_layer.params    the same for the 2-layer copy
  two_layer.prefill   FlopCounterMode FLOPs of the 2-layer copy in bf16 on the CPU, batch 1 x 512
                      tokens, attn_implementation="eager", experts_implementation="eager" (the
                      per-expert loop, so the counter sees every routed expert GEMM; grouped_mm,
                      transformers' default, is invisible to it), split by what ran them
  two_layer.decode    the same for one decode step with 512 tokens cached
  two_layer.cache     bytes of the tensors the cache object holds after the prefill and after the
                      decode step (keys/values, recurrent and conv states; bookkeeping apart)

FlopCounterMode counts matrix products only (mm, addmm, bmm, baddbmm, convolution): 2 FLOPs per
multiply-accumulate, dense (eager attention multiplies every query with every key, masked or
not). Element-wise work (norms, activations, softmax, rope) is not in these figures.

Run (CPU is enough; about 15 minutes on 2 cores, up to ~14 GB of memory for the largest copy):
  python scripts/gpu/reference_families.py [family ...]
with transformers 5.17 and torch 2.11 installed.
"""
import gc
import json
import os
import sys
import time
import traceback

import torch
import transformers as tf
from torch.utils.flop_counter import FlopCounterMode

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "data", "configs")
REFERENCE = os.path.join(OUT, "family_reference.json")
TOKENS = 512


def published(model, cls, **kw):
    return {"model": model, "source": "published hyperparameters", "cls": cls, "kwargs": kw}


def defaults(model, cls, **kw):
    return {"model": model, "source": "class defaults" + (" + " + ", ".join(k for k in kw if k != "dtype") if len(kw) > 1 else ""),
            "cls": cls, "kwargs": kw}


# model_type -> how its config is written. `two_layer` overrides apply to the 2-layer copy only:
# layer lists cut to two layers chosen so that both kinds of layer the model has are present, and
# expert counts cut where a 2-layer bf16 copy would not fit in memory otherwise.
FAMILIES = {
    "llama": published("Llama-3.1-8B", tf.LlamaConfig, vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                       num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                       max_position_embeddings=131072, rms_norm_eps=1e-5,
                       rope_parameters={"rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 8192},
                       dtype="bfloat16"),
    "mistral": published("Mistral-7B-v0.1", tf.MistralConfig, vocab_size=32000, hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         sliding_window=4096, max_position_embeddings=32768, dtype="bfloat16"),
    "mixtral": published("Mixtral-8x7B-v0.1", tf.MixtralConfig, vocab_size=32000, hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=32768,
                         rope_parameters={"rope_theta": 1e6, "rope_type": "default"}, dtype="bfloat16"),
    "qwen2": published("Qwen2-7B", tf.Qwen2Config, vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                       num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                       max_position_embeddings=131072, rms_norm_eps=1e-6,
                       rope_parameters={"rope_theta": 1e6, "rope_type": "default"}, tie_word_embeddings=False,
                       dtype="bfloat16"),
    "qwen2_moe": defaults("Qwen1.5-MoE-A2.7B (= Qwen2MoeConfig defaults)", tf.Qwen2MoeConfig, dtype="bfloat16"),
    "qwen3": published("Qwen3-8B", tf.Qwen3Config, vocab_size=151936, hidden_size=4096, intermediate_size=12288,
                       num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                       max_position_embeddings=40960, rms_norm_eps=1e-6,
                       rope_parameters={"rope_theta": 1e6, "rope_type": "default"}, tie_word_embeddings=False,
                       dtype="bfloat16"),
    "qwen3_moe": published("Qwen3-30B-A3B", tf.Qwen3MoeConfig, vocab_size=151936, hidden_size=2048,
                           intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=48,
                           num_attention_heads=32, num_key_value_heads=4, head_dim=128, num_experts=128,
                           num_experts_per_tok=8, norm_topk_prob=True, max_position_embeddings=40960,
                           rope_parameters={"rope_theta": 1e6, "rope_type": "default"}, dtype="bfloat16"),
    "gemma": defaults("Gemma-7B (= GemmaConfig defaults)", tf.GemmaConfig, dtype="bfloat16"),
    "gemma2": defaults("Gemma-2-2B (= Gemma2Config defaults)", tf.Gemma2Config, dtype="bfloat16"),
    "gemma3_text": defaults("Gemma3TextConfig defaults", tf.Gemma3TextConfig, dtype="bfloat16"),
    "phi": published("Phi-2", tf.PhiConfig, vocab_size=51200, hidden_size=2560, intermediate_size=10240,
                     num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=2048,
                     partial_rotary_factor=0.4, dtype="float16"),
    "phi3": defaults("Phi-3-mini-4k (= Phi3Config defaults)", tf.Phi3Config, dtype="bfloat16"),
    "olmo2": published("OLMo-2-1124-7B", tf.Olmo2Config, vocab_size=100352, hidden_size=4096, intermediate_size=11008,
                       num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                       max_position_embeddings=4096, rms_norm_eps=1e-6,
                       rope_parameters={"rope_theta": 500000.0, "rope_type": "default"}, dtype="float32"),
    "olmoe": published("OLMoE-1B-7B-0924", tf.OlmoeConfig, vocab_size=50304, hidden_size=2048, intermediate_size=1024,
                       num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=16, num_experts=64,
                       num_experts_per_tok=8, max_position_embeddings=4096, dtype="bfloat16"),
    "granite": published("Granite-3.0-8B", tf.GraniteConfig, vocab_size=49155, hidden_size=4096,
                         intermediate_size=12800, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=8,
                         max_position_embeddings=4096, embedding_multiplier=12.0, attention_multiplier=0.0078125,
                         residual_multiplier=0.22, logits_scaling=16.0, tie_word_embeddings=True,
                         rope_parameters={"rope_theta": 10000.0, "rope_type": "default"}, dtype="bfloat16"),
    "falcon": defaults("Falcon-7B (= FalconConfig defaults)", tf.FalconConfig, dtype="bfloat16"),
    "gpt_neox": defaults("GPT-NeoX-20B (= GPTNeoXConfig defaults)", tf.GPTNeoXConfig, dtype="float16"),
    "gptj": defaults("GPT-J-6B (= GPTJConfig defaults)", tf.GPTJConfig, dtype="float32"),
    "starcoder2": defaults("Starcoder2Config defaults", tf.Starcoder2Config, dtype="bfloat16"),
    "stablelm": defaults("StableLM-3B-4E1T (= StableLmConfig defaults)", tf.StableLmConfig, dtype="bfloat16"),
    "cohere": defaults("Command-R (= CohereConfig defaults)", tf.CohereConfig, dtype="float16"),
    "glm": defaults("GLM-4-9B (= GlmConfig defaults)", tf.GlmConfig, dtype="bfloat16"),
    "gpt_bigcode": published("StarCoder (15.5B)", tf.GPTBigCodeConfig, vocab_size=49152, n_embd=6144, n_head=48,
                             n_layer=40, n_positions=8192, n_inner=24576, multi_query=True,
                             activation_function="gelu_pytorch_tanh", dtype="float32"),
    "opt": defaults("OPT-125m (= OPTConfig defaults)", tf.OPTConfig, dtype="float16"),
    "bloom": published("BLOOM-560m", tf.BloomConfig, vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16,
                       dtype="float16"),
    "deepseek_v2": published("DeepSeek-V2-Lite", tf.DeepseekV2Config, vocab_size=102400, hidden_size=2048,
                             intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=27,
                             num_attention_heads=16, num_key_value_heads=16, q_lora_rank=None, kv_lora_rank=512,
                             qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, n_routed_experts=64,
                             n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1,
                             max_position_embeddings=163840, dtype="bfloat16"),
    "deepseek_v3": published("DeepSeek-V3", tf.DeepseekV3Config, vocab_size=129280, hidden_size=7168,
                             intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61,
                             num_attention_heads=128, num_key_value_heads=128, n_shared_experts=1,
                             n_routed_experts=256, num_experts_per_tok=8, first_k_dense_replace=3, q_lora_rank=1536,
                             kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, n_group=8,
                             topk_group=4, routed_scaling_factor=2.5, max_position_embeddings=163840,
                             dtype="bfloat16"),
    "llama4_text": defaults("Llama-4-Scout text decoder (= Llama4TextConfig defaults)", tf.Llama4TextConfig, dtype="bfloat16"),
    "gpt_oss": published("gpt-oss-20b", tf.GptOssConfig, vocab_size=201088, hidden_size=2880, intermediate_size=2880,
                         num_hidden_layers=24, num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                         num_local_experts=32, num_experts_per_tok=4, sliding_window=128,
                         max_position_embeddings=131072,
                         quantization_config={"quant_method": "mxfp4",
                                              "modules_to_not_convert": ["model.layers.*.self_attn",
                                                                         "model.layers.*.mlp.router",
                                                                         "model.embed_tokens", "lm_head"]},
                         dtype="bfloat16"),
    "smollm3": defaults("SmolLM3-3B (= SmolLM3Config defaults)", tf.SmolLM3Config, dtype="bfloat16"),
    "ernie4_5": defaults("ERNIE-4.5-0.3B (= Ernie4_5Config defaults)", tf.Ernie4_5Config, dtype="bfloat16"),
    "exaone4": defaults("Exaone4Config defaults", tf.Exaone4Config, dtype="bfloat16"),
    "seed_oss": defaults("SeedOssConfig defaults", tf.SeedOssConfig, dtype="bfloat16"),
    "apertus": defaults("ApertusConfig defaults", tf.ApertusConfig, dtype="bfloat16"),
    "minimax": defaults("MiniMaxConfig defaults (MiniMax-Text-01's layout at small scale)", tf.MiniMaxConfig,
                        dtype="bfloat16"),
    "mamba": published("mamba-130m", tf.MambaConfig, vocab_size=50280, hidden_size=768, num_hidden_layers=24,
                       state_size=16, expand=2, conv_kernel=4, dtype="float32"),
    "jamba": defaults("Jamba-v0.1 (= JambaConfig defaults)", tf.JambaConfig, dtype="bfloat16"),
    "nemotron": defaults("NemotronConfig defaults + num_key_value_heads=8 (the default None does not build)",
                         tf.NemotronConfig, num_key_value_heads=8, dtype="bfloat16"),
    "dbrx": published("DBRX", tf.DbrxConfig, vocab_size=100352, d_model=6144, n_heads=48, n_layers=40,
                      max_seq_len=32768, attn_config={"kv_n_heads": 8, "clip_qkv": 8},
                      ffn_config={"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
                      rope_parameters={"rope_theta": 500000.0, "rope_type": "default"}, dtype="bfloat16"),
    "hunyuan_v1_dense": defaults("HunYuanDenseV1Config defaults + head_dim=128 (the default None does not build)",
                                 tf.HunYuanDenseV1Config, head_dim=128, dtype="bfloat16"),
    "gpt2": defaults("GPT-2 124M (= GPT2Config defaults)", tf.GPT2Config, dtype="float32"),
    "bert": defaults("BERT-base-uncased (= BertConfig defaults)", tf.BertConfig, dtype="float32"),
}

TWO_LAYER = {
    "gemma3_text": {"layer_types": ["sliding_attention", "full_attention"]},
    "exaone4": {"layer_types": ["sliding_attention", "full_attention"]},
    "llama4_text": {"layer_types": ["chunked_attention", "full_attention"], "no_rope_layers": [1, 0]},
    "smollm3": {"no_rope_layers": [1, 0]},
    "jamba": {"attn_layer_offset": 1, "attn_layer_period": 2},
    "deepseek_v3": {"first_k_dense_replace": 1, "n_routed_experts": 16},
    "dbrx": {"ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 8, "moe_top_k": 4}},
}

# The modeling code reads an attribute its config class no longer writes.
BUILD_FIXES = {
    "dbrx": ("attn_config.rope_theta = rope_parameters['rope_theta'] (DbrxAttention reads attn_config.rope_theta, "
             "which DbrxAttentionConfig in transformers 5.17 does not define)",
             lambda c: object.__setattr__(c.attn_config, "rope_theta", c.rope_parameters["rope_theta"])),
}


def layer_count_key(cfg):
    for k in ("n_layer", "n_layers"):
        if k in cfg["kwargs"]:
            return k
    return "num_hidden_layers"  # mapped by each class's attribute_map where it names it otherwise


def model_for(name, config, **kw):
    if name == "bert":  # BertModel, as rooflens lowers BERT (encoder and pooler, no head)
        return tf.AutoModel.from_config(config, **kw)
    return tf.AutoModelForCausalLM.from_config(config, **kw)


def count_params(model):
    return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=True))


def kind_of(module, op):
    """What a matrix product inside `module` (its own, not its children's) is, for the reference."""
    cls = type(module).__name__
    if isinstance(module, torch.nn.Linear) or cls in ("Conv1D",):
        return "linear"
    if "Experts" in cls or cls in ("DbrxExpertGLU",):
        return "experts"
    if isinstance(module, torch.nn.Conv1d) or op == "convolution":
        return "conv"
    if "Rotary" in cls:
        return "rope"
    if "Lightning" in cls:
        return "linear_attention"
    if "Mamba" in cls and "Mixer" in cls:
        return "linear" if op == "mm" else "ssm"  # dt_proj applied by hand (mm); the scan's C contraction (bmm)
    if "Router" in cls or "TopkRouter" in cls or "Gate" in cls:
        return "linear"
    if "Attention" in cls or "SelfAttention" in cls:
        return "attention"
    return "other:" + cls


def flops_by_kind(model, counter):
    """Each module's own FLOPs (its count minus its children's), summed by kind."""
    root = type(model).__name__
    modules = {root + ("." + n if n else ""): m for n, m in model.named_modules()}
    counts = counter.get_flop_counts()
    kinds, by_op = {}, {}
    tracked = [n for n in counts if n != "Global" and n in modules]
    for name in tracked:
        ops = counts[name]
        # The nearest tracked descendants (containers such as ModuleList are never called).
        below = [d for d in tracked if d.startswith(name + ".")]
        children = [d for d in below if not any(d.startswith(e + ".") for e in below)]
        for op, n in ops.items():
            own = n - sum(counts.get(c, {}).get(op, 0) for c in children)
            if own == 0:
                continue
            opname = str(op).split(".")[-1].replace("')>", "").replace("'", "")
            k = kind_of(modules[name], opname)
            kinds[k] = kinds.get(k, 0) + own
            by_op[opname] = by_op.get(opname, 0) + own
    total = counter.get_total_flops()
    assert sum(kinds.values()) == total, (kinds, total)
    return {"total": total, "by_kind": kinds, "by_op": by_op}


def cache_bytes(cache):
    """Bytes of the tensors a cache object holds, walking its attributes; scalars and index
    tensors (bookkeeping) reported apart."""
    seen, state, book = set(), 0, 0

    def walk(x, depth=0):
        nonlocal state, book
        if depth > 6 or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, torch.Tensor):
            if x.is_floating_point() and x.dim() >= 2:
                state += x.numel() * x.element_size()
            else:
                book += x.numel() * x.element_size()
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y, depth + 1)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y, depth + 1)
        elif hasattr(x, "__dict__") and not isinstance(x, (torch.nn.Module, tf.PreTrainedConfig)):
            for y in vars(x).values():
                walk(y, depth + 1)

    walk(cache)
    return {"state_bytes": state, "bookkeeping_bytes": book, "class": type(cache).__name__}


def two_layer_run(name, config):
    torch.manual_seed(0)
    model = model_for(name, config, attn_implementation="eager", experts_implementation="eager", dtype=torch.bfloat16)
    # Inference: no parameter needs a gradient (FlopCounterMode's module tracker otherwise asks for
    # the grad_fn of DBRX's expert weight views, which no_grad leaves without one).
    model.eval().requires_grad_(False)
    vocab = config.vocab_size
    ids = torch.randint(0, vocab, (1, TOKENS))
    r = {"params": count_params(model)}
    with torch.no_grad():
        with FlopCounterMode(display=False) as fc:
            out = model(ids, use_cache=name != "bert") if name != "bert" else model(ids)
        r["prefill"] = flops_by_kind(model, fc)
        if name == "bert":
            return r
        cache = getattr(out, "past_key_values", None) or getattr(out, "cache_params", None)
        r["cache_after_prefill"] = cache_bytes(cache)
        nxt = torch.randint(0, vocab, (1, 1))
        kw = {"past_key_values": cache} if name != "mamba" else {"cache_params": cache}
        if name != "mamba":
            kw["attention_mask"] = torch.ones(1, TOKENS + 1, dtype=torch.long)
        with FlopCounterMode(display=False) as fc:
            out2 = model(nxt, use_cache=True, **kw)
        r["decode"] = flops_by_kind(model, fc)
        cache2 = getattr(out2, "past_key_values", None) or getattr(out2, "cache_params", None)
        r["cache_after_decode"] = cache_bytes(cache2)
        r["decode"]["context"] = TOKENS
    del model
    gc.collect()
    return r


# transformers' Llama4TextMoe runs every token through every expert (the router's scores zero all
# but the top-k); the routed work a real kernel does is the counter's expert figure x k / E.
DENSE_EXPERTS = {"llama4_text": lambda c: (c.num_experts_per_tok, c.num_local_experts)}


def routed_experts(entry, k, experts):
    for phase in ("prefill", "decode"):
        kinds = entry[phase]["by_kind"]
        dense = kinds.pop("experts")
        kinds["experts_all_tokens_all_experts"] = dense
        kinds["experts"] = dense * k // experts
        entry[phase]["total"] += kinds["experts"] - dense
    entry["note"] = (f"transformers runs all {experts} experts on every token; 'experts' is that count x {k}/{experts} "
                     "(the routed top-k), the counter's own figure is kept as experts_all_tokens_all_experts")


def main(names):
    try:
        with open(REFERENCE) as f:
            report = json.load(f)
    except (OSError, ValueError):
        report = {}
    report["transformers"] = tf.__version__
    report["torch"] = torch.__version__
    report["tokens"] = TOKENS
    fams = report.setdefault("families", {})
    for name in names:
        spec = FAMILIES[name]
        t0 = time.time()
        entry = {"model": spec["model"], "source": spec["source"], "config_class": spec["cls"].__name__,
                 "notes": []}
        try:
            cfg = spec["cls"](**spec["kwargs"])
            cfg.save_pretrained(os.path.join(OUT, name))
            fix = BUILD_FIXES.get(name)
            if fix:
                entry["notes"].append("to build the model: " + fix[0])
                fix[1](cfg)
            with torch.device("meta"):
                entry["params"] = count_params(model_for(name, cfg))
            layers_key = layer_count_key(spec)
            over = {layers_key: 2, **TWO_LAYER.get(name, {})}
            cfg2 = spec["cls"](**{**spec["kwargs"], **over})
            cfg2.save_pretrained(os.path.join(OUT, name, "two-layer"))
            if fix:
                fix[1](cfg2)
            entry["two_layer"] = {"overrides": over, **two_layer_run(name, cfg2)}
            if name in DENSE_EXPERTS:
                routed_experts(entry["two_layer"], *DENSE_EXPERTS[name](cfg2))
        except Exception as e:  # recorded, never faked
            entry["error"] = repr(e)[:400]
            traceback.print_exc()
        entry["seconds"] = round(time.time() - t0, 1)
        fams[name] = entry
        print(name, json.dumps({k: v for k, v in entry.items() if k != "two_layer"}), flush=True)
        with open(REFERENCE, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
            f.write("\n")


def relabel():
    """Rewrites the model/source labels of recorded entries from FAMILIES (no model is built)."""
    with open(REFERENCE) as f:
        report = json.load(f)
    for name, entry in report["families"].items():
        entry["model"], entry["source"] = FAMILIES[name]["model"], FAMILIES[name]["source"]
    with open(REFERENCE, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--relabel"]:
        relabel()
    else:
        main(sys.argv[1:] or list(FAMILIES))
