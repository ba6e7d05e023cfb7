"""What analyze() and compare() accept, turned into what the command line takes: a path and flags."""

import contextlib
import json
import os
import re
import tempfile

# Flags that only choose what the command line prints or writes: a Result renders those itself.
_OUTPUT_FLAGS = {
    "json": "Result.to_json(path)",
    "csv": "Result.nodes (a DataFrame: .to_csv(path))",
    "html": "Result.to_html(path)",
    "trace": "the command line's --trace",
    "top": "Result.table(top=...)",
    "by": "Result.table(by=...) or Result.by_block",
}


def option_flags(options):
    """Keyword options as command-line flags: device_profile="p.json" -> --device-profile p.json,
    strict=True -> --strict, dim={"batch": 8} or dim=["batch=8"] -> --dim batch=8. Names the
    command line does not know reach it and fail as they would there (InputError)."""
    flags = []
    for name, value in options.items():
        if name in _OUTPUT_FLAGS:
            raise TypeError(f"{name}= is an output of the command line; use {_OUTPUT_FLAGS[name]}")
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, dict):
            for key, v in value.items():
                flags += [flag, f"{key}={v}"]
        elif isinstance(value, (list, tuple)):
            for v in value:
                flags += [flag, str(v)]
        else:
            flags += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return flags


def _safe_name(name, fallback):
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name or "").strip("._")
    return name or fallback


@contextlib.contextmanager
def model_path(model):
    """A path the command line reads for `model`: a path as is; an onnx.ModelProto, a dict or a
    transformers PretrainedConfig written to a temporary file for the length of the call."""
    if isinstance(model, (str, os.PathLike)):
        yield os.fspath(model)
        return
    with tempfile.TemporaryDirectory(prefix="rooflens-") as tmp:
        if hasattr(model, "SerializeToString") and hasattr(model, "graph"):  # onnx.ModelProto
            path = os.path.join(tmp, _safe_name(model.graph.name, "model") + ".onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
        elif isinstance(model, dict) or hasattr(model, "to_json_string"):  # a config
            if isinstance(model, dict):
                text, kind = json.dumps(model), model.get("model_type")
            else:  # transformers.PretrainedConfig: every field, as save_pretrained would write it
                text, kind = model.to_json_string(use_diff=False), getattr(model, "model_type", None)
            folder = os.path.join(tmp, _safe_name(kind, "config"))
            os.mkdir(folder)
            path = os.path.join(folder, "config.json")
            with open(path, "w") as f:
                f.write(text)
        else:
            raise TypeError(
                "model: expected a path (ONNX model, config.json or a Hugging Face model directory), an "
                f"onnx.ModelProto, a transformers PretrainedConfig or a dict, not {type(model).__name__}")
        yield path


@contextlib.contextmanager
def timeline_path(trace):
    """A path for compare's timeline: a path as is; a torch.profiler.profile exported to a temporary
    Chrome trace (torch hands its events out only through export_chrome_trace)."""
    if isinstance(trace, (str, os.PathLike)):
        yield os.fspath(trace)
        return
    if hasattr(trace, "trace_path") and hasattr(trace, "_finished"):  # a rooflens.record() Recording
        yield trace._finished()
        return
    if not hasattr(trace, "export_chrome_trace"):
        raise TypeError("trace: expected a path (a rooflens record file or a PyTorch profiler trace) or a "
                        f"torch.profiler.profile, not {type(trace).__name__}")
    with tempfile.TemporaryDirectory(prefix="rooflens-") as tmp:
        path = os.path.join(tmp, "torch_profiler_trace.json")
        trace.export_chrome_trace(path)
        yield path
