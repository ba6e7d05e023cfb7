#!/usr/bin/env python3
"""Runs NVIDIA's nccl-tests on the first N GPUs and writes their times as a reference for
`rooflens calibrate --gpus N` (tests/data/reference/multi_gpu/*-collectives-nccl-tests.json).

  scripts/gpu/nccl_tests_reference.py NCCL_TESTS_BUILD_DIR GPUS OUT.json [--rooflens CURVES.json]

Each of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf and sendrecv_perf
runs bf16 from 1 MiB to 1 GiB (x4), 5 warm-up and 20 timed iterations, three ways: one thread
driving every GPU (-g N), a thread per GPU (-t N -g 1), and a thread per GPU replaying its 20
iterations from a CUDA graph (-t N -g 1 -G 20). A row keeps nccl-tests' average time per operation
out of place and in place, and its out-of-place bus bandwidth. --rooflens embeds the curves of a
`calibrate --gpus N --add-to` profile measured in the same session. NVLink multicast stays off.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

BINARIES = {"all-reduce": "all_reduce_perf", "all-gather": "all_gather_perf",
            "reduce-scatter": "reduce_scatter_perf", "all-to-all": "alltoall_perf",
            "send/recv": "sendrecv_perf"}
COMMON = ["-b", "1M", "-e", "1G", "-f", "4", "-d", "bfloat16", "-w", "5", "-n", "20"]


def number(token):
    try:
        return float(token)
    except ValueError:
        return None


def rows_of(text):
    """The size rows of nccl-tests' table: size count type redop root, then time algbw busbw
    #wrong out of place and the same in place (times in microseconds)."""
    rows = []
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) < 13 or not tokens[0].isdigit():
            continue
        out_t, _, out_bus, out_wrong, in_t, _, _, in_wrong = tokens[-8:]
        for wrong in (out_wrong, in_wrong):
            if wrong not in ("0", "N/A"):
                sys.exit(f"nccl-tests reported {wrong} wrong elements:\n{line}")
        rows.append({"bytes": int(tokens[0]),
                     "out_of_place_s": number(out_t) * 1e-6 if number(out_t) is not None else None,
                     "in_place_s": number(in_t) * 1e-6 if number(in_t) is not None else None,
                     "busbw_out_of_place_gbps": number(out_bus)})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("gpus", type=int)
    ap.add_argument("out")
    ap.add_argument("--rooflens", help="a profile written by rooflens calibrate --gpus N --add-to")
    a = ap.parse_args()
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1")
    n = a.gpus
    modes = {f"g{n}": ["-g", str(n)], f"t{n}": ["-t", str(n), "-g", "1"],
             f"t{n}G": ["-t", str(n), "-g", "1", "-G", "20"]}
    results, version = {}, ""
    for name, binary in BINARIES.items():
        results[name] = {}
        for mode, flags in modes.items():
            command = [os.path.join(a.build, binary)] + COMMON + flags
            run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                sys.exit(f"{' '.join(command)} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
            for line in run.stdout.splitlines():
                if "nccl-tests version" in line or "NCCL version" in line:
                    version = version or line.strip("# ").strip()
            results[name][mode] = rows_of(run.stdout)
            print(name, mode, [round(r["out_of_place_s"] * 1e6, 1) for r in results[name][mode]], flush=True)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                         capture_output=True, text=True).stdout.strip()
    doc = {"what": f"NVIDIA/nccl-tests ({version}) on {n} x {gpu}, bf16, 1 MiB to 1 GiB x4, 5 warm-up and 20 "
                   "timed iterations; each row's times are nccl-tests' average time per operation, out of place "
                   f"and in place; modes: g{n}: one thread driving the GPUs (-g {n}); t{n}: a thread per GPU "
                   f"(-t {n} -g 1); t{n}G: the same, 20 iterations replayed from a CUDA graph (-G 20)",
           "gpus": n, "nccl_tests": results,
           "provenance": {"script": "scripts/gpu/nccl_tests_reference.py",
                          "arguments": " ".join(sys.argv[1:]) + "; X_perf " + " ".join(COMMON)
                                       + " with each mode's flags; NCCL_NVLS_ENABLE=0",
                          "machine": f"{n} x {gpu}", "date": datetime.date.today().isoformat()}}
    if a.rooflens:
        with open(a.rooflens) as f:
            profile = json.load(f)
        doc["rooflens_same_session"] = next(s for s in profile["collectives"] if s["gpus"] == n)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
