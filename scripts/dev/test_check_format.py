#!/usr/bin/env python3
"""check_format.py on made-up trees with the repository's .clang-format: a file that clang-format
would change fails with its name, a formatted one passes (so sources_are_formatted means
something).

    python3 scripts/dev/test_check_format.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_format.py")
STYLE = os.path.join(HERE, "..", "..", ".clang-format")


class CheckFormat(unittest.TestCase):
    def run_on(self, text):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root, True)
        shutil.copy(STYLE, os.path.join(root, ".clang-format"))
        os.makedirs(os.path.join(root, "cli"))
        with open(os.path.join(root, "cli", "a.cpp"), "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)

    def test_formatted_file_passes(self):
        r = self.run_on("int f(int x) {\n  return x + 1;\n}\n")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("format: 0 of 1 files differ", r.stdout)

    def test_unformatted_file_fails_with_its_name(self):
        r = self.run_on("int f(int x){return x+1;}\n")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("cli/a.cpp: not clang-formatted", r.stdout)


if __name__ == "__main__":
    unittest.main()
