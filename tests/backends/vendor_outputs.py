"""Reading the outputs of a backend test's session (tree, metadata) and computing a viewer metric
on them, shared by the mthreads and cann stand-in tests."""
import json

from flagtree.profiler.viewer.metrics import parse_metrics
from flagtree.profiler.viewer.profile_tree import compute_inclusive, load_profile


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
    """The values of metric `spec` (e.g. "util") at node `name`, computed by the viewer's library."""
    profile = load_profile(path)
    metrics = parse_metrics(spec, profile.names, profile.device_info, path)
    for hook in {m.prepare for m in metrics if m.prepare}:
        hook(profile.root, profile.device_info)
    compute_inclusive(profile.root)
    stack = [profile.root]
    while stack:
        current = stack.pop()
        if current.name == name:
            return [m.compute(current.incl, profile.root.incl) for m in metrics]
        stack.extend(current.children.values())
    raise AssertionError(f"no node {name!r} in {path}")
