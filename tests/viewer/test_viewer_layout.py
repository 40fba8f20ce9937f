"""The viewer package's shape: no module imports another that imports it back (at any depth,
module level or inside a function), and every exporter has the one signature."""

import ast
import inspect
import pathlib

from flagtree.profiler.viewer import exports

VIEWER = pathlib.Path(exports.__file__).parent


def viewer_imports():
    """{module: viewer modules it imports}, from the source of every viewer module."""
    modules = {path.stem for path in VIEWER.glob("*.py")}
    graph = {}
    for name in modules:
        found = set()
        for node in ast.walk(ast.parse((VIEWER / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        graph[name] = found & modules
    return graph


def cycles(graph):
    """Every back edge's circle, by depth-first search without recursion."""
    out, state = [], {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path, state[start] = [start], "open"
        while stack:
            node, todo = stack[-1]
            nxt = next(todo, None)
            if nxt is None:
                state[node] = "done"
                stack.pop()
                path.pop()
            elif state.get(nxt) == "open":
                out.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))
    return out


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_viewer_module_imports_itself_back():
    graph = viewer_imports()
    assert {"cli", "exports", "flame", "html_report", "ranks", "options", "pipeline"} <= set(graph)
    assert cycles(graph) == []


def test_every_exporter_takes_source_options_and_out_path():
    assert [dest for dest, *_ in exports.EXPORTERS] == ["speedscope", "collapsed", "html"]
    for _, _, module, _ in exports.EXPORTERS:
        export = exports.exporter(module)
        assert list(inspect.signature(export).parameters) == ["source", "options", "out_path"]
