"""rooflens in Python: per-layer FLOPs, parameters, bytes, memory and roofline time of an ONNX
model or a transformer config, the same analysis the `rooflens` command line runs (docs/python.md).

    import rooflens
    r = rooflens.analyze("samples/resnet50-opset17.onnx", device="H100")
    r.totals.params, r.totals.flops
    r.nodes          # a pandas DataFrame (a list of dicts without pandas)
"""

import json
import os

from . import _core
from ._inputs import model_path, option_flags, timeline_path
from .annotate import annotate
from .record import Recording, record
from .result import Result, Totals, table

__all__ = ["analyze", "train_step", "compare", "serve", "devices", "annotate", "record", "Recording",
           "InputError", "Result", "Totals", "Serving"]
__version__ = _core.version

# What the command line exits 2 for (a bad file, flag or config), with the same one-line message.
InputError = _core.InputError
InputError.__module__ = __name__
InputError.__doc__ = "Bad input: the one line `rooflens` prints before it exits with code 2."


def analyze(model, **options) -> Result:
    """`rooflens analyze MODEL [flags]` in this process.

    model: an ONNX file, config.json or Hugging Face model directory (a path), an onnx.ModelProto,
    a transformers PretrainedConfig or a config dict. options: the command line's flags, dashes as
    underscores (phase="decode", batch=8, context=2048, device="H200", device_profile="h100.json",
    dim={"seq": 1024}, dtype="bf16", strict=True, ...). Raises InputError where the command line
    exits 2."""
    flags = option_flags(options)
    with model_path(model) as path:
        return Result(_core.analyze([path, *flags]))


def train_step(model, **options) -> Result:
    """A training step (`rooflens analyze MODEL --phase train [flags]`, docs/training.md): the
    step's time, its peak memory and the memory through the step (`memory_timeline`). options as
    analyze() takes them: precision="bf16-mixed", optimizer="adamw", recompute=, grad_accum=,
    zero=, dp=, batch=, seq=, ..."""
    if "phase" in options:
        raise TypeError("train_step: phase is train; analyze() takes the other phases")
    return analyze(model, phase="train", **options)


def compare(model, trace, **options) -> Result:
    """`rooflens compare MODEL TIMELINE [flags]`: the prediction next to a real run, module by
    module (docs/compare.md). trace: a `rooflens record` file, a PyTorch profiler trace (path), a
    finished torch.profiler.profile, or a rooflens.record() Recording. options as analyze() takes them, steps=N and force=True
    (compare a trace the trust checks call another model, phase or device)."""
    flags = option_flags(options)
    with model_path(model) as path, timeline_path(trace) as timeline:
        return Result(_core.compare([path, timeline, *flags]))


class Serving:
    """A simulated serving deployment (`rooflens serve`, docs/serving.md).

    serving: time to first token, time per output token, throughput and the KV-cache capacity
    (a dict); sweep: one row per --sweep-concurrency point (a DataFrame, or a list of dicts
    without pandas); timeline: the engine's steps; result: the whole document."""

    def __init__(self, text):
        self.result = json.loads(text)
        self.serving = self.result["serving"]
        self.plan = self.result["plan"]
        self.engine = self.result["engine"]
        self.sweep = table(self.result["sweep"], first=("concurrency",))
        columns = self.result["timeline"]["columns"]
        self.timeline = table([dict(zip(columns, s)) for s in self.result["timeline"]["steps"]])

    def __repr__(self):
        return f"<rooflens.Serving {self.result['model']} on {self.result['device']}>"


def serve(model, **options) -> Serving:
    """`rooflens serve CONFIG [flags]`: a serving engine's steps simulated on the model's per-step
    costs. options as the command line's flags, dashes as underscores (engine="trtllm", tp=2,
    weights="fp8", isl=5000, osl=500, concurrency=64, rate=4.0, sweep_concurrency=[1, 8, 64],
    ...). Raises InputError where the command line exits 2."""
    if isinstance(options.get("sweep_concurrency"), (list, tuple)):
        options["sweep_concurrency"] = ",".join(str(c) for c in options["sweep_concurrency"])
    flags = option_flags(options)
    with model_path(model) as path:
        return Serving(_core.serve([path, *flags]))


def devices():
    """The device database (`rooflens devices`, data/devices.json): one row per GPU, a DataFrame
    (a list of dicts without pandas)."""
    return table(json.loads(_core.devices()), first=("id", "name", "sm_count", "memory_bytes", "hbm_bandwidth"))


def data_path(*parts):
    """A file shipped with the package: data_path("profiles", "h100-sxm.json") is the H100's
    measured device profile (for device_profile=)."""
    return os.path.join(os.path.dirname(__file__), "data", *parts)
