# %% [markdown]
# # rooflens from Python
#
# A notebook-style tour (`# %%` cells: VS Code, Jupyter with jupytext, or `python
# examples/python_quickstart.py` from the checkout's root). Every number comes from the same C++
# analysis the `rooflens` command runs; docs/python.md has the whole API.

# %%
import rooflens

r = rooflens.analyze("samples/resnet50-opset17.onnx", device="H100")
r  # in a notebook: the HTML report (summary, roofline, layer table)

# %%
# The whole model: a dataclass.
t = r.totals
print(f"{t.params:,} params, {t.flops / 1e9:.2f} GFLOPs, predicted {t.predicted_s * 1e3:.3f} ms, "
      f"{t.throughput_per_s:.0f} {t.throughput_unit}")

# %%
# Per layer, per op type: DataFrames with pandas, lists of dicts without it.
nodes = r.nodes
if isinstance(nodes, list):
    slowest = sorted(nodes, key=lambda n: n.get("predicted_s") or 0, reverse=True)[:5]
    for n in slowest:
        print(n["name"], n["op"], n.get("bound"), n.get("predicted_s"))
else:
    print(nodes.nlargest(5, "predicted_s")[["name", "op", "bound", "predicted_s", "intensity"]])
print(r.by_op if not isinstance(r.by_op, list) else r.by_op[:5])

# %%
# A transformer config: options are the command line's flags (--phase decode -> phase="decode").
llama = rooflens.analyze("samples/configs/llama-2-7b/config.json", phase="decode", batch=8, context=4096,
                         device_profile=rooflens.data_path("profiles", "h100-sxm.json"))
print(llama.table(top=5))
print("KV cache:", llama.json["memory"]["kv_cache_bytes"] / 2**30, "GiB")

# %%
# A config as a dict (or a transformers PretrainedConfig) works the same.
import json

config = json.load(open("samples/configs/gpt2/config.json"))
config["n_layer"] = 24
print(rooflens.analyze(config, seq=1024).json["transformer"]["params_total"])

# %%
# A training step's memory over time.
step = rooflens.analyze("samples/configs/gpt2/config.json", phase="train", batch=8, seq=1024)
print(step.memory_timeline)

# %%
# Bad input: the command line's one line, as an exception.
try:
    rooflens.analyze("samples/configs/gpt2/config.json", phase="decod")
except rooflens.InputError as e:
    print("InputError:", e)

# %%
# The prediction next to a real run. With torch:
#
#     with rooflens.record(model) as rec:      # torch.profiler with the module ranges
#         model(**inputs)
#     cmp = rec.compare(config, seq=128)       # or rooflens.compare(config, prof) of your own
#
# Here a trace of GPT-2 prefill recorded on an H100 (tests/data/traces/h100) stands in for `prof`.
cmp = rooflens.compare("tests/data/traces/h100/gpt2.config.json",
                       "tests/data/traces/h100/gpt2-prefill.vanilla.h100.json.gz", seq=512)
print(cmp.table(top=5))
print(cmp.blocks if not isinstance(cmp.blocks, list) else cmp.blocks[:3])

# %%
# A training step: time, peak memory and the memory through the step.
step = rooflens.train_step("samples/configs/gpt2/config.json", batch=8, seq=1024)
print(step.json["training"]["peak_memory_bytes"] / 2**30, "GiB at the peak")

# %%
r.to_html("resnet50.html")  # the same self-contained page as `rooflens analyze --html`
