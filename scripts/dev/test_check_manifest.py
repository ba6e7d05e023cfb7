#!/usr/bin/env python3
"""check_manifest.py on small made-up trees: each broken tree must fail with its own line, the
complete one must pass (so data_manifest_is_complete passing means something).

    python3 scripts/dev/test_check_manifest.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_manifest.py")
PROVENANCE = {"script": "scripts/make.py", "arguments": "OUT.json", "machine": "this machine", "date": "2026-11-25"}
HEADER = "| path | script | arguments | machine | date | record |\n|---|---|---|---|---|---|\n"
ROW_REF = "| `tests/data/reference/a.json` | scripts/make.py | OUT.json | this machine | 2026-11-25 | provenance |\n"
ROW_TRACE = "| `tests/data/traces/*.json.gz` | scripts/make.py | none | this machine | 2026-11-25 | manifest (traces) |\n"
GENERATED = ["tests/data/configs/family_reference.json", "tests/data/configs/transformers_reference.json",
             "tests/data/onnx/export_report.json"]


class CheckManifest(unittest.TestCase):
    def tree(self, reference=None, rows=ROW_REF + ROW_TRACE, extra_files=()):
        """A repository with one reference JSON, one trace, the fixed generated JSON files."""
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root, True)
        files = {"scripts/make.py": "", "tests/data/traces/t.json.gz": "x"}
        files["tests/data/reference/a.json"] = json.dumps(reference if reference is not None else
                                                          {"provenance": PROVENANCE, "rows": []}, indent=1)
        generated_rows = ""
        for g in GENERATED:
            files[g] = json.dumps({"provenance": PROVENANCE})
            generated_rows += f"| `{g}` | scripts/make.py | none | this machine | 2026-11-25 | provenance |\n"
        files["tests/data/MANIFEST.md"] = "# intro\n\n" + HEADER + rows + generated_rows
        for f in extra_files:
            files[f] = "x"
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        return root

    def check(self, root):
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()

    def test_complete_tree_passes(self):
        rc, out = self.check(self.tree())
        self.assertEqual(rc, 0, out)
        self.assertEqual(out, ["manifest: 5 files, 0 problems"])

    def test_provenance_missing_a_key(self):
        rc, out = self.check(self.tree(reference={"provenance": {k: v for k, v in PROVENANCE.items() if k != "date"}}))
        self.assertEqual(rc, 1)
        self.assertIn('tests/data/reference/a.json: provenance lacks "date"', out)
        self.assertEqual(out[-1], "manifest: 5 files, 1 problems")

    def test_no_provenance(self):
        rc, out = self.check(self.tree(reference={"rows": []}))
        self.assertEqual(rc, 1)
        self.assertIn('tests/data/reference/a.json: no "provenance" object with script, arguments, machine, date', out)

    def test_older_script_key_with_its_row_passes(self):
        rc, out = self.check(self.tree(reference={"script": "scripts/make.py", "cases": []}))
        self.assertEqual(rc, 0, out)

    def test_row_names_a_missing_file(self):
        rows = ROW_REF + ROW_TRACE + "| `tests/data/reference/gone.json` | scripts/make.py | x | y | z | provenance |\n"
        rc, out = self.check(self.tree(rows=rows))
        self.assertEqual(rc, 1)
        self.assertTrue(any(line.endswith("tests/data/reference/gone.json does not exist") for line in out), out)

    def test_row_names_a_missing_script(self):
        rows = ROW_REF + ROW_TRACE.replace("scripts/make.py", "scripts/gone.py")
        rc, out = self.check(self.tree(rows=rows))
        self.assertEqual(rc, 1)
        self.assertTrue(any(line.endswith("scripts/gone.py does not exist") for line in out), out)

    def test_generated_json_without_row(self):
        rc, out = self.check(self.tree(rows=ROW_TRACE))
        self.assertEqual(rc, 1)
        self.assertIn("tests/data/reference/a.json: missing from tests/data/MANIFEST.md", out)

    def test_file_in_a_covered_folder_without_row(self):
        rc, out = self.check(self.tree(extra_files=["tests/data/onnx/new.onnx"]))
        self.assertEqual(rc, 1)
        self.assertIn("tests/data/onnx/new.onnx: missing from tests/data/MANIFEST.md", out)

    def test_empty_column(self):
        rows = ROW_REF + ROW_TRACE.replace("| this machine |", "|  |")
        rc, out = self.check(self.tree(rows=rows))
        self.assertEqual(rc, 1)
        self.assertTrue(any(line.endswith("empty machine") for line in out), out)


if __name__ == "__main__":
    unittest.main()
