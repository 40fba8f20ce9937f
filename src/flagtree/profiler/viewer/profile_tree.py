"""Loading, merging, filtering and summing tree profiles.

A profile file is the JSON list ``[root, device_info]`` where every node is
``{"frame": {"name": ...}, "metrics": {...}, "children": [...]}`` with
exclusive metrics. Everything here is iterative: profiles can be thousands of
levels deep and must not hit Python's recursion limit.
"""

import json
import sys
import threading

from .errors import ViewerError

try:  # optional speed-up; the stdlib parser is the reference behaviour
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

# Identifier metrics say where a kernel ran; adding them up is meaningless.
IDENTIFIERS = frozenset(("device_id", "device_type"))

_NUMBER_TYPES = (int, float)


class Node:
    """One call-path node; ``children`` maps name -> Node (paths are unique)."""

    __slots__ = ("name", "frame", "metrics", "children", "parent", "incl", "values")

    def __init__(self, name, frame, metrics, parent):
        self.name = name
        self.frame = frame
        self.metrics = metrics
        self.children = {}
        self.parent = parent
        self.incl = None
        self.values = None

    def is_kernel_like(self):
        """True for nodes that ran on a device (they carry device identifiers)."""
        if "device_type" in self.metrics or "device_id" in self.metrics:
            return True
        return self.frame.get("kind") == "kernel" or self.frame.get("type") == "kernel"

    def path_names(self):
        """Names from just below the root down to this node."""
        names = []
        node = self
        while node.parent is not None:
            names.append(node.name)
            node = node.parent
        names.reverse()
        return names


class Profile:
    """A loaded (possibly merged) profile: its tree, devices and source files."""

    def __init__(self, root, device_info, sources, names):
        self.root = root
        self.device_info = device_info
        self.sources = sources
        self.names = names  # every metric name stored in the tree

    @property
    def label(self):
        return ", ".join(self.sources)


def preorder(root):
    """All nodes, parents before children, without recursion."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children.values())
    return out


def _parse_deep(data, path):
    # The C JSON decoder recurses once per nesting level; deep profiles need a
    # higher recursion limit and a bigger C stack than the main thread has.
    box = {}

    def work():
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 1_000_000))
        try:
            box["value"] = json.loads(data)
        except (RecursionError, ValueError) as exc:
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size()
    threading.stack_size(1 << 30)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_size)
    if "error" in box:
        raise _json_error(path, box["error"])
    return box["value"]


def _json_error(path, exc):
    if isinstance(exc, json.JSONDecodeError):
        where = f"line {exc.lineno} column {exc.colno}"
        return ViewerError(f"'{path}' is not valid JSON ({exc.msg} at {where})")
    if isinstance(exc, RecursionError):
        return ViewerError(f"'{path}' is nested too deeply to parse")
    return ViewerError(f"'{path}' is not valid JSON ({exc})")


def parse_json(data, path):
    """Decode profile bytes, turning every decoder failure into ViewerError."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # re-parse with the stdlib for its messages and depth handling
    try:
        return json.loads(data)
    except RecursionError:
        return _parse_deep(data, path)
    except ValueError as exc:
        raise _json_error(path, exc) from None


def read_file(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ViewerError(f"cannot read profile '{path}': {reason}") from None


def _not_profile(path, why):
    return ViewerError(f"'{path}' is not a tree profile: {why}")


def _make_node(raw, parent, path):
    if type(raw) is not dict:
        raise _not_profile(path, "a node is not a JSON object")
    frame = raw.get("frame")
    if type(frame) is not dict or type(frame.get("name")) is not str:
        raise _not_profile(path, "a node has no frame name")
    metrics = raw.get("metrics", {})
    if type(metrics) is not dict:
        raise _not_profile(path, f"node '{frame['name']}' has non-object metrics")
    for key, value in metrics.items():
        if type(value) not in _NUMBER_TYPES:
            if key in IDENTIFIERS and type(value) is str:
                metrics = _numeric_identifiers(metrics, path, frame["name"])
                break
            raise _not_profile(path, f"metric '{key}' of node '{frame['name']}' is not a number")
    return Node(frame["name"], frame, metrics, parent)


# Proton (Triton 3.6) writes device identifiers as strings: device_type "CUDA", device_id "0".
_DEVICE_TYPE_NUMBERS = {"HIP": 0, "CUDA": 1, "CPU": 2}


def _numeric_identifiers(metrics, path, name):
    out = dict(metrics)
    for key in IDENTIFIERS:
        value = out.get(key)
        if type(value) is not str:
            continue
        if key == "device_type" and value.upper() in _DEVICE_TYPE_NUMBERS:
            out[key] = _DEVICE_TYPE_NUMBERS[value.upper()]
        elif key == "device_id" and value.isdigit():
            out[key] = int(value)
        else:
            raise _not_profile(path, f"metric '{key}' of node '{name}' is not a device identifier: {value!r}")
    for key, value in out.items():
        if type(value) not in _NUMBER_TYPES:
            raise _not_profile(path, f"metric '{key}' of node '{name}' is not a number")
    return out


def _add_metrics(dst, src):
    for key, value in src.items():
        if key in IDENTIFIERS:
            dst.setdefault(key, value)
        else:
            dst[key] = dst.get(key, 0) + value


def _children_of(raw, path):
    kids = raw.get("children", [])
    if type(kids) is not list:
        raise _not_profile(path, "a node's children is not a list")
    return kids


def build_tree(raw_root, path, names=None):
    """Turn the decoded root object into Nodes; same-named siblings merge.

    Metric names seen are added to ``names`` (saves a second walk).
    """
    names = set() if names is None else names
    root = _make_node(raw_root, None, path)
    names.update(root.metrics)
    stack = [(root, raw_root)]
    while stack:
        node, raw = stack.pop()
        children = node.children
        for raw_child in _children_of(raw, path):
            child = _make_node(raw_child, node, path)
            names.update(child.metrics)
            existing = children.get(child.name)
            if existing is None:
                children[child.name] = child
            else:
                _add_metrics(existing.metrics, child.metrics)
                child = existing
            stack.append((child, raw_child))
    return root


def load_profile(path):
    """Read one ``.hatchet`` file into a Profile; ViewerError on bad input."""
    data = parse_json(read_file(path), path)
    if type(data) is not list or not data or len(data) > 2:
        raise _not_profile(path, "expected a JSON list [root, device_info]")
    device_info = data[1] if len(data) == 2 else {}
    if type(device_info) is not dict:
        raise _not_profile(path, "device_info (second element) is not an object")
    names = set()
    return Profile(build_tree(data[0], path, names), device_info, [path], names)


def _add_missing_metrics(dst, src):
    for key, value in src.items():
        dst.setdefault(key, value)


def merge_into(dst, src, same_launches=False):
    """Add tree ``src`` into tree ``dst`` by node path; ``src`` is consumed. With
    ``same_launches`` (concurrent sessions over the same region, e.g. backend="nvidia" and
    backend="instrumentation") a metric both trees have was measured once: dst's value is kept,
    and src only adds the metrics dst lacks (cycles next to time)."""
    add = _add_missing_metrics if same_launches else _add_metrics
    add(dst.metrics, src.metrics)
    stack = [(dst, src)]
    while stack:
        dnode, snode = stack.pop()
        for name, schild in snode.children.items():
            dchild = dnode.children.get(name)
            if dchild is None:
                schild.parent = dnode
                dnode.children[name] = schild
            else:
                add(dchild.metrics, schild.metrics)
                stack.append((dchild, schild))


def _merge_devices(dst, src):
    for kind, devices in src.items():
        if isinstance(devices, dict) and isinstance(dst.get(kind), dict):
            merged = dict(devices)
            merged.update(dst[kind])
            dst[kind] = merged
        else:
            dst.setdefault(kind, devices)


def _session_span(path):
    """(pid, start ns, stop ns) from the .meta.json written next to a .hatchet, or None."""
    import json

    base = path[:-len(".hatchet")] if path.endswith(".hatchet") else path
    try:
        with open(base + ".meta.json") as handle:
            meta = json.load(handle)
        return meta["pid"], int(meta["start_time_ns"]), int(meta["stop_time_ns"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def concurrent_sessions(path_a, path_b):
    """True when two profiles come from sessions of one process whose time spans overlap: they
    saw the same launches (the spec's "Merging profiles": one region, several backends)."""
    a, b = _session_span(path_a), _session_span(path_b)
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] < b[2] and b[1] < a[2]


def load_profiles(paths):
    """Load several files and merge them into one Profile by node path."""
    profile = load_profile(paths[0])
    for path in paths[1:]:
        other = load_profile(path)
        merge_into(profile.root, other.root, same_launches=concurrent_sessions(paths[0], path))
        _merge_devices(profile.device_info, other.device_info)
        profile.names |= other.names
        profile.sources.append(path)
    return profile


def release(root):
    """Break parent/child links so the tree is freed by reference counting.

    Without this a large tree waits for the cyclic GC, whose first pass over
    hundreds of thousands of young objects costs more than the freeing.
    """
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children.values())
        node.children = {}
        node.parent = None


def exclude(root, regex):
    """Drop every non-root node whose name matches, with its subtree."""
    stack = [root]
    while stack:
        node = stack.pop()
        doomed = [name for name in node.children if regex.search(name)]
        for name in doomed:
            del node.children[name]
        stack.extend(node.children.values())


def _include_marks(root, regex):
    keep, whole = set(), set()
    stack = list(root.children.values())
    while stack:
        node = stack.pop()
        if regex.search(node.name):
            whole.add(node)
            parent = node.parent
            while parent is not None and parent not in keep:
                keep.add(parent)
                parent = parent.parent
        else:
            stack.extend(node.children.values())
    return keep, whole


def include(root, regex):
    """Keep only paths through matching nodes: ancestors, node, descendants."""
    keep, whole = _include_marks(root, regex)
    stack = [root]
    while stack:
        node = stack.pop()
        for name in list(node.children):
            child = node.children[name]
            if child in whole:
                continue
            if child in keep:
                stack.append(child)
            else:
                del node.children[name]


def compute_inclusive(root, keys=None):
    """Set ``node.incl`` to subtree sums of the metrics in ``keys``.

    ``keys=None`` means every non-identifier metric; passing only the metrics
    being shown keeps large profiles fast.
    """
    order = preorder(root)
    for node in order:
        metrics = node.metrics
        if keys is not None:
            node.incl = {k: metrics[k] for k in keys if k in metrics}
        elif "device_id" in metrics or "device_type" in metrics:
            node.incl = {k: v for k, v in metrics.items() if k not in IDENTIFIERS}
        else:
            node.incl = dict(metrics)
    for node in reversed(order):
        parent = node.parent
        if parent is None:
            continue
        pincl = parent.incl
        for key, value in node.incl.items():
            pincl[key] = pincl.get(key, 0) + value
