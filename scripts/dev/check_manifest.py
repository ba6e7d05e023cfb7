#!/usr/bin/env python3
"""Holds tests/data/MANIFEST.md to the data files that scripts produced (issue 24, item 6).

Fails (exit 1, one line per problem) when
  - a generated JSON data file (every .json under tests/data/reference and data/profiles, and
    GENERATED_JSON) lacks a "provenance" object with non-empty script, arguments, machine and date
    (a file with an older top-level "script" key passes with its manifest row; a row whose record
    column starts with "manifest" keeps the provenance in the manifest only, for files whose
    reader would object to an extra key),
  - a manifest row names a file that does not exist, leaves a column empty or names a script
    under scripts/ that is not there,
  - a file under one of COVERED_DIRS (generated data, all of it) is missing from the manifest.
Closes with `manifest: N files, M problems`.

    python3 scripts/dev/check_manifest.py [REPO_ROOT]     (default: the checkout it lives in)
Standard library only: ctest runs it as data_manifest_is_complete.
"""

import glob
import json
import os
import re
import sys

MANIFEST = "tests/data/MANIFEST.md"
COLUMNS = ["path", "script", "arguments", "machine", "date", "record"]
PROVENANCE_KEYS = ["script", "arguments", "machine", "date"]
# Generated JSON files outside tests/data/reference and data/profiles.
GENERATED_JSON = [
    "tests/data/configs/family_reference.json",
    "tests/data/configs/transformers_reference.json",
    "tests/data/onnx/export_report.json",
]
# Folders that hold generated data only: every file in them needs a manifest row.
COVERED_DIRS = [
    "tests/data/reference",
    "tests/data/configs",
    "tests/data/onnx",
    "tests/data/traces",
    "tests/data/bad",
    "tests/data/fuzz",
    "samples",
    "data/profiles",
]


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_manifest(root, problems):
    """The table rows: (line number, {column: text}, [path patterns])."""
    path = os.path.join(root, MANIFEST)
    if not os.path.isfile(path):
        problems.append(f"{MANIFEST}: missing")
        return []
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.startswith("|"):
                continue
            c = cells(line)
            if c[0].lower() == "path" or set("".join(c)) <= set("-: "):
                continue  # header or separator
            where = f"{MANIFEST}:{number}"
            if len(c) != len(COLUMNS):
                problems.append(f"{where}: {len(c)} columns, expected {len(COLUMNS)} ({', '.join(COLUMNS)})")
                continue
            row = dict(zip(COLUMNS, c))
            for column in COLUMNS[1:]:
                if not row[column]:
                    problems.append(f"{where}: empty {column}")
            patterns = re.findall(r"`([^`]+)`", row["path"])
            if not patterns:
                problems.append(f"{where}: the path column names no `path`")
            for script in re.findall(r"\bscripts/[\w./-]*\w", row["script"]):
                if not os.path.isfile(os.path.join(root, script)):
                    problems.append(f"{where}: {script} does not exist")
            rows.append((where, row, patterns))
    return rows


def files_of(root, pattern):
    found = glob.glob(os.path.join(root, pattern), recursive=True)
    return sorted(os.path.relpath(p, root).replace(os.sep, "/") for p in found if os.path.isfile(p))


def check_provenance(rel, data, row, problems):
    prov = data.get("provenance") if isinstance(data, dict) else None
    if prov is not None:
        if not isinstance(prov, dict):
            problems.append(f"{rel}: \"provenance\" is not an object")
            return
        for key in PROVENANCE_KEYS:
            value = prov.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{rel}: provenance lacks \"{key}\"")
        return
    if isinstance(data, dict) and isinstance(data.get("script"), str):
        return  # an older "script" key, the rest in its manifest row
    if row is not None and row["record"].lower().startswith("manifest"):
        return  # kept in the manifest only; the row says why
    problems.append(f"{rel}: no \"provenance\" object with {', '.join(PROVENANCE_KEYS)}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", ".."))
    problems = []
    rows = read_manifest(root, problems)

    row_of = {}  # file -> its first manifest row
    for where, row, patterns in rows:
        for pattern in patterns:
            matched = files_of(root, pattern)
            if not matched:
                problems.append(f"{where}: {pattern} does not exist")
            for rel in matched:
                row_of.setdefault(rel, row)

    required_json = set(GENERATED_JSON)
    for folder in ("tests/data/reference", "data/profiles"):
        required_json.update(files_of(root, folder + "/**/*.json"))
    for rel in sorted(required_json):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            problems.append(f"{rel}: missing (a generated JSON file the manifest check expects)")
            continue
        if rel not in row_of:
            problems.append(f"{rel}: missing from {MANIFEST}")
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{rel}: not readable JSON ({e})")
            continue
        check_provenance(rel, data, row_of.get(rel), problems)

    for folder in COVERED_DIRS:
        for rel in files_of(root, folder + "/**/*"):
            if rel not in row_of and rel not in required_json:
                problems.append(f"{rel}: missing from {MANIFEST}")

    for p in problems:
        print(p)
    print(f"manifest: {len(row_of)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
