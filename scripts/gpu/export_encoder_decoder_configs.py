"""Write the encoder-decoder sample configs (t5-small, flan-t5-small, bart-base, whisper-tiny) with
transformers' own config classes, and count each model's parameters on the meta device (what
model.num_parameters() reports) as a reference for tests/analyzer/transformers/test_encoder_decoder.cpp.
Hyperparameters are the published ones of each model (their config.json on the Hugging Face Hub:
google-t5/t5-small, google/flan-t5-small, facebook/bart-base, openai/whisper-tiny).
Usage (the GPU machine, whose image has transformers): python3 scripts/gpu/export_encoder_decoder_configs.py OUT"""
import json, os, sys
import torch
import transformers as tf

out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
configs = {
    "t5-small": (tf.T5ForConditionalGeneration, tf.T5Config(
        vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8,
        relative_attention_num_buckets=32, feed_forward_proj="relu", n_positions=512)),
    "flan-t5-small": (tf.T5ForConditionalGeneration, tf.T5Config(
        vocab_size=32128, d_model=512, d_kv=64, d_ff=1024, num_layers=8, num_decoder_layers=8, num_heads=6,
        relative_attention_num_buckets=32, relative_attention_max_distance=128, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, n_positions=512, torch_dtype="float32")),
    "bart-base": (tf.BartForConditionalGeneration, tf.BartConfig(
        vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
        decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072, max_position_embeddings=1024,
        activation_function="gelu", scale_embedding=False, torch_dtype="float32")),
    "whisper-tiny": (tf.WhisperForConditionalGeneration, tf.WhisperConfig(
        vocab_size=51865, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4,
        encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
        max_source_positions=1500, max_target_positions=448, torch_dtype="float32")),
}
report = {"provenance": {"script": "scripts/gpu/export_encoder_decoder_configs.py", "arguments": [out],
                         "machine": "the GPU machine", "transformers": tf.__version__, "torch": torch.__version__}}
for name, (cls, cfg) in configs.items():
    d = os.path.join(out, name)
    cfg.save_pretrained(d)
    with torch.device("meta"):
        model = cls(cfg)
    buffers = {n: b.numel() for n, b in model.named_buffers()}
    report[name] = {"num_parameters": model.num_parameters(), "buffers": buffers,
                    "trainable": model.num_parameters(only_trainable=True),
                    "modules": [n for n, _ in model.named_modules()][:40]}
with open(os.path.join(out, "encoder_decoder_report.json"), "w") as f:
    json.dump(report, f, indent=1)
print(json.dumps({k: (v if k == "provenance" else {"num_parameters": v["num_parameters"], "buffers": v["buffers"]}) for k, v in report.items()}, indent=1))
