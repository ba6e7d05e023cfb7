"""Seed corpora for the fuzz targets: tiny ONNX models that reach many rules, and shrunk copies
of the sample configs (the config target skips configs of more than 4 layers to stay fast).
Needs the `onnx` Python package (a development tool)."""
import json, os
import onnx
from onnx import TensorProto as T, helper as h

here = os.path.dirname(os.path.abspath(__file__))
onnx_dir, cfg_dir = os.path.join(here, "corpus", "onnx"), os.path.join(here, "corpus", "config")
os.makedirs(onnx_dir, exist_ok=True)
os.makedirs(cfg_dir, exist_ok=True)


def vi(name, shape, t=T.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def init(name, dims, t=T.FLOAT, vals=None):
    n = 1
    for d in dims:
        n *= d
    return h.make_tensor(name, t, dims, vals if vals is not None else [0.5] * n)


def save(name, nodes, inputs, outputs, inits=(), opset=17, extra=()):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + [h.make_opsetid(d, 1) for d in extra])
    with open(os.path.join(onnx_dir, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


save("cnn", [h.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
             h.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]), h.make_node("Relu", ["n"], ["r"]),
             h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             h.make_node("GlobalAveragePool", ["p"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
             h.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1)],
     [vi("x", ["N", 3, 8, 8])], [vi("y", None)],
     [init("w", [4, 3, 3, 3]), init("b", [4]), init("s", [4]), init("bb", [4]), init("m", [4]), init("v", [4]),
      init("fc", [5, 4]), init("fb", [5])])
save("shape_chain", [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["b"], axis=0),
                     h.make_node("Unsqueeze", ["b", "ax"], ["bu"]), h.make_node("Concat", ["bu", "rest"], ["shape"], axis=0),
                     h.make_node("Reshape", ["x", "shape"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
                     h.make_node("Softmax", ["t"], ["y"], axis=-1)],
     [vi("x", ["batch", "seq", 8])], [vi("y", None)],
     [init("i0", [], T.INT64, [0]), init("ax", [1], T.INT64, [0]), init("rest", [2], T.INT64, [-1, 4])])
save("attention_ms", [h.make_node("Attention", ["x", "w", "b"], ["y"], domain="com.microsoft", num_heads=2, unidirectional=1)],
     [vi("x", [1, 4, 8])], [vi("y", None)], [init("w", [8, 24]), init("b", [24])], extra=["com.microsoft"])
save("gqa", [h.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "tot"], ["y"], domain="com.microsoft",
                         num_heads=4, kv_num_heads=2, local_window_size=4)],
     [vi("q", [1, 2, 16]), vi("k", [1, 2, 8]), vi("v", [1, 2, 8]), vi("pk", [1, 2, 3, 4]), vi("pv", [1, 2, 3, 4]), vi("sl", [1], T.INT32)],
     [vi("y", None)], [init("tot", [], T.INT32, [5])], extra=["com.microsoft"])
save("onnx_attention", [h.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)],
     [vi("q", [1, 4, 3, 8]), vi("k", [1, 2, 3, 8]), vi("v", [1, 2, 3, 8])], [vi("y", None)], opset=23)
save("norms", [h.make_node("LayerNormalization", ["x", "g", "b"], ["l"], axis=-1),
               h.make_node("SimplifiedLayerNormalization", ["l", "g"], ["r"], axis=-1),
               h.make_node("ReduceMean", ["r", "ax"], ["m"]), h.make_node("Gelu", ["m"], ["y"], approximate="tanh")],
     [vi("x", [2, 3, 8])], [vi("y", None)], [init("g", [8]), init("b", [8]), init("ax", [1], T.INT64, [1])], opset=20)
save("data_movement", [h.make_node("Slice", ["x", "st", "en", "ax"], ["s"]), h.make_node("Pad", ["s", "pads"], ["p"]),
                       h.make_node("Split", ["p", "sp"], ["a", "b"], axis=1), h.make_node("Concat", ["b", "a"], ["c"], axis=1),
                       h.make_node("Resize", ["c", "", "sc"], ["r"], mode="linear"), h.make_node("TopK", ["r", "k"], ["y", "i"])],
     [vi("x", [1, 2, 6, 6])], [vi("y", None), vi("i", None, T.INT64)],
     [init("st", [1], T.INT64, [1]), init("en", [1], T.INT64, [5]), init("ax", [1], T.INT64, [2]),
      init("pads", [8], T.INT64, [0, 0, 1, 1, 0, 0, 1, 1]), init("sp", [2], T.INT64, [1, 1]),
      init("sc", [4], T.FLOAT, [1, 1, 2, 2]), init("k", [1], T.INT64, [2])], opset=13)
save("einsum_gather", [h.make_node("Gather", ["tab", "ids"], ["e"]), h.make_node("Einsum", ["e", "w"], ["y"], equation="bsd,df->bsf")],
     [vi("ids", [2, 3], T.INT64)], [vi("y", None)], [init("tab", [10, 4]), init("w", [4, 5])])
save("range_where", [h.make_node("Range", ["z", "n", "o"], ["r"]), h.make_node("Less", ["r", "n"], ["c"]),
                     h.make_node("Where", ["c", "x", "x"], ["y"])],
     [vi("x", [5], T.INT64)], [vi("y", None, T.INT64)],
     [init("z", [], T.INT64, [0]), init("n", [], T.INT64, [5]), init("o", [], T.INT64, [1])])
fn = h.make_function("local", "Swish", ["a"], ["b"], [h.make_node("Sigmoid", ["a"], ["s"]), h.make_node("Mul", ["a", "s"], ["b"])],
                     [h.make_opsetid("", 18)])
g = h.make_graph([h.make_node("Swish", ["x"], ["y"], domain="local")], "fn", [vi("x", [4])], [vi("y", None)])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 18), h.make_opsetid("local", 1)], functions=[fn])
open(os.path.join(onnx_dir, "function.onnx"), "wb").write(m.SerializeToString())

# Control flow (scripts/gpu/make_control_flow_models.py) and quantized graphs (make_quantized_models.py).
for kind in ("control_flow", "quantized"):
    folder = os.path.join(here, "..", "tests", "data", "onnx", kind)
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as src, open(os.path.join(onnx_dir, kind + "_" + name), "wb") as dst:
            dst.write(src.read())

shrink = {"num_hidden_layers": 2, "n_layer": 2, "hidden_size": 64, "n_embd": 64, "num_attention_heads": 4, "n_head": 4,
          "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
          "n_positions": 64, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "first_k_dense_replace": 1, "q_lora_rank": 24, "kv_lora_rank": 16,
          "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8, "head_dim": 16, "sliding_window": 16}
samples = os.path.join(here, "..", "samples", "configs")
for name in sorted(os.listdir(samples)):
    cfg = json.load(open(os.path.join(samples, name, "config.json")))
    for k, v in shrink.items():
        if k in cfg and cfg[k] is not None:
            cfg[k] = v
    if cfg.get("model_type") == "deepseek_v3":
        cfg["num_key_value_heads"] = 4
    json.dump(cfg, open(os.path.join(cfg_dir, name + ".json"), "w"), indent=1)
# Every family's 2-layer config as transformers wrote it (tests/data/configs/*/two-layer).
families = os.path.join(here, "..", "tests", "data", "configs")
for name in sorted(os.listdir(families)):
    two = os.path.join(families, name, "two-layer", "config.json")
    if os.path.exists(two):
        with open(two) as src, open(os.path.join(cfg_dir, name + "-two-layer.json"), "w") as dst:
            dst.write(src.read())
# Multimodal wrappers (tests/data/multimodal), both parts shrunk: a 2-layer language model
# and a 2-layer tower over a 28x28 image (4 patches); and the quantization formats people export.
vision_shrink = {"num_hidden_layers": 2, "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                 "image_size": 28, "patch_size": 14, "depth": 2, "embed_dim": 32, "num_heads": 2}
wrappers = os.path.join(here, "..", "tests", "data", "multimodal")
for name in sorted(os.listdir(wrappers)):
    path = os.path.join(wrappers, name, "config.json")
    if not os.path.exists(path):
        continue
    cfg = json.load(open(path))
    for k, v in shrink.items():
        if cfg["text_config"].get(k) is not None:
            cfg["text_config"][k] = v
    cfg["text_config"].pop("layer_types", None)
    for k, v in vision_shrink.items():
        if k in cfg["vision_config"]:
            cfg["vision_config"][k] = v
    json.dump(cfg, open(os.path.join(cfg_dir, "multimodal-" + name + ".json"), "w"), indent=1)
quantized = {
    "compressed-tensors-w4a16": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                 "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                     "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32}}},
                                 "ignore": ["lm_head"]},
    "compressed-tensors-fp8": {"quant_method": "compressed-tensors", "format": "float-quantized",
                               "config_groups": {"group_0": {"targets": ["Linear"],
                                                             "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                                                             "input_activations": {"num_bits": 8, "type": "float", "dynamic": True}}}},
    "hqq-4bit": {"quant_method": "hqq", "quant_config": {"weight_quant_params": {"nbits": 4, "group_size": 64}},
                 "skip_modules": ["lm_head"]},
    "bnb-fp4": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
}
base = json.load(open(os.path.join(cfg_dir, "llama-2-7b.json")))
for name, q in quantized.items():
    json.dump(dict(base, quantization_config=q), open(os.path.join(cfg_dir, "quantized-" + name + ".json"), "w"), indent=1)
print(len(os.listdir(onnx_dir)), "onnx seeds,", len(os.listdir(cfg_dir)), "config seeds")
