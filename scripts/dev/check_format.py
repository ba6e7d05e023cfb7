#!/usr/bin/env python3
"""Every C++ and CUDA source follows .clang-format: clang-format --dry-run -Werror over the source
folders, the files that differ printed one a line; exit 1 if any (or clang-format is missing).
Run by ctest (cpu). Fix with: clang-format -i FILE (scripts/setup.sh installs clang-format).

Usage: check_format.py [REPO]   (default: the checkout this script is in)"""
import os
import shutil
import subprocess
import sys

ROOTS = ("analyzer", "profiler", "replay", "kernels", "reports", "cli", "tests", "bench", "python",
         "fuzz")
EXTENSIONS = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".cc")


def sources(repo):
    for root in ROOTS:
        for d, dirs, files in os.walk(os.path.join(repo, root)):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(d, f)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    repo = os.path.abspath(repo)
    tool = shutil.which("clang-format-14") or shutil.which("clang-format")
    if not tool:
        print("format: clang-format not found (scripts/setup.sh installs Debian's clang-format)")
        return 1
    files = list(sources(repo))
    bad = []
    for f in files:
        r = subprocess.run([tool, "--dry-run", "-Werror", f], cwd=repo, capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(os.path.relpath(f, repo))
    for f in bad:
        print(f"{f}: not clang-formatted (clang-format -i {f})")
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"format: {len(bad)} of {len(files)} files differ ({version})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
