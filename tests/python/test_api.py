"""rooflens's Python API against hand-computed figures (the same ones tests/*.cpp hold, each with
its source) and against the command line it wraps (same document, same messages, same exit codes)."""

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

import rooflens
from conftest import ROOT, rooflens_binary

RESNET = str(ROOT / "samples" / "resnet50-opset17.onnx")
GPT2_ONNX = str(ROOT / "samples" / "gpt2-style-opset17.onnx")
GPT2_CONFIG = ROOT / "samples" / "configs" / "gpt2" / "config.json"
LLAMA2_7B = str(ROOT / "samples" / "configs" / "llama-2-7b" / "config.json")
# torch's sum(p.numel() for p in resnet50().parameters()) is 25,557,032; the BN-folded export drops
# the 53,120 BatchNorm scales and shifts and gains 26,560 conv biases (tests/test_real_models.cpp).
RESNET_PARAMS = 25_557_032 - 53_120 + 26_560
# GPT-2 small's published parameter count (tied embeddings counted once).
GPT2_PARAMS = 124_439_808


def conv_gemm_macs(nodes):
    rows = nodes if isinstance(nodes, list) else nodes.to_dict("records")
    return sum(r["macs"] for r in rows if r["op"] in ("Conv", "Gemm"))


def test_resnet50_params_and_macs():
    pd = pytest.importorskip("pandas")
    r = rooflens.analyze(RESNET)
    assert r.totals.params == RESNET_PARAMS
    assert isinstance(r.nodes, pd.DataFrame)
    # torchvision's model card: 4.09 GFLOPS counted as multiply-accumulates at 1x3x224x224.
    assert conv_gemm_macs(r.nodes) == pytest.approx(4.09e9, rel=0.005)
    assert r.totals.flops == r.nodes["flops"].sum()
    assert list(r.by_op.columns[:2]) == ["op", "count"]
    assert int(r.by_op.loc[r.by_op.op == "Conv", "count"].iloc[0]) == 53  # ResNet-50: 1 + 3*16 + 4 projections


def test_tables_are_lists_of_dicts_without_pandas(no_pandas):
    r = rooflens.analyze(RESNET)
    for t in (r.nodes, r.by_op, r.by_block, r.memory_timeline):
        assert isinstance(t, list) and t and isinstance(t[0], dict)
    assert len(r.nodes) == len(r.json["nodes"])
    assert conv_gemm_macs(r.nodes) == pytest.approx(4.09e9, rel=0.005)
    assert isinstance(rooflens.devices(), list)


def test_onnx_dims_by_dict():
    r = rooflens.analyze(GPT2_ONNX, dim={"batch": 1, "seq": 128})
    head = next(n for n in r.json["nodes"] if n["name"] == "/lm_head/MatMul")
    assert head["output_shapes"][0] == "[1,128,50257]"
    assert head["macs"] == 128 * 768 * 50257  # tokens x d_model x vocabulary


def test_config_by_path_dict_and_directory():
    by_path = rooflens.analyze(str(GPT2_CONFIG), seq=8)
    by_dir = rooflens.analyze(GPT2_CONFIG.parent, seq=8)
    by_dict = rooflens.analyze(json.loads(GPT2_CONFIG.read_text()), seq=8)
    for r in (by_path, by_dir, by_dict):
        assert r.json["transformer"]["params_total"] == GPT2_PARAMS
    assert by_dict.json["model"]["name"] == "gpt2/config.json"  # the temporary folder is named by model_type


def test_decode_kv_cache_by_hand():
    r = rooflens.analyze(LLAMA2_7B, phase="decode", batch=8, context=4096)
    # K and V x 32 layers x 32 heads x 128 dims x 2 bytes (fp16) per token; 4096 cached tokens + the new one.
    assert r.json["memory"]["kv_cache_bytes"] == 8 * 4097 * (2 * 32 * 32 * 128 * 2)


def test_training_memory_timeline_holds_the_weights():
    r = rooflens.analyze(str(GPT2_CONFIG), phase="train", batch=1, seq=128, precision="fp32")
    timeline = r.memory_timeline
    rows = timeline if isinstance(timeline, list) else timeline.to_dict("records")
    assert rows
    # fp32 training: every parameter held as 4 bytes at every moment of the step.
    assert all(row["weights"] == 4 * GPT2_PARAMS for row in rows)
    assert max(row["total"] for row in rows) == r.json["training"]["peak_memory_bytes"]


def test_same_document_as_the_command_line(tmp_path):
    out = tmp_path / "cli.json"
    subprocess.run([rooflens_binary(), "analyze", LLAMA2_7B, "--phase", "decode", "--batch", "4", "--context", "1024",
                    "--device", "H200", "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
    r = rooflens.analyze(LLAMA2_7B, phase="decode", batch=4, context=1024, device="H200")
    assert r.to_json() == out.read_text()
    assert r.json["device"]["id"] == "H200"
    saved = tmp_path / "api.json"
    r.to_json(saved)
    assert json.loads(saved.read_text()) == json.loads(out.read_text())


def test_device_profile_from_the_package_data():
    r = rooflens.analyze(RESNET, device_profile=rooflens.data_path("profiles", "h100-sxm.json"))
    assert r.json["device"]["roofs"] == "calibrated"


def cli_error(*args):
    p = subprocess.run([rooflens_binary(), *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1
    return p.stderr.removeprefix("rooflens: ").rstrip("\n")


@pytest.mark.parametrize("options,flags", [
    ({"phase": "decod"}, ["--phase", "decod"]),
    ({"dim": {"seq": 8}}, ["--dim", "seq=8"]),          # --dim on a config
    ({"zero": 5, "phase": "train"}, ["--zero", "5", "--phase", "train"]),
    ({"no_such_flag": 1}, ["--no-such-flag", "1"]),   # CLI11's own parse error
])
def test_input_errors_carry_the_command_lines_line(options, flags):
    expected = cli_error("analyze", LLAMA2_7B, *flags)
    with pytest.raises(rooflens.InputError) as e:
        rooflens.analyze(LLAMA2_7B, **options)
    assert str(e.value) == expected
    assert isinstance(e.value, ValueError)


def test_missing_and_corrupt_files_are_input_errors(tmp_path):
    with pytest.raises(rooflens.InputError, match="no-such.onnx"):
        rooflens.analyze(str(tmp_path / "no-such.onnx"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07not a model")
    with pytest.raises(rooflens.InputError) as e:
        rooflens.analyze(str(bad))
    assert str(e.value) == cli_error("analyze", str(bad))


def test_output_flags_and_unknown_models_are_type_errors():
    with pytest.raises(TypeError, match="to_html"):
        rooflens.analyze(RESNET, html="x.html")
    with pytest.raises(TypeError, match="onnx.ModelProto"):
        rooflens.analyze(42)


def test_model_proto():
    onnx = pytest.importorskip("onnx")
    r = rooflens.analyze(onnx.load(RESNET, load_external_data=False))  # weights not shipped
    assert r.totals.params == RESNET_PARAMS


def test_pretrained_config():
    transformers = pytest.importorskip("transformers")
    # GPT2Config()'s defaults are GPT-2 small.
    assert rooflens.analyze(transformers.GPT2Config(), seq=8).json["transformer"]["params_total"] == GPT2_PARAMS


def test_devices():
    devices = rooflens.devices()
    rows = devices if isinstance(devices, list) else devices.to_dict("records")
    h100 = next(d for d in rows if d["id"] == "H100-SXM")
    assert h100["sm_count"] == 132                   # H100 whitepaper, table 3
    assert h100["hbm_bandwidth"] == 3.35e12          # H100 datasheet, SXM
    assert h100["tensor_flops.bf16"] == 989.4e12     # whitepaper, dense


def test_renderings():
    r = rooflens.analyze(RESNET)
    page = r.to_html()
    assert page.lstrip().lower().startswith("<!doctype html") and "resnet50-opset17.onnx" in page
    frame = r._repr_html_()
    assert frame.startswith("<iframe") and "<script" not in frame  # the page is escaped into srcdoc
    assert "resnet50-opset17.onnx" in r.table(top=3)
    assert "25,530,472" in str(r) or "25.53" in str(r)
    assert "resnet50-opset17.onnx" in repr(r)


H100_RUN = ROOT / "tests" / "data" / "traces" / "h100"
GPT2_H100 = str(H100_RUN / "gpt2.config.json")
# torch.profiler's trace of GPT-2 prefill (batch 1, 512 tokens, two steps) on the H100
# (tests/test_compare_h100.cpp).
PREFILL_TRACE = str(H100_RUN / "gpt2-prefill.vanilla.h100.json.gz")


class ExportsChromeTrace:
    """What compare() uses of a finished torch.profiler.profile: export_chrome_trace(path)."""

    def __init__(self, source):
        self.source = source

    def export_chrome_trace(self, path):
        with gzip.open(self.source, "rb") as f, open(path, "wb") as out:
            out.write(f.read())


def test_compare_with_a_trace_path_and_a_profiler_object():
    by_path = rooflens.compare(GPT2_H100, PREFILL_TRACE, seq=512)
    c = by_path.json["compare"]
    assert c["timeline"]["source"] == "pytorch profiler"
    assert c["timeline"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert c["steps"] == 2
    # Every GPU activity in the file, summed from its events here (dur in microseconds).
    events = json.loads(gzip.open(PREFILL_TRACE).read())["traceEvents"]
    own = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) * 1e-6
    assert c["total_kernel_s"] == pytest.approx(own, rel=0.005)
    # PyTorch ran an align1 CUTLASS GEMM for the 50,257-wide lm_head on the H100.
    lm_head = next(m for m in c["modules"] if m["path"] == "lm_head")
    assert "align1" in lm_head["top_kernels"][0]["name"]

    by_object = rooflens.compare(GPT2_H100, ExportsChromeTrace(PREFILL_TRACE), seq=512)
    assert by_object.json["compare"]["modules"] == c["modules"]
    modules = by_object.modules
    paths = [m["path"] for m in (modules if isinstance(modules, list) else modules.to_dict("records"))]
    assert "lm_head" in paths and "transformer.h.11.mlp.c_proj" in paths
    with pytest.raises(AttributeError):
        rooflens.analyze(RESNET).modules
    with pytest.raises(TypeError, match="torch.profiler.profile"):
        rooflens.compare(GPT2_H100, 3.5)


def test_annotate_names_modules_by_path():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with torch.profiler.profile() as prof, rooflens.annotate(model):
        model(torch.zeros(1, 4))
    names = {e.name for e in prof.events()}
    assert {"Sequential", "0", "1"} <= names
    model(torch.zeros(1, 4))  # the hooks are gone after the block


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "rooflens", *args], capture_output=True, text=True)


def test_console_script_is_the_command_line(tmp_path):
    ours, theirs = run_module("devices"), subprocess.run([rooflens_binary(), "devices"], capture_output=True, text=True)
    assert ours.returncode == 0 and ours.stdout == theirs.stdout
    missing = str(tmp_path / "missing.onnx")
    ours = run_module("analyze", missing)
    assert ours.returncode == 2
    assert ours.stderr == "rooflens: " + cli_error("analyze", missing) + "\n"
    assert run_module("--version").stdout.strip() == "rooflens 0.1.0"


def test_the_example_runs(tmp_path):
    # examples/python_quickstart.py as a script, where samples/ and tests/data are (it writes an HTML file).
    for part in ("samples", "tests"):
        (tmp_path / part).symlink_to(ROOT / part)
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "python_quickstart.py")], cwd=tmp_path,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "25,530,472 params" in p.stdout
    assert "InputError: --phase decod: expected prefill, decode, generate or train" in p.stdout
    assert (tmp_path / "resnet50.html").stat().st_size > 0


LLAMA33_70B = str(ROOT / "samples" / "configs" / "llama-3.3-70b" / "config.json")


def test_serve_is_the_command_lines_document(tmp_path):
    flags = ["--weights", "fp8", "--activations", "fp8", "--kv-dtype", "fp8", "--tp", "2", "--engine", "trtllm",
             "--isl", "512", "--osl", "64", "--sweep-concurrency", "1,8"]
    out = tmp_path / "serve.json"
    subprocess.run([rooflens_binary(), "serve", LLAMA33_70B, *flags, "--json", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    s = rooflens.serve(LLAMA33_70B, weights="fp8", activations="fp8", kv_dtype="fp8", tp=2, engine="trtllm",
                       isl="512", osl="64", sweep_concurrency=[1, 8])
    assert s.result == json.loads(out.read_text())
    assert s.plan["tp"] == 2 and s.engine["name"] == "trtllm"
    rows = s.sweep if isinstance(s.sweep, list) else s.sweep.to_dict("records")
    assert [r["concurrency"] for r in rows] == [1, 8]
    # Llama-3.3-70B (its config.json): 80 layers, 8 KV heads of 128; an fp8 cache holds K and V,
    # 2 * 80 * 8 * 128 * 1 B = 163,840 B per token, half of it on each of the 2 GPUs.
    assert s.result["memory_per_gpu"]["kv_bytes_per_token"] == 2 * 80 * 8 * 128 // 2


def test_serve_bad_flags_are_input_errors():
    with pytest.raises(rooflens.InputError, match="--tp 0"):
        rooflens.serve(LLAMA33_70B, tp=0)


def test_record_yields_a_trace_compare_reads(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with rooflens.record(model) as rec:
        with pytest.raises(RuntimeError, match="after its `with` block"):
            rec.save(tmp_path / "early.json")
        model(torch.zeros(1, 4))
    # The block's module ranges, named by path as compare() matches them, in the saved trace.
    saved = json.loads(open(rec.save(tmp_path / "trace.json")).read())
    ranges = {e["name"] for e in saved["traceEvents"] if e.get("cat") == "user_annotation"}
    assert {"Sequential", "0", "1"} <= ranges
    assert rec.save(tmp_path / "again.json")  # saved as often as asked: torch exports once
    model(torch.zeros(1, 4))  # the hooks are gone after the block
    if not torch.cuda.is_available():
        # A CPU-only recording has no kernels: compare says so, as the command line does.
        with pytest.raises(rooflens.InputError, match="no GPU activity"):
            rooflens.compare(GPT2_H100, rec, seq=512)


def test_train_step_is_analyze_with_phase_train():
    # The same document as analyze(phase="train").
    step = rooflens.train_step(RESNET, batch=8, precision="fp32")
    same = rooflens.analyze(RESNET, phase="train", batch=8, precision="fp32")
    assert step.json["training"] == same.json["training"]
    # fp32 AdamW holds weights, gradients and two moments: 16 bytes a parameter of model state.
    assert step.json["training"]["model_state_bytes"] == 16 * step.totals.params
    with pytest.raises(TypeError, match="phase is train"):
        rooflens.train_step(RESNET, phase="decode")
