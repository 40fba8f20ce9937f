"""The in-memory tree: compact call-path nodes, node validation, and merging by path.

A node keeps only what the viewer shows or sums (name, kernel flag, exclusive metrics,
children), not the file's whole frame object, so a tree costs a few hundred bytes per node.
"""

from operator import attrgetter
from types import MappingProxyType

from .errors import ViewerError

# Identifier metrics say where a kernel ran; adding them up is meaningless.
IDENTIFIERS = frozenset(("device_id", "device_type"))

# Shared by every leaf (most nodes): saves an empty dict per node. Read-only, so code that
# adds a child must go through Node.adopt, which gives the node a dict of its own.
NO_CHILDREN = MappingProxyType({})
NO_METRICS = MappingProxyType({})  # what a node's metrics become once summed and dropped

# Metrics the profiler writes as numbers on every node that has them: a text there is a broken
# profile. Any other metric may be a text (a scope's "(pty)" property), which the viewer leaves
# out: its columns are numbers. The native reader (csrc/viewer/tree_reader.cpp) knows the same.
NUMBER_ONLY = frozenset(("count", "time (ns)", "cpu_time (ns)"))

# Integers beyond this are stored as floats, so that scaling and dividing them never raises
# OverflowError; one that does not fit a float at all is refused when read.
_EXACT_LIMIT = 1 << 63

# Proton (Triton 3.6) writes device identifiers as strings: device_type "CUDA", device_id "0".
_DEVICE_TYPE_NUMBERS = {"HIP": 0, "CUDA": 1, "CPU": 2}
_IDENTIFIER_LIMIT = 1 << 31


class Node:
    """One call-path node; ``children`` maps name -> Node (paths are unique).

    The native reader and tree walks (csrc/viewer/node_layout.h) fill these slots directly,
    as ``__init__`` does: keep them in step."""

    __slots__ = ("name", "kernel", "metrics", "children", "parent", "incl", "values")

    def __init__(self, name, kernel, metrics, parent=None):
        self.name = name
        self.kernel = kernel
        self.metrics = metrics
        self.children = NO_CHILDREN
        self.parent = parent
        self.incl = None
        self.values = None

    def is_kernel_like(self):
        """True for nodes that ran on a device (device identifiers or frame kind 'kernel')."""
        return self.kernel

    def adopt(self, child):
        """Add ``child`` under this node (its name must be new here)."""
        if self.children is NO_CHILDREN:
            self.children = {}
        self.children[child.name] = child
        child.parent = self

    def path_names(self):
        """Names from just below the root down to this node."""
        names = []
        node = self
        while node.parent is not None:
            names.append(node.name)
            node = node.parent
        names.reverse()
        return names


# The value lookup of views whose nodes carry their column values (``node.values``, filled by
# metrics.fill_values or diff_tree): rendering reads them at C speed, or natively.
stored_values = attrgetter("values")


def not_profile(path, why):
    return ViewerError(f"'{path}' is not a tree profile: {why}")


def make_node(raw, path):
    """A Node (without children) from one decoded node object; ViewerError if malformed."""
    if type(raw) is not dict:
        raise not_profile(path, "a node is not a JSON object")
    frame = raw.get("frame")
    if type(frame) is not dict or type(frame.get("name")) is not str:
        raise not_profile(path, "a node has no frame name")
    name = frame["name"]
    metrics = raw.get("metrics")
    if metrics is None:
        metrics = {}
    elif type(metrics) is not dict:
        raise not_profile(path, f"node '{name}' has non-object metrics")
    elif metrics:
        for key, value in metrics.items():
            kind = type(value)
            if kind is int:
                if -_EXACT_LIMIT < value < _EXACT_LIMIT and (
                        key not in IDENTIFIERS or 0 <= value < _IDENTIFIER_LIMIT):
                    continue
            elif kind is float and key not in IDENTIFIERS:
                continue
            metrics = _checked_metrics(metrics, path, name)
            break
        if "device_id" in metrics or "device_type" in metrics:
            return Node(name, True, metrics)
    return Node(name, frame.get("kind") == "kernel" or frame.get("type") == "kernel", metrics)


_NUMBER_TYPES = frozenset((int, float))


def plain_metrics(metrics, bools=True):
    """True when make_node would keep ``metrics`` as they are (a non-empty dict of numbers,
    no integer beyond the exact limit, identifiers small ints), checked at C speed.

    ``abs`` refuses every JSON value but numbers and booleans, and the sum of the absolute
    values bounds each one; ``bools=False`` (the text has no ``true``/``false``) skips the
    type check that only booleans need. False merely sends a node down make_node's exact
    path, so this may be stricter (a NaN, a big float, a big sum) but never laxer.
    """
    if not metrics:
        return False
    values = metrics.values()
    try:
        if not sum(map(abs, values)) < _EXACT_LIMIT:
            return False
    except (TypeError, OverflowError):  # not numbers; a huge int beside a float
        return False
    if bools and not _NUMBER_TYPES.issuperset(map(type, values)):
        return False
    for key in ("device_id", "device_type"):
        value = metrics.get(key)
        if value is not None and (type(value) is not int or not 0 <= value < _IDENTIFIER_LIMIT):
            return False
    return True


def _checked_metrics(metrics, path, name):
    """The slow path: identifiers made small ints, huge ints made floats, texts and nulls left out
    (but of NUMBER_ONLY metrics), the rest refused."""
    out = {}
    for key, value in metrics.items():
        if key in IDENTIFIERS:
            out[key] = _identifier(key, value, path, name)
        elif (type(value) is str or value is None) and key not in NUMBER_ONLY:
            continue  # a text, or null: how the writers keep strict JSON of a NaN or infinite sum
        elif type(value) is int:
            out[key] = _huge_int(key, value, path, name)
        elif type(value) is float:
            out[key] = value
        else:
            raise not_profile(path, f"metric '{key}' of node '{name}' is not a number")
    return out


def _huge_int(key, value, path, name):
    if -_EXACT_LIMIT < value < _EXACT_LIMIT:
        return value
    try:
        return float(value)
    except OverflowError:
        raise not_profile(path, f"metric '{key}' of node '{name}' is too large") from None


def _identifier(key, value, path, name):
    kind = type(value)
    number = None
    if kind is int:
        number = value
    elif kind is float and value.is_integer():  # NaN and infinities are not
        number = int(value)
    elif kind is str:
        text = value.strip().upper()
        if key == "device_type" and text in _DEVICE_TYPE_NUMBERS:
            number = _DEVICE_TYPE_NUMBERS[text]
        elif text.isdigit() and text.isascii() and len(text) < 10:
            number = int(text)
    if number is None or not 0 <= number < _IDENTIFIER_LIMIT:
        raise not_profile(path, f"metric '{key}' of node '{name}' is not a device identifier: "
                                f"{value!r}"[:300])
    return number


def add_metrics(dst, src):
    """Sum src's metrics into dst (identifiers: dst keeps its own)."""
    for key, value in src.items():
        if key in IDENTIFIERS:
            dst.setdefault(key, value)
        else:
            dst[key] = dst.get(key, 0) + value


def add_missing_metrics(dst, src):
    for key, value in src.items():
        dst.setdefault(key, value)


def merge_into(dst, src, same_launches=False):
    """Add tree ``src`` into tree ``dst`` by node path; ``src`` is consumed. With
    ``same_launches`` (concurrent sessions over the same region, e.g. backend="nvidia" and
    backend="instrumentation") a metric both trees have was measured once: dst's value is kept,
    and src only adds the metrics dst lacks (cycles next to time)."""
    add = add_missing_metrics if same_launches else add_metrics
    add(dst.metrics, src.metrics)
    dst.kernel = dst.kernel or src.kernel
    stack = [(dst, src)]
    while stack:
        dnode, snode = stack.pop()
        for name, schild in snode.children.items():
            dchild = dnode.children.get(name)
            if dchild is None:
                dnode.adopt(schild)
            else:
                add(dchild.metrics, schild.metrics)
                dchild.kernel = dchild.kernel or schild.kernel
                stack.append((dchild, schild))


def attach(parent, child):
    """Put a finished child under parent; a same-named sibling absorbs it instead."""
    existing = parent.children.get(child.name)
    if existing is None:
        parent.adopt(child)
    else:
        merge_into(existing, child)
