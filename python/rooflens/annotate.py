"""rooflens.annotate(model): module-path ranges (NVTX and torch.profiler record_function) around
every module's forward, for compare(); the hooks are rooflens_annotate's (python/rooflens_annotate.py)."""

import contextlib


@contextlib.contextmanager
def annotate(model=None, nvtx=True, record_function=True):
    """Within the block, every module of `model` runs inside a range named by its path
    ("model.layers.3.self_attn.q_proj"); with no model, every module of every model does. The
    hooks are removed when the block ends, also on an exception. Needs torch."""
    import rooflens_annotate  # imports torch: only when asked for

    if model is None:
        handles = rooflens_annotate.annotate_globally(nvtx=nvtx, record_function=record_function)
    else:
        handles = rooflens_annotate.annotate(model, nvtx=nvtx, record_function=record_function)
    try:
        yield model
    finally:
        rooflens_annotate.remove(handles)
