"""References for multimodal wrappers (text_config + vision_config), all from transformers itself.

For each wrapper below it writes, with the wrapper's own config class and the hyperparameters of
the named model:
  tests/data/multimodal/<name>/config.json   the full config (config.to_dict())
and records in tests/data/multimodal/reference.json, from the model built on the meta
device (no weights) with AutoModelForImageTextToText.from_config:
  language_params   the language model plus lm_head (a tied head counted once)
  vision_params     the vision tower (model.vision_tower)
  projector_params  the multimodal projector
  total_params      the whole wrapper
and, for Gemma-3-4B's SigLIP tower cut to 2 layers (vision_two_layer_flops), the FLOPs
FlopCounterMode counts for one 896x896 image in fp32 on the CPU with eager attention, by aten op
(convolution, addmm, bmm: 2 FLOPs a multiply-accumulate, matrix products only).

Run (CPU, seconds): python scripts/gpu/reference_multimodal.py   (transformers and torch from PyPI)
"""
import json
import os

import torch
import transformers as tf
from torch.utils.flop_counter import FlopCounterMode

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "data", "multimodal")

WRAPPERS = {
    # google/gemma-3-4b-it
    "gemma-3-4b": lambda: tf.Gemma3Config(
        text_config=dict(model_type="gemma3_text", vocab_size=262208, hidden_size=2560, intermediate_size=10240,
                         num_hidden_layers=34, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                         sliding_window=1024, query_pre_attn_scalar=256, max_position_embeddings=131072,
                         rope_scaling={"factor": 8.0, "rope_type": "linear"}),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304,
                           num_hidden_layers=27, num_attention_heads=16, patch_size=14, image_size=896,
                           vision_use_head=False),
        mm_tokens_per_image=256, dtype="bfloat16"),
    # llava-hf/llava-1.5-7b-hf: Vicuna-7B (Llama-2 dims, 32064 tokens) and CLIP ViT-L/14 at 336
    "llava-1.5-7b": lambda: tf.LlavaConfig(
        text_config=dict(model_type="llama", vocab_size=32064, hidden_size=4096, intermediate_size=11008,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                         max_position_embeddings=4096),
        vision_config=dict(model_type="clip_vision_model", hidden_size=1024, intermediate_size=4096,
                           num_hidden_layers=24, num_attention_heads=16, patch_size=14, image_size=336,
                           projection_dim=768),
        dtype="float16"),
    # Qwen/Qwen2-VL-7B-Instruct
    "qwen2-vl-7b": lambda: tf.Qwen2VLConfig(
        text_config=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                         num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
                         rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}, tie_word_embeddings=False),
        vision_config=dict(depth=32, embed_dim=1280, hidden_size=3584, num_heads=16, mlp_ratio=4, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
        tie_word_embeddings=False, dtype="bfloat16"),
}


def count(params):
    seen, total = set(), 0
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def siglip_two_layer_flops(vision_config):
    keys = ("hidden_size", "intermediate_size", "num_attention_heads", "patch_size", "image_size", "num_channels", "hidden_act",
            "vision_use_head")
    config = tf.SiglipVisionConfig(**{k: v for k, v in vision_config.items() if k in keys}, num_hidden_layers=2)
    config._attn_implementation = "eager"
    model = tf.SiglipVisionModel(config).eval()
    image = torch.zeros(1, config.num_channels, config.image_size, config.image_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(pixel_values=image)
    flops = {str(op).split(".")[-1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    flops["total"] = counter.get_total_flops()
    return flops


def main():
    reference = {"transformers": tf.__version__, "torch": torch.__version__}
    for name, make in WRAPPERS.items():
        config = make()
        with torch.device("meta"):
            model = tf.AutoModelForImageTextToText.from_config(config)
        inner = model.model
        language = list(inner.language_model.parameters()) + list(model.lm_head.parameters())
        entry = {
            "language_params": count(language),
            "vision_params": count(inner.visual.parameters() if hasattr(inner, "visual") else inner.vision_tower.parameters()),
            "projector_params": count(inner.multi_modal_projector.parameters()) if hasattr(inner, "multi_modal_projector") else 0,
            "total_params": count(model.parameters()),
            "class": type(model).__name__,
        }
        if name == "gemma-3-4b":
            entry["vision_two_layer_flops"] = siglip_two_layer_flops(config.vision_config.to_dict())
        reference[name] = entry
        os.makedirs(os.path.join(OUT, name), exist_ok=True)
        with open(os.path.join(OUT, name, "config.json"), "w") as f:
            json.dump(config.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
        print(name, entry)
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
