"""Writes tests/data/bad/: files that must each fail cleanly (exit code 2, one line naming the
problem). Needs the `onnx` Python package (a development tool; CI only reads the files).
tests/data/bad/EXPECTED lists each file with a phrase its error line must contain."""
import os, sys
import onnx
from onnx import TensorProto, helper

root = os.path.join(os.path.dirname(__file__), "..", "..")
out = os.path.join(root, "tests", "data", "bad")
os.makedirs(out, exist_ok=True)
expected = {}


def model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = helper.make_graph(nodes, "bad", inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(g, opset_imports=ops)


def save(name, m, phrase):
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())
    expected[name] = phrase


def write(name, data, phrase):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    expected[name] = phrase


x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
sample = open(os.path.join(root, "samples", "resnet50-opset17.onnx"), "rb").read()

write("empty.onnx", b"", "empty file")
write("truncated.onnx", sample[:12345], "not a valid ONNX model")
flipped = bytearray(sample)
for i in (0, 1, 2, 3):
    flipped[i] ^= 0xFF
write("bitflip_header.onnx", bytes(flipped), "not a valid ONNX model")
flipped = bytearray(sample)
flipped[len(sample) // 2] ^= 0x80
flipped[len(sample) // 2 + 1] ^= 0x80
write("bitflip_middle.onnx", bytes(flipped), "")  # any one clean line
write("text.onnx", b"graph { node: 'not a protobuf' }\n", "not a valid ONNX model")
save("dangling_input.onnx", model([helper.make_node("Relu", ["ghost"], ["y"], name="r")], [x4], [y]), "names no tensor")
save("cycle.onnx", model([helper.make_node("Add", ["x", "b"], ["a"], name="a"), helper.make_node("Relu", ["a"], ["b"], name="b")],
                         [x4], [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)]), "cycle")
save("zero_dim.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 4])], [y]),
     "dims must be positive")
save("dim_2_62.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**62])], [y]),
     "beyond the limit 2^40")
neg = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4)
neg.dims[0] = -4
save("negative_initializer_dim.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [x4], [y], [neg]), "negative dim")
img = helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 1, 8, 8])
w = helper.make_tensor("k", TensorProto.FLOAT, [1, 1, 3, 3], [0.0] * 9)
conv = helper.make_node("Conv", ["img", "k"], ["y"], name="conv")
conv.attribute.append(helper.make_attribute("strides", [2.0, 2.0]))
save("wrong_attribute_type.onnx", model([conv], [img], [y], [w]), "attribute 'strides' must be ints")
ext = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4)
ext.ClearField("float_data")
ext.data_location = TensorProto.EXTERNAL
ext.external_data.add(key="location", value="../../../etc/passwd")
save("external_outside_folder.onnx", model([helper.make_node("Add", ["x", "w"], ["y"])], [x4], [y], [ext]), "outside the model's folder")
save("unknown_domain.onnx", model([helper.make_node("Magic", ["x"], ["y"], domain="com.example")], [x4], [y], extra_opsets=[("com.example", 1)]),
     "unknown domain")
save("huge_rank.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 40)], [y]),
     "exceeds the limit 32")
save("opset_6.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [x4], [y], opset=6), "outside the supported range")
save("unbound_dim.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])], [y]),
     "bind it with --dim n=N")
# A Loop whose constant trip count would unroll past the node limit (scripts/gpu/make_control_flow_models.py's loop).
import make_control_flow_models  # noqa: E402
loop = make_control_flow_models.loop_model(True)
for t in loop.graph.initializer:
    if t.name == "M":
        t.CopyFrom(helper.make_tensor("M", TensorProto.INT64, [], [10**9]))
save("loop_too_many_trips.onnx", loop, "exceeds the limit of")
# A Scan whose stated length would unroll past the node limit, and one scanning an axis its input lacks.
scan = make_control_flow_models.scan_model("scan")
for vi in scan.graph.input:
    if vi.name == "x":
        vi.type.tensor_type.shape.dim[0].dim_value = 10**9
save("scan_too_many_steps.onnx", scan, "exceeds the limit of")
scan = make_control_flow_models.scan_model("scan")
for a in scan.graph.node[0].attribute:
    if a.name == "num_scan_inputs":
        scan.graph.node[0].attribute.append(helper.make_attribute("scan_input_axes", [5]))
        break
save("scan_axis_out_of_range.onnx", scan, "is outside rank 3")
gbq = helper.make_node("GatherBlockQuantized", ["table", "ids", "s"], ["y"], domain="com.microsoft", bits=3, block_size=32)
save("gather_block_quantized_bits_3.onnx",
     model([gbq], [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
           [helper.make_tensor("table", TensorProto.UINT8, [8, 16], [0] * 128), helper.make_tensor("s", TensorProto.FLOAT, [8, 1], [1.0] * 8)],
           extra_opsets=[("com.microsoft", 1)]),
     "bits is 3; expected 4 or 8")
nbits = helper.make_node("MatMulNBits", ["a", "b", "s"], ["y"], domain="com.microsoft", K=64, N=16, bits=4, block_size=24)
save("matmul_nbits_block_24.onnx",
     model([nbits], [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 64])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
           [helper.make_tensor("b", TensorProto.UINT8, [16, 3, 12], [0] * 576), helper.make_tensor("s", TensorProto.FLOAT, [48], [1.0] * 48)],
           extra_opsets=[("com.microsoft", 1)]),
     "block_size 24 is not a power of 2")
write("empty.json", b"", "malformed JSON")
write("config_strings.json", b'{"model_type": "llama", "vocab_size": "32000", "hidden_size": 4096}', "'vocab_size' must be an integer")
write("config_1e9_layers.json", b'{"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 1000000000, '
      b'"num_attention_heads": 32, "intermediate_size": 11008, "max_position_embeddings": 4096}', "beyond the limit 10000")
write("config_array.json", b"[1, 2, 3]", "must be a JSON object")
write("config_nested.json", b"[" * 100000 + b"]" * 100000, "")
write("config_unknown_type.json", b'{"model_type": "rwkv"}', "not one rooflens knows")
# Multimodal wrappers and quantization formats: a misspelled key is refused naming the key meant.
write("config_multimodal_typo.json", b'{"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "vocab_size": 100, '
      b'"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_head": 2, "intermediate_size": 128, '
      b'"head_dim": 16}, "vision_config": {"model_type": "siglip_vision_model"}}', "did you mean 'num_key_value_heads'?")
write("config_compressed_tensors_groups.json", b'{"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, '
      b'"num_attention_heads": 4, "intermediate_size": 128, "quantization_config": {"quant_method": "compressed-tensors", '
      b'"format": "pack-quantized", "config_groups": {}}}', "config_groups' is missing or empty")
write("config_hqq_3bit.json", b'{"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, '
      b'"num_attention_heads": 4, "intermediate_size": 128, "quantization_config": {"quant_method": "hqq", "nbits": 3}}',
      "4- and 8-bit HQQ weights")

# Encoder-decoder configs: a missing T5 key, a misspelled one, no decoder layers, an absurd depth.
T5 = b'"model_type": "t5", "vocab_size": 100, "d_model": 64, "d_ff": 128, "num_heads": 4, "num_layers": 2'
write("config_t5_no_d_kv.json", b'{' + T5 + b'}', "missing required key 'd_kv'")
write("config_t5_typo.json", b'{' + T5 + b', "d_kv": 16, "num_decoder_layer": 2}', "did you mean 'num_decoder_layers'?")
write("config_t5_zero_decoder_layers.json", b'{' + T5 + b', "d_kv": 16, "num_decoder_layers": 0}', "'num_decoder_layers' must be positive")
write("config_bart_1e9_decoder_layers.json", b'{"model_type": "bart", "vocab_size": 100, "d_model": 64, "encoder_layers": 2, '
      b'"decoder_layers": 1000000000, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128, '
      b'"decoder_ffn_dim": 128, "max_position_embeddings": 64}', "beyond the limit 10000")

with open(os.path.join(out, "EXPECTED"), "w") as f:
    f.write("# file<TAB>phrase its one error line must contain (empty: any)\n")
    for k in sorted(expected):
        f.write(f"{k}\t{expected[k]}\n")
print(len(expected), "files")
