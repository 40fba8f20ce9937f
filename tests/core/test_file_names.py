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


def test_output_names_read_back_through_paths():
    name = paths.parse_output_name("run/step.rank3.part12.hatchet")
    assert (name.stem, name.base, name.rank, name.part, name.extension) == \
        ("run/step.rank3", "run/step", 3, 12, ".hatchet")
    whole = paths.parse_output_name("x.rank1.rank2.chrome_trace")  # the last rank is the file's
    assert (whole.base, whole.rank, whole.part) == ("x.rank1", 2, None)
    assert paths.parse_output_name("a.part2.part3.pftrace").stem == "a.part2"
    assert paths.parse_output_name("d.rank1/x.hatchet").rank is None  # a folder's name is not a rank
    assert paths.parse_output_name("x.rank1.meta.json") is None
    assert paths.output_stem("run.rank1.part3.hatchet") == "run.rank1"
    assert paths.output_stem("notes.txt") == "notes.txt"


def test_every_name_a_session_writes_parses_back():
    written = paths.output_paths(paths.ranked_name("run/x", 5), "trace")
    for path, part in ((written.output, None), (written.part(7), 7)):
        name = paths.parse_output_name(path)
        assert (name.stem, name.base, name.rank, name.part) == ("run/x.rank5", "run/x", 5, part)
    assert paths.parse_output_name(paths.output_paths("solo", "tree").part(0)).rank is None
