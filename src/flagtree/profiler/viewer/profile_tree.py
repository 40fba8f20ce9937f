"""Loading, merging, filtering and summing tree profiles.

A profile file is the JSON list ``[root, device_info]`` where every node is
``{"frame": {"name": ...}, "metrics": {...}, "children": [...]}`` with
exclusive metrics. Everything here is iterative: profiles can be 100,000 levels
deep and must not hit Python's recursion limit.

The loading API (used by the command line and by other views):

- ``load_profiles(paths) -> Profile``: read one or several files into one tree merged by node
  path (``name.hatchet`` that does not exist but has ``name.part<k>.hatchet`` parts reads the
  parts). ``Profile.root`` is a :class:`Node`; ``Profile.device_info``, ``Profile.names``
  (every stored metric name) and ``Profile.sources`` (the files read) come with it.
- ``load_profile(path) -> Profile``: one file, no part lookup.
- ``merge_into(dst_root, src_root)``: add one tree into another by path.
Every failure is a :class:`ViewerError` with a one-line message.
"""

import json
import os
import re
import stat

from ..run_id import mismatch
from ..paths import EXTENSIONS, parse_output_name
from .errors import ViewerError
from .fused import merge_fused, read_fused
from .nodes import IDENTIFIERS, NO_CHILDREN, NO_METRICS, Node, merge_into
from .reader import read_tree

try:  # the optional native sums (csrc/viewer/tree_walks.cpp); the same sums without
    from ..native_core import native

    NATIVE_INCLUSIVE = native.viewer.viewer_inclusive
except ImportError:
    NATIVE_INCLUSIVE = None

__all__ = ["IDENTIFIERS", "Node", "Profile", "load_profile", "load_profiles", "merge_into",
           "preorder", "release", "exclude", "include", "compute_inclusive", "part_paths"]

# Scopes the launch_metadata hooks run in (ours, Proton's): not the user's work.
METADATA_SCOPES = ("__launch_metadata", "__proton_launch_metadata")


class Profile:
    """A loaded (possibly merged) profile: its tree, devices and source files."""

    def __init__(self, root, device_info, sources, names):
        self.root = root
        self.device_info = device_info
        self.sources = sources
        self.names = names  # every metric name stored in the tree
        self.has_metadata = True  # False: no launch_metadata scope can be in the tree
        self.fused = {}  # what inductor's kernels fuse, by kernel name (fused.py)

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
        if node.children:  # most nodes are leaves
            stack.extend(node.children.values())
    return out


def load_profile(path):
    """Read one ``.hatchet`` file into a Profile; ViewerError on bad input."""
    _refuse_devices(path)
    names = set()
    try:
        with open(path, "rb") as handle:
            root, device_info, metadata = read_tree(handle, path, names)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ViewerError(f"cannot read profile '{path}': {reason}") from None
    except ValueError as exc:  # a path with a NUL character
        raise ViewerError(f"cannot read profile '{path}': {exc}") from None
    except ViewerError:
        # A trace given where a tree was expected: say what it is. Imported here, where a read
        # already failed, so that reading a tree pays nothing for it (its regexes included).
        from .timeline import timeline_kind, timeline_message  # deferred: see above

        kind = timeline_kind(path)
        if kind is None:
            raise
        raise ViewerError(timeline_message(path, kind)) from None
    profile = Profile(root, device_info, [path], names)
    profile.has_metadata = metadata
    profile.fused = read_fused(path)
    return profile


def _refuse_devices(path):
    """A device (`/dev/zero`, a disk) is refused before any read: it never ends. A FIFO or pipe
    (`<(zcat run.hatchet.gz)`) is read as a stream: its writer ends it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, unreadable, a NUL in the name: the read says why
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise ViewerError(f"cannot read profile '{path}': a device, not a profile file")


def merge_devices(dst, src):
    """Add src's device_info into dst (dst's entries win)."""
    for kind, devices in src.items():
        if isinstance(devices, dict) and isinstance(dst.get(kind), dict):
            merged = dict(devices)
            merged.update(dst[kind])
            dst[kind] = merged
        else:
            dst.setdefault(kind, devices)


_META_LIMIT = 1 << 20  # a session's .meta.json is a few KiB; anything bigger is not one


def _session_span(path):
    """(pid, start ns, stop ns) from the .meta.json written next to a .hatchet, or None.

    The sidecar is advisory: a missing, huge, malformed, deeply nested or out-of-range one
    only means "not known to be concurrent".
    """
    base = path[:-len(".hatchet")] if path.endswith(".hatchet") else path
    try:
        with open(base + ".meta.json", "rb") as handle:
            data = handle.read(_META_LIMIT + 1)
        if len(data) > _META_LIMIT:
            return None
        meta = json.loads(data)
        if mismatch(path, meta, base + ".meta.json"):  # another run's: says nothing of this one
            return None
        pid, start, stop = meta["pid"], meta["start_time_ns"], meta["stop_time_ns"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError, IndexError):
        return None
    if not all(type(v) is int for v in (pid, start, stop)):
        return None
    return pid, start, stop


def concurrent_sessions(path_a, path_b):
    """True when two profiles come from sessions of one process whose time spans overlap: they
    saw the same launches (the spec's "Merging profiles": one region, several backends)."""
    a, b = _session_span(path_a), _session_span(path_b)
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] < b[2] and b[1] < a[2]


def part_paths(path):
    """``name.part<k>.hatchet`` files of a ``name.hatchet`` (the parts of a long run), by k."""
    if not path.endswith(".hatchet"):
        return []
    folder, base = os.path.split(path[:-len(".hatchet")])
    try:
        entries = os.listdir(folder or ".")
    except (OSError, ValueError):
        return []
    parts = []
    for entry in entries:
        name = parse_output_name(entry)
        if name and name.part is not None and name.extension == EXTENSIONS["tree"] and name.stem == base:
            parts.append((name.part, os.path.join(folder, entry)))
    return [p for _, p in sorted(parts)]


def _expand_parts(paths):
    """Each path, or its parts when only the parts exist."""
    out = []
    for path in paths:
        parts = [] if os.path.exists(path) else part_paths(path)
        out.extend(parts or [path])
    return out


def load_profiles(paths):
    """Load one or several files and merge them into one Profile by node path.

    A ``name.hatchet`` that does not exist but whose ``name.part<k>.hatchet`` parts do is
    read as all its parts (the parts of one run add up to the unsplit run).
    """
    paths = _expand_parts(paths)
    profile = load_profile(paths[0])
    for path in paths[1:]:
        other = load_profile(path)
        merge_into(profile.root, other.root, same_launches=concurrent_sessions(paths[0], path))
        merge_devices(profile.device_info, other.device_info)
        profile.names |= other.names
        profile.has_metadata = profile.has_metadata or other.has_metadata
        merge_fused(profile.fused, other.fused)
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
        node.children = NO_CHILDREN
        node.parent = None


def hide_metadata(root):
    """Drop the launch_metadata hooks' scopes (ours and Proton's), with their subtrees."""
    exclude(root, re.compile("^(?:" + "|".join(map(re.escape, METADATA_SCOPES)) + ")$"))


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


def compute_inclusive(root, keys=None, drop_metrics=False):
    """Set ``node.incl`` to the subtree sums of the stored metrics ``keys``.

    With a list of keys, ``incl`` is a list in that order (None where the subtree has none
    of a metric): a few bytes per node, which is what the command line uses. ``keys=None``
    gives a dict of every non-identifier metric instead. ``drop_metrics`` frees each node's
    own metrics once summed (the command line needs only the sums from there on).
    Returns the nodes in preorder (parents first), for passes over every node.
    """
    if keys is not None:
        keys = list(keys)
        if NATIVE_INCLUSIVE is not None:
            order = NATIVE_INCLUSIVE(root, keys, drop_metrics, Node, NO_METRICS)
            if order is not None:
                return order
    order = preorder(root)
    if keys is None:
        _inclusive_dicts(order)
        return order
    if len(keys) == 1:
        _inclusive_one(order, keys[0], drop_metrics)
        return order
    for node in reversed(order):  # children before their parent
        get = node.metrics.get
        if drop_metrics:
            node.metrics = NO_METRICS
        incl = [get(key) for key in keys]
        for child in node.children.values():
            incl = [b if a is None else a if b is None else a + b
                    for a, b in zip(incl, child.incl)]
        node.incl = incl
    return order


def _inclusive_one(order, key, drop_metrics):
    """compute_inclusive for one key (the default view): the same sums, fewer steps."""
    for node in reversed(order):
        total = node.metrics.get(key)
        if drop_metrics:
            node.metrics = NO_METRICS
        if node.children:
            for child in node.children.values():
                value = child.incl[0]
                if value is not None:
                    total = value if total is None else total + value
        node.incl = [total]


def _inclusive_dicts(order):
    for node in reversed(order):
        incl = {k: v for k, v in node.metrics.items() if k not in IDENTIFIERS}
        for child in node.children.values():
            for key, value in child.incl.items():
                incl[key] = incl.get(key, 0) + value
        node.incl = incl
