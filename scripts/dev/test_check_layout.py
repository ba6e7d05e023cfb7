#!/usr/bin/env python3
"""check_layout.py on small made-up trees: each broken tree must fail with its own line, the clean
one must pass (so layout_is_one_way passing means something).

    python3 scripts/dev/test_check_layout.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layout.py")


def function(name, lines, comment=""):
    body = "".join(f"  x += {i};\n" for i in range(lines - 3))
    return f"{comment}int {name}(int x) {{\n{body}  return x;\n}}\n"


class CheckLayout(unittest.TestCase):
    def run_on(self, files):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root, True)
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)

    def test_clean_tree_passes(self):
        r = self.run_on({"analyzer/core/a.cpp": function("short", 80),
                         "analyzer/ir/b.cpp": '#include "analyzer/core/a.hpp"\n',
                         "analyzer/core/a.hpp": ""})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_long_function_fails_with_its_line(self):
        r = self.run_on({"reports/r.cpp": "namespace rooflens {\n" + function("long_one", 81) + "}\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("reports/r.cpp:2: a function of 81 lines", r.stdout)

    def test_kept_whole_comment_exempts_it(self):
        r = self.run_on({"kernels/k.cu": function("kernel", 120, "// Kept whole: measured as one body.\n")})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_long_test_case_fails(self):
        body = "".join(f"  CHECK({i} == {i});\n" for i in range(90))
        r = self.run_on({"tests/t.cpp": 'TEST_CASE("a long one") {\n' + body + "}\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("tests/t.cpp:1: a function of 92 lines", r.stdout)

    def test_structs_namespaces_and_tables_are_not_functions(self):
        fields = "".join(f"  int f{i} = {i};\n" for i in range(100))
        rows = "".join(f"    {{{i}, {i}}},\n" for i in range(100))
        text = ("namespace a {\nnamespace {\nstruct Big {\n" + fields + "};\n"
                "const int table[][2] = {\n" + rows + "};\n}  // namespace\n}  // namespace a\n")
        r = self.run_on({"analyzer/core/s.cpp": text})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_braces_in_strings_and_comments_do_not_count(self):
        text = function("short", 60).replace("  return x;", '  // } {\n  const char* s = "}}{{";\n  return x;')
        r = self.run_on({"cli/c.cpp": text})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_oversized_test_file_fails(self):
        r = self.run_on({"tests/big.cpp": "// line\n" * 700})
        self.assertEqual(r.returncode, 1)
        self.assertIn("tests/big.cpp: 700 lines (limit 650)", r.stdout)

    def test_folder_cycle_fails(self):
        r = self.run_on({"analyzer/core/a.cpp": '#include "analyzer/ir/b.hpp"\n',
                         "analyzer/ir/b.hpp": '#include "analyzer/core/a.hpp"\n',
                         "analyzer/core/a.hpp": ""})
        self.assertEqual(r.returncode, 1)
        self.assertIn("folders in a cycle: analyzer/core <-> analyzer/ir", r.stdout)


if __name__ == "__main__":
    unittest.main()
