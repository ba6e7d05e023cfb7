#!/usr/bin/env python3
"""The eager inference host costs of a device profile, from scripts/gpu/eager_inference_wall.py's
measurements (issue 27, `rooflens analyze --runtime eager`), and the check of its validation cases.

The calibration cases are tiny models whose GPU work is negligible: their wall time per step is
the host's. rooflens counts the kernels each one launches (`analyze --runtime eager` on the
case's own config); per phase a least-squares line through (launches, wall time) gives the host's
cost per forward call (intercept) and per kernel (slope). generate()'s loop per new token is what
its wall time holds beyond the prefill and the decode steps. Those keys go into the profile's
"eager_host" (the other keys unchanged); then every validation case (the shipped configs) is
predicted with the updated profile and set beside its measured wall time.

  fit_inference_host.py MEASURED.json PROFILE.json ROOFLENS    (writes PROFILE.json in place)
  fit_inference_host.py --check MEASURED.json PROFILE.json ROOFLENS   (no write: the table only)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def analyze(rooflens, case, profile, work):
    """rooflens's runtime object for a measured case, run on the case's own config."""
    folder = os.path.join(work, f"{case['case']}-{case.get('run', '')}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(case["config"], f)
    phase = case["phase"]
    args = [rooflens, "analyze", os.path.join(folder, "config.json"), "--runtime", "eager",
            "--device-profile", profile, "--batch", str(case["batch"]), "--json", os.path.join(folder, "r.json")]
    if phase == "prefill":
        args += ["--phase", "prefill", "--seq", str(case["tokens"])]
    elif phase == "decode":
        args += ["--phase", "decode", "--context", str(case["tokens"])]
    else:
        args += ["--phase", "generate", "--prompt", str(case["tokens"]), "--gen", str(case["new_tokens"])]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{case['case']}: rooflens failed: {p.stderr.strip()}")
    with open(os.path.join(folder, "r.json")) as f:
        return json.load(f)["runtime"]


def fit(points):
    line = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return max(line.intercept, 0.0), line.slope


def calibrate(cases, profile_path, rooflens, work):
    tiny = [c for c in cases if c["case"].startswith("tiny-")]
    keys = {}
    for phase in ("prefill", "decode"):
        points = [(analyze(rooflens, c, profile_path, work)["kernels"], c["wall_s"]) for c in tiny if c["phase"] == phase]
        fixed, per_kernel = fit(points)
        keys[f"inference_{phase}_fixed_s"], keys[f"inference_{phase}_kernel_s"] = fixed, per_kernel
        print(f"{phase}: {fixed * 1e6:.0f} us per forward + {per_kernel * 1e6:.1f} us per kernel "
              f"({len(points)} cases: {', '.join(f'{k} kernels {w * 1e3:.2f} ms' for k, w in points)})")
    by_name = {(c.get("run"), c["case"]): c for c in cases}  # a file may pool several runs
    extra = []
    for c in tiny:
        if c["phase"] != "generate":
            continue
        base = c["case"].replace("-generate", "")
        decode = by_name.get((c.get("run"), base + "-decode"))
        prefill = by_name.get((c.get("run"), base + "-prefill"))
        if decode and prefill:
            n = c["new_tokens"]
            extra.append((c["wall_s"] - prefill["wall_s"] - (n - 1) * decode["wall_s"]) / n)
    keys["inference_generate_token_s"] = max(statistics.median(extra), 0.0) if extra else 0.0
    print(f"generate: {keys['inference_generate_token_s'] * 1e6:.0f} us per new token ({len(extra)} cases)")
    c0 = tiny[0]
    gpus = " and ".join(sorted({c["gpu"] for c in tiny}))
    keys["inference_source"] = (f"scripts/gpu/eager_inference_wall.py on {gpus}: {len(tiny)} tiny-model cases, "
                                f"torch {c0['torch']}, transformers {c0['transformers']}, {c0['cpu']}; "
                                f"fitted by scripts/dev/fit_inference_host.py")
    with open(profile_path) as f:
        profile = json.load(f)
    profile.setdefault("eager_host", {}).update(keys)
    with open(profile_path, "w") as f:
        json.dump(profile, f, separators=(",", ":"))
        f.write("\n")


def check(cases, profile_path, rooflens, work):
    print(f"{'case':<31}{'measured':>11}{'predicted':>11}{'error':>8}{'kernels':>9}{'rooflens':>9}{'GPU busy':>10}{'pred.':>9}")
    errors = []
    for c in cases:
        if c["case"].startswith("tiny-") and c["phase"] != "generate":
            continue
        r = analyze(rooflens, c, profile_path, work)
        predicted = r["generate_wall_s"] if c["phase"] == "generate" else r["step_wall_s"]
        err = predicted / c["wall_s"] - 1
        if not c["case"].startswith("tiny-"):
            errors.append(abs(err))
        print(f"{c['case'] + ' ' + c.get('run', ''):<31}{c['wall_s'] * 1e3:>9.2f}ms{predicted * 1e3:>9.2f}ms{100 * err:>+7.1f}%"
              f"{c['kernels']:>9}{r['kernels']:>9}{c['gpu_busy_s'] * 1e3:>8.2f}ms{r['gpu_busy_s'] * 1e3:>7.2f}ms")
    if errors:
        print(f"validation: {sum(e <= 0.2 for e in errors)} of {len(errors)} within 20%, median |error| "
              f"{100 * statistics.median(errors):.1f}%")


def main():
    args = sys.argv[1:]
    only_check = args[:1] == ["--check"]
    if only_check:
        args = args[1:]
    if len(args) != 3:
        sys.exit(__doc__)
    measured, profile, rooflens = args
    with open(measured) as f:
        cases = json.load(f)["cases"]
    with tempfile.TemporaryDirectory() as work:
        if not only_check:
            calibrate(cases, profile, rooflens, work)
        check(cases, profile, rooflens, work)


if __name__ == "__main__":
    main()
