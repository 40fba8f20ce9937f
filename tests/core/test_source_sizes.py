"""Source files stay short enough to read: no Python or C++ file in src/ or csrc/ over 400 lines."""
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
