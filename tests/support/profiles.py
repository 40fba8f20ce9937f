"""Reading the profiler's outputs in tests: tree nodes by path, traces, metadata."""
import json


def load_tree(path):
    with open(path) as f:
        root, device_info = json.load(f)
    return root, device_info


def find(node, *names):
    """The node at path `names` below `node` (exact names), or None."""
    for name in names:
        node = next((c for c in node["children"] if c["frame"]["name"] == name), None)
        if node is None:
            return None
    return node


def child_names(node):
    return sorted(c["frame"]["name"] for c in node["children"])


def walk(node, path=()):
    yield path, node
    for child in node["children"]:
        yield from walk(child, path + (child["frame"]["name"],))


def metrics_by_path(path):
    """{path tuple: metrics} for every node below ROOT of the tree file at ``path``."""
    return {p: n["metrics"] for p, n in walk(load_tree(path)[0]) if p}


def kernel_counts(root):
    """{path tuple: count} for every kernel node."""
    return {p: n["metrics"]["count"] for p, n in walk(root) if n["frame"].get("kind") == "kernel"}


def load_json(path):
    with open(path) as f:
        return json.load(f)
