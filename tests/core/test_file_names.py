"""Every file name a session or command writes is built in paths.py: no other module of the
package spells one of its suffixes as a string (docstrings aside)."""
import ast
import os

from flagtree.profiler import paths
from support.import_graph import PACKAGE, package_modules

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")
SUFFIXES = set(paths.SIDE_FILES.values()) | {".meta.json", paths.IXKN_REPORT}


def _strings(tree):
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings]


def test_side_file_names_come_from_paths():
    assert paths.side_file("run/x", "vendor") == "run/x.vendor.json"
    assert paths.metadata_candidates("x", "trace") == ("x.chrome_trace.meta.json", "x.meta.json")
    assert paths.part_stem("a.b.part12.hatchet") == "a.b.part"
    spelt = []
    for module, path in sorted(package_modules(SRC).items()):
        if module in (f"{PACKAGE}.paths", f"{PACKAGE}._env") or module.startswith(f"{PACKAGE}.viewer"):
            continue  # _env's variable help text names files in prose
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        spelt += [f"{module}:{n.lineno}: {n.value!r}" for n in _strings(tree)
                  if any(n.value == s or n.value.endswith(s) for s in SUFFIXES)]
    assert spelt == []
