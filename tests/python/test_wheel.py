"""The wheel: built from this checkout, installed into a fresh virtual environment (no pandas, no
PYTHONPATH into the build tree), the README's Python example and the console script run there.

Under ctest the wheel reuses the CMake build in build/ (ROOFLENS_BUILD_DIR) instead of compiling
the C++ core a second time; run alone, pip builds it in build/wheel/."""

import glob
import os
import re
import subprocess
import sys
import zipfile

from conftest import ROOT


def readme_python_example():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, "README.md has no ```python example"
    return block.group(1)


def install_prefix(build_dir):
    cache = open(os.path.join(build_dir, "CMakeCache.txt")).read()
    return re.search(r"^CMAKE_INSTALL_PREFIX:PATH=(.*)$", cache, re.M).group(1)


def build_wheel(out):
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--disable-pip-version-check",
           "-w", str(out), str(ROOT)]
    build_dir = os.environ.get("ROOFLENS_BUILD_DIR")
    if build_dir:  # the tree scripts/test.sh configured: same build type and tests, nothing recompiled
        cmd += ["-C", f"build-dir={build_dir}", "-C", "cmake.build-type=RelWithDebInfo",
                "-C", "cmake.define.BUILD_TESTING=ON"]
    env = dict(os.environ, CMAKE_GENERATOR="Unix Makefiles")
    prefix = install_prefix(build_dir) if build_dir else None
    try:
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    finally:
        if prefix is not None:  # the wheel's temporary prefix out of the shared build's cache again
            subprocess.run(["cmake", "-S", str(ROOT), "-B", build_dir, f"-DCMAKE_INSTALL_PREFIX={prefix}", "-U", "SKBUILD*"],
                           check=True, stdout=subprocess.DEVNULL)
    wheels = glob.glob(str(out / "rooflens-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_installs_and_runs_in_a_fresh_environment(tmp_path):
    wheel = build_wheel(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rooflens/data/devices.json" in names and "rooflens/data/profiles/h100-sxm.json" in names
    assert "rooflens_annotate.py" in names
    core = [n for n in names if re.match(r"rooflens/_core\..*so$", n)]
    assert len(core) == 1, names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH")}
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--disable-pip-version-check", wheel],
                   check=True, env=env)

    # Installed, not the build tree's copy; the extension needs no CUDA library.
    where = subprocess.run([python, "-c", "import rooflens; print(rooflens.__file__)"], check=True, env=env,
                           capture_output=True, text=True, cwd=tmp_path).stdout
    assert where.startswith(str(venv))
    installed_core = glob.glob(os.path.join(os.path.dirname(where), "_core*.so"))[0]
    needed = subprocess.run(["readelf", "-d", installed_core], check=True, capture_output=True, text=True).stdout
    assert "NEEDED" in needed and not re.search(r"libcuda|libcudart|libcupti|libnvrtc", needed)

    # The README's example as a user runs it from a checkout (it names samples/ and writes an HTML
    # file: run where samples/ is linked, not in the checkout).
    work = tmp_path / "work"
    work.mkdir()
    (work / "samples").symlink_to(ROOT / "samples")
    example = subprocess.run([python, "-c", readme_python_example()], env=env, cwd=work, capture_output=True, text=True)
    assert example.returncode == 0, example.stderr
    assert (work / "resnet50.html").stat().st_size > 0
    assert "25530472" in example.stdout.replace(",", "")  # the sample's parameters (tests/python/test_api.py)

    cli = venv / "bin" / "rooflens"
    ok = subprocess.run([str(cli), "analyze", "samples/resnet50-opset17.onnx", "--top", "3"], env=env, cwd=work,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "25,530,472" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(cli), "analyze", "no-such.onnx"], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("rooflens: ") and bad.stderr.count("\n") == 1
