import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Subprocesses (the console script, the example) run elsewhere: the package's path made absolute.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def no_pandas(monkeypatch):
    """The tables as they come where pandas is not installed: lists of dicts."""
    import rooflens.result
    monkeypatch.setattr(rooflens.result, "_pandas", lambda: None)


def rooflens_binary():
    return os.environ.get("ROOFLENS_BIN") or str(ROOT / "build" / "cli" / "rooflens")
