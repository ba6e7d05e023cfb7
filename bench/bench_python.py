"""The Python package's figures (docs/python.md): import time in a fresh interpreter, analyze() of
samples/resnet50-opset17.onnx in process, and ViT-L/16's node table (2,156 nodes) as a DataFrame.
Prints medians; not a test. Run: PYTHONPATH=build/python .venv/bin/python bench/bench_python.py
(or an installed wheel: python bench/bench_python.py)."""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = 20


def median_ms(fn, runs=RUNS):
    fn()  # warm: first-touch of the file and the allocator
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def import_ms():
    code = "import time; s = time.perf_counter(); import rooflens; print((time.perf_counter() - s) * 1e3)"
    return [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
            for _ in range(10)]


def main():
    imports = import_ms()
    print(f"import rooflens          median {statistics.median(imports):6.1f} ms, min {min(imports):6.1f} ms "
          f"(fresh interpreter, 10 runs; target < 150 ms)")
    import rooflens
    resnet = os.path.join(ROOT, "samples", "resnet50-opset17.onnx")
    med, low = median_ms(lambda: rooflens.analyze(resnet))
    print(f"analyze(ResNet-50)      median {med:6.1f} ms, min {low:6.1f} ms ({RUNS} runs in process; target < 50 ms)")
    vit = os.path.join(ROOT, "tests", "data", "onnx", "vit_l_16-opset17.onnx")
    result = rooflens.analyze(vit)
    med, low = median_ms(lambda: rooflens.analyze(vit))
    print(f"analyze(ViT-L/16)       median {med:6.1f} ms, min {low:6.1f} ms ({len(result.json['nodes'])} nodes)")
    try:
        import pandas  # noqa: F401  (imported before timing: the table's time, not pandas' import)
    except ImportError:
        print("pandas not installed: the node table is a list of dicts")
    med, low = median_ms(lambda: result.nodes)
    kind = type(result.nodes).__name__
    print(f"ViT-L/16 .nodes ({kind})  median {med:6.1f} ms, min {low:6.1f} ms "
          f"({len(result.json['nodes'])} rows; target < 100 ms)")


if __name__ == "__main__":
    main()
