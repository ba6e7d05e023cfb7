"""Name every module's work by its path, for `rooflens compare` (docs/compare.md).

Forward pre/post hooks on every module push an NVTX range (seen by `rooflens record` and Nsight
Systems) and a torch.profiler record_function (seen in a torch.profiler trace), both named by the
module's path as ``model.named_modules()`` gives it ("model.layers.3.self_attn.q_proj"); the
model itself is named by its class ("LlamaForCausalLM"), once per forward: that range marks the
steps.

In a script::

    import rooflens_annotate
    handles = rooflens_annotate.annotate(model)   # before the run
    ...
    rooflens_annotate.remove(handles)

Without touching the script (every module of every model it calls is annotated, paths found from
the module that called it)::

    python3 -m rooflens_annotate train.py --its --args
    rooflens record -- python3 -m rooflens_annotate train.py

Only torch is needed; ``nvtx=False`` or ``record_function=False`` keeps one kind of range.
"""

import runpy
import sys
import threading

import torch

__all__ = ["annotate", "remove", "annotate_globally"]

_state = threading.local()  # per thread: the record_function contexts and the module path stack


def _open(name, nvtx, record_function):
    if nvtx and torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
    stack = getattr(_state, "contexts", None)
    if stack is None:
        stack = _state.contexts = []
    ctx = None
    if record_function:
        ctx = torch.autograd.profiler.record_function(name)
        ctx.__enter__()
    stack.append((ctx, nvtx and torch.cuda.is_available()))


def _close():
    stack = getattr(_state, "contexts", None)
    if not stack:
        return
    ctx, pushed = stack.pop()
    if ctx is not None:
        ctx.__exit__(None, None, None)
    if pushed:
        torch.cuda.nvtx.range_pop()


def annotate(model, nvtx=True, record_function=True):
    """Hooks on every module of `model`; returns the handles (pass them to remove())."""
    handles = []
    for path, module in model.named_modules():
        name = path if path else type(model).__name__

        def pre(mod, args, name=name):
            _open(name, nvtx, record_function)

        def post(mod, args, output):
            _close()

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post, always_call=True))
    return handles


def remove(handles):
    for h in handles:
        h.remove()


def annotate_globally(nvtx=True, record_function=True):
    """Global hooks: every module call of every model is annotated. A module called with no
    annotated module around it is a root, named by its class; any other is named by its path
    from the module around it (found once per pair, then cached)."""
    paths = {}  # (id(caller), id(module)) -> path

    def path_of(module):
        stack = getattr(_state, "paths", None)
        if stack is None:
            stack = _state.paths = []
        if not stack:
            return type(module).__name__, ""
        caller, caller_path = stack[-1]
        key = (id(caller), id(module))
        rel = paths.get(key)
        if rel is None:
            rel = next((n for n, m in caller.named_modules() if m is module and n), "?" + type(module).__name__)
            paths[key] = rel
        full = f"{caller_path}.{rel}" if caller_path else rel
        return full, full

    def pre(module, args):
        name, path = path_of(module)
        _state.paths.append((module, path))
        _open(name, nvtx, record_function)

    def post(module, args, output):
        _close()
        if getattr(_state, "paths", None):
            _state.paths.pop()

    return [torch.nn.modules.module.register_module_forward_pre_hook(pre),
            torch.nn.modules.module.register_module_forward_hook(post, always_call=True)]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: python3 -m rooflens_annotate SCRIPT.py [ARGS...]")
    annotate_globally()
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
