"""The package's layering, read from the source (tests/support/import_graph.py; nothing is
imported): one test function per rule."""
import os

from support.import_graph import PACKAGE, import_graph

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")

# The reading side: the viewer (flagtree-profiler-viewer) and the analysis API built on it.
READING = (f"{PACKAGE}.viewer", f"{PACKAGE}.analysis")
# The package root is the public API of both sides: its `read` reaches the analysis API, deferred
# until first use, so that profiling never loads the viewer.
ROOT_READS = {PACKAGE: {f"{PACKAGE}.analysis"}}


def _inside(module, packages):
    return any(module == p or module.startswith(p + ".") for p in packages)


def recording_imports_of_the_viewer(graph):
    """Sorted (module, target) pairs where a recording module imports the reading side."""
    found = []
    for module, targets in graph.items():
        if _inside(module, READING):
            continue
        allowed = ROOT_READS.get(module, set())
        found += [(module, t) for t in targets if _inside(t, READING) and t not in allowed]
    return sorted(found)


def test_the_viewer_rule_sees_a_recording_module_that_imports_the_viewer():
    graph = {f"{PACKAGE}.session": {f"{PACKAGE}.viewer.render"},
             f"{PACKAGE}.viewer.cli": {f"{PACKAGE}.common.safe_text"},
             f"{PACKAGE}.cli.command": {f"{PACKAGE}.analysis.profile"},
             PACKAGE: {f"{PACKAGE}.analysis"}}
    assert recording_imports_of_the_viewer(graph) == [
        (f"{PACKAGE}.cli.command", f"{PACKAGE}.analysis.profile"),
        (f"{PACKAGE}.session", f"{PACKAGE}.viewer.render")]


def test_no_recording_module_imports_the_viewer():
    graph, _ = import_graph(SRC)
    assert f"{PACKAGE}.session" in graph and f"{PACKAGE}.viewer.cli" in graph
    assert recording_imports_of_the_viewer(graph) == []
