"""Export the ONNX samples and test models with real exporters (run on the GPU machine,
whose image has torch, torchvision, transformers and onnx). Weights go to an external-data
file that is not shipped; only the graph (.onnx) is kept. Writes into $OUT (or argv[1])."""
import json, os, sys, traceback
import torch, torchvision, onnx

out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
report = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__}


def strip_weights(path):
    """Re-save with every initializer over 1 KiB in a side file, then drop the side file."""
    m = onnx.load(path)
    data = os.path.basename(path) + ".data"
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=1024)
    side = os.path.join(os.path.dirname(path), data)
    if os.path.exists(side):
        os.remove(side)
    m = onnx.load(path, load_external_data=False)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return {"nodes": len(m.graph.node), "opset": [(o.domain, o.version) for o in m.opset_import],
            "value_info": len(m.graph.value_info), "ops": ops, "bytes": os.path.getsize(path)}


def export(name, model, args, dynamo, opset, **kw):
    path = os.path.join(out, name + ".onnx")
    try:
        torch.onnx.export(model, args, path, opset_version=opset, dynamo=dynamo, **kw)
        report[name] = strip_weights(path)
    except Exception as e:  # keep going: one failed export must not lose the others
        report[name] = {"error": repr(e)[:2000]}
        traceback.print_exc()


torch.manual_seed(0)
r50 = torchvision.models.resnet50().eval()
# Fresh BatchNorm layers all hold ones and zeros; exporters merge identical initializers, so a
# random init would hide parameters. Give every BN distinct statistics, as a trained model has.
with torch.no_grad():
    for mod in r50.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.weight.uniform_(0.5, 1.5)
            mod.bias.normal_()
            mod.running_mean.normal_()
            mod.running_var.uniform_(0.5, 1.5)
x = torch.randn(1, 3, 224, 224)
report["resnet50_torch_params"] = sum(p.numel() for p in r50.parameters())
export("resnet50-opset17", r50, (x,), dynamo=False, opset=17,
       input_names=["input"], output_names=["logits"])
export("resnet50-opset18", r50, (x,), dynamo=True, opset=18)
export("resnet50-bn-unfolded", r50, (x,), dynamo=False, opset=17,
       training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
       input_names=["input"], output_names=["logits"])

vit = torchvision.models.vit_b_16().eval()
export("vit_b_16-opset17", vit, (x,), dynamo=False, opset=17,
       input_names=["input"], output_names=["logits"])

class Block(torch.nn.Module):
    """A GPT-2 block written out in plain torch, so the TorchScript exporter traces the
    size()-driven head reshapes into Shape/Gather/Unsqueeze/Concat/Reshape chains."""
    def __init__(self, d, h, ctx):
        super().__init__()
        self.h = h
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.mlp_proj = torch.nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (k.size(-1) ** 0.5)
        att = att.masked_fill(~self.bias[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=50257, ctx=1024, d=768, h=12, layers=12):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(ctx, d)
        self.blocks = torch.nn.ModuleList(Block(d, h, ctx) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)
        self.lm_head = torch.nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


gpt = TinyGPT().eval()
report["gpt2_style_torch_params"] = sum(p.numel() for p in gpt.parameters())
ids = torch.randint(0, 50257, (1, 128))
export("gpt2-style-opset17", gpt, (ids,), dynamo=False, opset=17,
       input_names=["input_ids"], output_names=["logits"],
       dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
vitl = torchvision.models.vit_l_16().eval()
export("vit_l_16-opset17", vitl, (x,), dynamo=False, opset=17,
       input_names=["input"], output_names=["logits"])

try:
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, use_cache=False)
    gpt2 = GPT2LMHeadModel(cfg).eval()
    gpt2.config.use_cache = False
    ids = torch.randint(0, cfg.vocab_size, (1, 128))

    class LogitsOnly(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    wrapped = LogitsOnly(gpt2).eval()
    export("gpt2-opset17", wrapped, (ids,), dynamo=False, opset=17,
           input_names=["input_ids"], output_names=["logits"],
           dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
    export("gpt2-opset18", wrapped, (ids,), dynamo=True, opset=18,
           dynamic_shapes={"input_ids": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}})
except Exception as e:
    report["gpt2"] = {"error": repr(e)[:2000]}
    traceback.print_exc()

if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    report["device"] = {"name": p.name, "sms": p.multi_processor_count,
                        "l2_bytes": getattr(p, "L2_cache_size", None),
                        "total_memory": p.total_memory, "cc": [p.major, p.minor]}

with open(os.path.join(out, "export_report.json"), "w") as f:
    json.dump(report, f, indent=1)
print(json.dumps(report, indent=1))
