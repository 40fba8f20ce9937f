"""Reading the outputs of a backend test's session (tree, metadata) and computing a viewer metric
on them, shared by the roctracer, mthreads and cann stand-in tests."""
import contextlib
import io
import json

from flagtree.profiler.viewer.cli import main


def load_tree(base):
    with open(str(base) + ".hatchet") as f:
        root, devices = json.load(f)
    return root, devices


def load_meta(base):
    with open(str(base) + ".meta.json") as f:
        return json.load(f)


def find(node, *path):
    """The node reached from `node` by child names `path` (each name exactly once)."""
    for name in path:
        matches = [c for c in node["children"] if c["frame"]["name"] == name]
        assert len(matches) == 1, (name, [c["frame"]["name"] for c in node["children"]])
        node = matches[0]
    return node


def kernels(node, trail=()):
    """(path of names, node) of every kernel/copy node under `node`."""
    for child in node["children"]:
        path = trail + (child["frame"]["name"],)
        if child["frame"]["kind"] in ("kernel", "memcpy", "memset"):
            yield path, child
        yield from kernels(child, path)


def viewer_values(path, spec, name):
    """The values of metric `spec` (e.g. "util") at node `name`, as the viewer prints them (its
    command run in process: columns first, then the tree-drawn name)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["-m", spec, str(path)]) == 0
    columns = len(spec.split(","))
    for line in out.getvalue().splitlines():
        cells = line.split()
        if line.endswith(" " + name) and len(cells) > columns:
            return [None if c == "-" else float(c) for c in cells[:columns]]
    raise AssertionError(f"no node {name!r} in {path}:\n{out.getvalue()}")
