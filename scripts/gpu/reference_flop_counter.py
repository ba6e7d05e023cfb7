"""FlopCounterMode references for 2-layer copies of the encoder-decoders and multimodal models (issue 29).

Each case is built with transformers' own model class from a committed config, cut to 2 layers by the
overrides listed in CASES (the JSON records them: tests apply the same overrides to the same file), in
fp32 on the CPU with attn_implementation="eager", random weights, under torch.no_grad(), and counted with
torch.utils.flop_counter.FlopCounterMode. It writes tests/data/reference/flop_counter.json:
  cases.<name>.<phase>.total     the counter's total (get_total_flops())
  cases.<name>.<phase>.by_op     get_flop_counts()["Global"] by aten op (mm, addmm, bmm, convolution, ...)
  cases.<name>.<phase>.by_kind   the same FLOPs split by the module that ran them (its own ops, not its
                                 children's): linear, lm_head (the head: lm_head, Whisper's proj_out),
                                 cross_kv (cross-attention's k/v projections), merger (Qwen2-VL's patch
                                 merger), conv, attention (the score and context products of an attention
                                 module), rope (the inv_freq x positions product of a rotary embedding)
and what each phase ran (inputs, cache lengths). FlopCounterMode counts matrix products and
convolutions only, 2 FLOPs a multiply-accumulate, dense (eager attention multiplies every query with
every key, masked or not); bias adds, norms, activations and the softmax are not in these figures.

The workloads are rooflens's (analyzer/transformers/lowering_encoder_decoder.cpp, lowering.cpp):
  t5-small, flan-t5-small, bart-base (samples/configs/): "prefill" = model(input_ids [1, 64],
    decoder_input_ids [1, 1]): the encoder over 64 source tokens and the decoder's first token, whose
    cross-attention projects the encoder output to K/V; "decode" = one decoder step (decoder_input_ids
    [1, 1]) over a cache of 16 decoder tokens and the 64 source tokens' cross K/V (filled, uncounted,
    by a forward of 16 decoder tokens first; the counted step projects no cross K/V).
  whisper-tiny: the same with input_features [1, 80, 3000] (1500 encoder positions) for input_ids.
  gemma-3-4b-text (tests/data/multimodal/gemma-3-4b, its text_config as Gemma3ForCausalLM): prefill of
    [1, 64] tokens, logits for all 64 (transformers' default and rooflens's prefill head).
  qwen2-vl-7b-text (tests/data/multimodal/qwen2-vl-7b, Qwen2VLForConditionalGeneration): the same
    through the language model and lm_head (token ids below the vision ids: no image).
  qwen2-vl-7b-vision: the same model's vision tower (model.model.visual, depth 2, the patch merger
    included) on one 448x448 image: grid_thw [1, 32, 32], 1024 patches of 2x14x14 (the image repeated
    over temporal_patch_size 2), merged to 256 tokens. rooflens's --part vision does not lower this
    tower (qwen2_vl_vision), so it fixes no image size; 448x448 is chosen here.

Run (CPU only, about a minute with 16 cores; up to ~8 GB of memory for Qwen2-VL's 2-layer copy):
  python3 scripts/gpu/reference_flop_counter.py [OUT.json]   (default tests/data/reference/flop_counter.json)
on the GPU machine, whose image has torch 2.11 and transformers 5.17 (/opt/torch/.venv/bin/python3).
"""
import datetime
import json
import os
import platform
import re
import sys
import time

import torch
import transformers as tf
from torch.utils.flop_counter import FlopCounterMode

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "reference", "flop_counter.json")
SOURCE_TOKENS = 64  # --seq
CONTEXT = 16  # --context: cached decoder tokens before the decode step
QWEN_IMAGE = 448  # pixels a side of the one image through Qwen2-VL's tower

T5_CUT = {"num_layers": 2, "num_decoder_layers": 2}
BART_CUT = {"encoder_layers": 2, "decoder_layers": 2}
CASES = {
    "t5-small": {"config": "samples/configs/t5-small/config.json", "kind": "encdec",
                 "config_class": tf.T5Config, "model_class": tf.T5ForConditionalGeneration, "overrides": T5_CUT},
    "flan-t5-small": {"config": "samples/configs/flan-t5-small/config.json", "kind": "encdec",
                      "config_class": tf.T5Config, "model_class": tf.T5ForConditionalGeneration, "overrides": T5_CUT},
    "bart-base": {"config": "samples/configs/bart-base/config.json", "kind": "encdec",
                  "config_class": tf.BartConfig, "model_class": tf.BartForConditionalGeneration,
                  "overrides": BART_CUT},
    "whisper-tiny": {"config": "samples/configs/whisper-tiny/config.json", "kind": "encdec",
                     "config_class": tf.WhisperConfig, "model_class": tf.WhisperForConditionalGeneration,
                     "overrides": BART_CUT},
    "gemma-3-4b-text": {"config": "tests/data/multimodal/gemma-3-4b/config.json", "kind": "gemma3_text",
                        "config_class": tf.Gemma3TextConfig, "model_class": tf.Gemma3ForCausalLM,
                        # one layer of each kind the model has (sliding window, full)
                        "overrides": {"text_config": {"num_hidden_layers": 2,
                                                      "layer_types": ["sliding_attention", "full_attention"]}}},
    "qwen2-vl-7b": {"config": "tests/data/multimodal/qwen2-vl-7b/config.json", "kind": "qwen2_vl",
                    "config_class": tf.Qwen2VLConfig, "model_class": tf.Qwen2VLForConditionalGeneration,
                    "overrides": {"text_config": {"num_hidden_layers": 2,
                                                  "layer_types": ["full_attention", "full_attention"]},
                                  "vision_config": {"depth": 2}}},
}


def merge(base, patch):
    """JSON merge patch (RFC 7386, as nlohmann::json::merge_patch): objects merge, the rest replaces."""
    out = dict(base)
    for k, v in patch.items():
        out[k] = merge(out.get(k, {}), v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def kind_of(name, module, op):
    """What a matrix product run by `module` itself (not its children) is."""
    cls = type(module).__name__
    leaf = name.rsplit(".", 1)[-1]
    if isinstance(module, torch.nn.Linear):
        if leaf in ("lm_head", "proj_out"):
            return "lm_head"
        parent = name.rsplit(".", 2)[-2] if name.count(".") >= 2 else ""
        if parent in ("EncDecAttention", "encoder_attn") and leaf in ("k", "v", "k_proj", "v_proj"):
            return "cross_kv"
        return "merger" if ".merger." in name else "linear"
    if isinstance(module, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)) or op == "convolution":
        return "conv"
    if "Rotary" in cls:
        return "rope"
    if "Attention" in cls:
        return "attention"
    return "other:" + cls


def opname(op):
    """aten.mm (an OpOverloadPacket, whichever way it prints) -> "mm"."""
    m = re.search(r"aten\.(\w+)", str(op))
    return m.group(1) if m else str(op)


def counted(root, counter):
    """The counter's total, its Global counts by op, and each module's own FLOPs summed by kind."""
    base = type(root).__name__
    modules = {base + ("." + n if n else ""): m for n, m in root.named_modules()}
    counts = counter.get_flop_counts()
    by_op = {}
    for op, n in counts["Global"].items():
        by_op[opname(op)] = by_op.get(opname(op), 0) + n
    tracked = [n for n in counts if n != "Global" and n in modules]
    kinds = {}
    for name in tracked:
        below = [d for d in tracked if d.startswith(name + ".")]
        children = [d for d in below if not any(d.startswith(e + ".") for e in below)]
        for op, n in counts[name].items():
            own = n - sum(counts.get(c, {}).get(op, 0) for c in children)
            if own:
                k = kind_of(name, modules[name], opname(op))
                kinds[k] = kinds.get(k, 0) + own
    total = counter.get_total_flops()
    if sum(kinds.values()) != total:
        kinds["unattributed"] = total - sum(kinds.values())
    return {"total": total, "by_op": dict(sorted(by_op.items())), "by_kind": dict(sorted(kinds.items()))}


def count(root, fn):
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = fn()
    return counted(root, counter), out


def build(spec):
    with open(os.path.join(ROOT, spec["config"])) as f:
        whole = merge(json.load(f), spec["overrides"])
    d = whole["text_config"] if spec["kind"] == "gemma3_text" else whole
    config = spec["config_class"].from_dict(d)
    torch.manual_seed(0)
    model = spec["model_class"]._from_config(config, attn_implementation="eager", dtype=torch.float32)
    model.eval().requires_grad_(False)
    assert next(model.parameters()).dtype == torch.float32
    info = {"config_class": type(config).__name__, "model_class": type(model).__name__,
            "attn_implementation": model.config._attn_implementation,
            "params": sum(p.numel() for p in model.parameters())}
    return model, info


def encoder_decoder(name, spec):
    model, entry = build(spec)
    cfg = model.config
    whisper = cfg.model_type == "whisper"
    vocab = cfg.vocab_size
    if whisper:
        source = {"input_features": torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions)}
    else:
        source = {"input_ids": torch.randint(0, vocab, (1, SOURCE_TOKENS))}
    first = torch.randint(0, vocab, (1, 1))
    entry["prefill"], out = count(model, lambda: model(**source, decoder_input_ids=first, use_cache=True))
    entry["prefill"]["inputs"] = {k: list(v.shape) for k, v in source.items()} | {"decoder_input_ids": [1, 1]}
    cache = out.past_key_values
    entry["prefill"]["cache_after"] = {"self_tokens": cache.self_attention_cache.get_seq_length(),
                                       "cross_tokens": cache.cross_attention_cache.get_seq_length()}
    # Decode: fill a cache with CONTEXT decoder tokens over the encoder output (not counted), then
    # count one step that reads it.
    with torch.no_grad():
        encoded = model.get_encoder()(**source)
        filled = model(encoder_outputs=encoded, decoder_input_ids=torch.randint(0, vocab, (1, CONTEXT)),
                       use_cache=True).past_key_values
    before = {"self_tokens": filled.self_attention_cache.get_seq_length(),
              "cross_tokens": filled.cross_attention_cache.get_seq_length()}
    step = torch.randint(0, vocab, (1, 1))
    entry["decode"], out = count(model, lambda: model(encoder_outputs=encoded, decoder_input_ids=step,
                                                      past_key_values=filled, use_cache=True))
    entry["decode"]["inputs"] = {"decoder_input_ids": [1, 1], "encoder_outputs": list(encoded[0].shape)}
    entry["decode"]["cache_before"] = before
    entry["decode"]["cache_after"] = {"self_tokens": out.past_key_values.self_attention_cache.get_seq_length(),
                                      "cross_tokens": out.past_key_values.cross_attention_cache.get_seq_length()}
    return {name: entry}


def gemma3_text(name, spec):
    model, entry = build(spec)
    ids = torch.randint(0, 262144, (1, SOURCE_TOKENS))  # below the image token ids
    entry["prefill"], out = count(model, lambda: model(input_ids=ids, use_cache=False))
    entry["prefill"]["inputs"] = {"input_ids": [1, SOURCE_TOKENS]}
    entry["prefill"]["logits"] = list(out.logits.shape)
    return {name: entry}


def qwen2_vl(name, spec):
    model, info = build(spec)
    cfg = model.config
    # params: the whole 2-layer wrapper (language model, tower and merger), built once for both parts
    text = dict(info, part="text", config=spec["config"], overrides=spec["overrides"])
    ids = torch.randint(0, cfg.vision_start_token_id, (1, SOURCE_TOKENS))  # no vision token
    text["prefill"], out = count(model, lambda: model(input_ids=ids, use_cache=False))
    text["prefill"]["inputs"] = {"input_ids": [1, SOURCE_TOKENS]}
    text["prefill"]["logits"] = list(out.logits.shape)
    v = cfg.vision_config
    grid = QWEN_IMAGE // v.patch_size
    thw = torch.tensor([[1, grid, grid]])
    patch = v.in_channels * v.temporal_patch_size * v.patch_size * v.patch_size
    pixels = torch.randn(grid * grid, patch)
    tower = model.model.visual
    vision = dict(info, part="vision", config=spec["config"], overrides=spec["overrides"],
                  attn_implementation=tower.config._attn_implementation,
                  params=sum(p.numel() for p in tower.parameters()))
    vision["prefill"], out = count(tower, lambda: tower(pixels, grid_thw=thw))
    vision["prefill"]["inputs"] = {"image": [QWEN_IMAGE, QWEN_IMAGE], "grid_thw": [1, grid, grid],
                                   "pixel_values": list(pixels.shape)}
    vision["prefill"]["merged_tokens"] = list(out.pooler_output.shape)
    return {name + "-text": text, name + "-vision": vision}


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = f"; its GPU, {torch.cuda.get_device_name(0)}, unused" if torch.cuda.is_available() else ""
    return f"CPU only: {cpu}, {os.cpu_count()} cores{gpu}"


def main(argv):
    out_path = argv[0] if argv else DEFAULT_OUT
    torch.set_num_threads(os.cpu_count() or 1)
    report = {"provenance": {"script": "scripts/gpu/reference_flop_counter.py", "arguments": " ".join(argv) or "none (the default output path)",
                             "machine": machine(), "date": datetime.date.today().isoformat(),
                             "torch": torch.__version__, "transformers": tf.__version__,
                             "python": platform.python_version()},
              "counter": "torch.utils.flop_counter.FlopCounterMode: matrix products and convolutions, "
                         "2 FLOPs a multiply-accumulate; fp32, CPU, eager attention, torch.no_grad()",
              "batch": 1, "tokens": SOURCE_TOKENS, "context": CONTEXT, "cases": {}}
    runners = {"encdec": encoder_decoder, "gemma3_text": gemma3_text, "qwen2_vl": qwen2_vl}
    for name, spec in CASES.items():
        t0 = time.time()
        entries = runners[spec["kind"]](name, spec)
        for key, entry in entries.items():
            entry.setdefault("config", spec["config"])
            entry.setdefault("overrides", spec["overrides"])
            entry["seconds"] = round(time.time() - t0, 1)
            report["cases"][key] = entry
            print(key, json.dumps({p: entry[p]["by_kind"] for p in ("prefill", "decode") if p in entry}), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
