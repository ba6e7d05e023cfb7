#!/usr/bin/env python3
"""The layout's rules, read from the includes: folders of analyzer/ and profiler/ depend on each
other one way only (no cycle between folders), no .cpp/.hpp pair is in a cycle with another, no
C++ source (tests and benchmarks too) passes the size limit, and no function passes ~80 lines
unless a comment starting "Kept whole:" just above it says why. Prints each violation; exit 1 if
any. Run by ctest (cpu).

Usage: check_layout.py [REPO]   (default: the checkout this script is in)"""
import os
import re
import sys

ROOTS = ("analyzer", "profiler", "replay", "kernels", "reports", "cli")  # the include rules
SIZE_ROOTS = ROOTS + ("tests", "bench", "python", "fuzz")  # the size rules
MAX_LINES = 650  # a file past ~600 lines is asking to be split (design.md §5)
MAX_FUNCTION_LINES = 80
KEPT_WHOLE = "Kept whole:"  # the comment that gives a long function's reason
# Files over the limit today, each with the reason it stays whole for now; the list only shrinks.
OVERSIZE = {}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(repo, roots=ROOTS):
    for root in roots:
        for d, _, files in os.walk(os.path.join(repo, root)):
            for f in files:
                if f.endswith((".cpp", ".hpp", ".cu", ".cuh")):
                    yield os.path.relpath(os.path.join(d, f), repo)


def strip_literals(line):
    """The line without its // comment and the contents of string and character literals."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def long_functions(text, limit=MAX_FUNCTION_LINES):
    """(first line, lines, signature) of each function body at namespace scope longer than `limit`
    lines without a "Kept whole:" comment in the eight lines above its brace. A body is a brace opened at
    namespace depth on a line whose last few lines hold a ')' (a signature, TEST_CASE); namespaces,
    classes, structs, enums and initializer lists are not bodies."""
    lines = text.split("\n")
    found, depth, namespace_depths, start = [], 0, {0}, None
    in_block_comment = False
    for i, raw in enumerate(lines):
        line = raw
        if in_block_comment:
            if "*/" not in line:
                continue
            line, in_block_comment = line.split("*/", 1)[1], False
        if "/*" in strip_literals(line) and "*/" not in line.split("/*", 1)[1]:
            line, in_block_comment = line.split("/*", 1)[0], True
        code = strip_literals(line)
        if code.lstrip().startswith("#"):
            continue
        for ch in code:
            if ch == "{":
                if start is None and depth in namespace_depths:
                    context = " ".join(strip_literals(l) for l in lines[max(0, i - 3):i + 1])
                    if re.search(r"\bnamespace\b|\bextern\s+\"", raw):
                        namespace_depths.add(depth + 1)
                    elif re.match(r"\s*(template\s*<.*>\s*)?(struct|class|union|enum)\b", code) or "=" in code.split("{")[0] and ")" not in code.split("{")[0]:
                        pass
                    elif ")" in context:
                        start = (i, depth)
                depth += 1
            elif ch == "}":
                depth -= 1
                if start is not None and depth == start[1]:
                    n = i - start[0] + 1
                    above = "\n".join(lines[max(0, start[0] - 8):start[0]])
                    if n > limit and KEPT_WHOLE not in above:
                        found.append((start[0] + 1, n, lines[start[0]].strip()[:60]))
                    start = None
    return found


def folder(path):
    """analyzer/hw/roofline.hpp -> analyzer/hw; reports/html_report.cpp -> reports."""
    parts = path.split("/")
    if parts[0] in ("analyzer", "profiler") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def unit(path):
    return os.path.splitext(path)[0]


def cycles(edges):
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    nodes = set(edges) | {b for bs in edges.values() for b in bs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    repo = os.path.abspath(repo)
    folder_edges, unit_edges, problems = {}, {}, []
    why = {}
    for src in sources(repo, SIZE_ROOTS):
        text = open(os.path.join(repo, src), encoding="utf-8", errors="replace").read()
        lines = text.count("\n")
        if lines > MAX_LINES and src not in OVERSIZE:
            problems.append(f"{src}: {lines} lines (limit {MAX_LINES}); split it")
        for line, n, signature in long_functions(text):
            problems.append(f"{src}:{line}: a function of {n} lines (limit {MAX_FUNCTION_LINES}): "
                            f"split it, or say why above it in a '{KEPT_WHOLE}' comment ({signature})")
    for src in sources(repo):
        text = open(os.path.join(repo, src), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            if not os.path.exists(os.path.join(repo, inc)):
                continue  # generated headers, system headers spelled with quotes
            a, b = folder(src), folder(inc)
            if a != b:
                folder_edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), src + " -> " + inc)
            ua, ub = unit(src), unit(inc)
            # A header without a .cpp (lowering_builder.hpp, training/step.hpp) is a private part
            # of the files that include it: it cannot close a cycle of compiled units.
            if ua != ub and os.path.exists(os.path.join(repo, ub + ".cpp")):
                unit_edges.setdefault(ua, set()).add(ub)
    for comp in cycles(folder_edges):
        detail = "; ".join(why[(a, b)] for a in comp for b in comp if (a, b) in why)
        problems.append("folders in a cycle: " + " <-> ".join(comp) + " (" + detail + ")")
    for comp in cycles(unit_edges):
        problems.append("files in an include cycle (.cpp/.hpp pairs): " + " <-> ".join(comp))
    for p in problems:
        print(p)
    print(f"layout: {len(problems)} problems; {len(folder_edges)} folders with dependencies")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
