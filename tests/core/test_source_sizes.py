"""Source files stay short enough to read: no Python or C++ file in src/ or csrc/ over 400 lines,
and no Python file with more than two blank lines in a row (PEP 8)."""
import os

from test_docs import ROOT

LIMIT = 400


def test_no_source_file_is_over_the_limit():
    long = []
    for top in ("src", "csrc"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".py", ".cpp", ".h", ".c")):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        lines = sum(1 for _ in f)
                    if lines > LIMIT:
                        long.append(f"{os.path.relpath(path, ROOT)} ({lines})")
    assert long == []


def _python_files():
    for top in ("src", "tests", "bench", "dev", "examples"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            yield from (os.path.join(folder, n) for n in files if n.endswith(".py"))


def test_no_python_file_has_more_than_two_blank_lines_in_a_row():
    gaps = []
    for path in _python_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            blank = 0
            for number, line in enumerate(f, 1):
                blank = blank + 1 if not line.strip() else 0
                if blank == 3:
                    gaps.append(f"{os.path.relpath(path, ROOT)}:{number}")
    assert gaps == []
