"""rooflens.record(): a block of Python code recorded on the GPU, ready for compare().

`rooflens record -- python script.py` injects rooflens's CUPTI library as the CUDA program starts,
which cannot happen inside an interpreter that may already have initialised CUDA. In process the
recorder is torch.profiler's (CUPTI through Kineto), with rooflens.annotate's module ranges around
every module's forward, the names compare() matches."""

import contextlib
import os
import shutil
import tempfile


class Recording:
    """What record() yields. After the block: `profile`, the finished torch.profiler.profile;
    `trace_path`, the recording as a PyTorch profiler trace (Chrome JSON, exported once: torch
    exports a profile only once); `save(path)` copies it where you say; `compare(model, **options)`
    is rooflens.compare on it. The temporary trace is removed with the Recording."""

    def __init__(self):
        self.profile = None
        self.trace_path = None
        self._dir = None

    def _finished(self):
        if self.trace_path is None:
            raise RuntimeError("rooflens.record: the recording is read after its `with` block ends")
        return self.trace_path

    def save(self, path):
        """Writes the recording as a PyTorch profiler trace (Chrome JSON) at `path`."""
        shutil.copyfile(self._finished(), os.fspath(path))
        return os.fspath(path)

    def compare(self, model, **options):
        """rooflens.compare(model, this recording, **options)."""
        from . import compare

        return compare(model, self._finished(), **options)


@contextlib.contextmanager
def record(model=None, *, nvtx=True, record_shapes=False):
    """Records the block: its GPU kernels (CUDA activity, where torch sees a GPU) and CPU ops, with
    every module of `model` (every module of every model when None) inside a range named by its
    path. Yields a Recording, complete when the block ends. Needs torch."""
    import torch  # imported only when asked for

    from .annotate import annotate

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    rec = Recording()
    with torch.profiler.profile(activities=activities, record_shapes=record_shapes) as prof:
        with annotate(model, nvtx=nvtx, record_function=True):
            yield rec
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # the block's kernels finish inside the recording
    rec.profile = prof
    rec._dir = tempfile.TemporaryDirectory(prefix="rooflens-record-")
    rec.trace_path = os.path.join(rec._dir.name, "torch_profiler_trace.json")
    prof.export_chrome_trace(rec.trace_path)
