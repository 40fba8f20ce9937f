"""Tables of a Profile: a pandas DataFrame, an llnl-hatchet GraphFrame, the top nodes.

Columns are built a column at a time from the nodes' slots (map/zip run in C), never a row
dict per node, which keeps a million-node frame within a small multiple of the viewer's own
time on the file. Neither pandas nor hatchet is needed to import this module.
"""

import heapq
import math
import sys
import warnings
from itertools import repeat
from operator import attrgetter, itemgetter

from ..viewer.fused import FIELDS as FUSED_FIELDS
from .node import NodeView

_NAME = attrgetter("name")
_KERNEL = attrgetter("kernel")
_METRICS = attrgetter("metrics")
_INCL = attrgetter("incl")
_VALUES = attrgetter("values")


def _need(module, package, what):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"{what} needs {package}, which is not installed "
                          f"(pip install {package})") from None


def _floats(np, column):
    """A float64 array of numbers and Nones (NaN); integers beyond 2**53 round as floats."""
    return np.array(column, dtype=np.float64)


def _get(mapping, key):
    return mapping.get(key)


def columns(profile):
    """(name, values) pairs of every column, in the frame's order, values as lists."""
    rows = profile._rows
    order = rows.order
    kinds = ["kernel" if k else "scope" for k in map(_KERNEL, order)]
    kinds[0] = "root"
    out = [("name", list(map(_NAME, order))), ("kind", kinds),
           ("depth", rows.depths), ("parent", rows.parents)]
    metrics = list(map(_METRICS, order))
    get = dict.get if all(type(m) is dict for m in metrics) else _get
    taken = {"name", "kind", "depth", "parent"} | set(profile.metrics)
    for key in profile.identifiers + profile.stored_metrics:
        label = f"{key} (exc)" if key in taken else key  # e.g. metrics="count": inclusive
        out.append((label, list(map(get, metrics, repeat(key)))))
    del metrics
    stored = profile.stored_metrics
    if stored:
        sums = zip(*map(_INCL, order)) if len(stored) > 1 else [[i[0] for i in map(_INCL, order)]]
        out += [(f"{key} (inc)", list(column)) for key, column in zip(stored, sums)]
    derived = profile.metrics
    if derived:
        values = zip(*map(_VALUES, order)) if len(derived) > 1 else [
            [v[0] for v in map(_VALUES, order)]]
        out += [(spec, list(column)) for spec, column in zip(derived, values)]
    if profile.fused:
        out += _fused_columns(profile.fused, order)
    return out


def _fused_columns(fused, order):
    """What inductor's kernels fuse (lists of strings), on the kernel nodes of their names; None
    on every other node and where a kernel's source lines are unknown."""
    facts = [fused.get(node.name) if node.kernel else None for node in order]
    return [(field, [f.get(field) if f else None for f in facts]) for field in FUSED_FIELDS]


def to_dataframe(profile):
    pd = _need("pandas", "pandas", "Profile.to_dataframe()")
    np = _need("numpy", "numpy", "Profile.to_dataframe()")
    data = {}
    for name, column in columns(profile):
        if name in ("name", "kind") or name in FUSED_FIELDS:
            data[name] = column
        elif name in ("depth", "parent"):
            data[name] = np.array(column, dtype=np.int64)
        else:
            data[name] = _floats(np, column)
    frame = pd.DataFrame(data, copy=False)
    frame.index.name = "node"
    return frame


def to_graphframe(profile):
    """The DataFrame indexed by hatchet Nodes (hatchet's own ids = row numbers, depths set),
    exclusive metrics as ``exc_metrics``, inclusive and derived ones as ``inc_metrics``, so
    that hatchet's operations (tree(), filter(), update_inclusive_columns()) see a tree that
    hatchet itself would have read. GraphFrame.from_literal recurses once per level; this
    builds the same objects with a loop."""
    _need("hatchet", "llnl-hatchet", "Profile.to_graphframe()")
    pd = _need("pandas", "pandas", "Profile.to_graphframe()")
    from hatchet.frame import Frame  # deferred: llnl-hatchet is optional and heavy
    from hatchet.graph import Graph  # deferred: llnl-hatchet is optional and heavy
    from hatchet.graphframe import GraphFrame  # deferred: llnl-hatchet is optional and heavy
    from hatchet.node import Node  # deferred: llnl-hatchet is optional and heavy

    frame = to_dataframe(profile)
    rows = profile._rows
    _warn_if_too_deep(max(rows.depths, default=0))
    nodes = []
    append = nodes.append
    for at, (name, kind, parent, depth) in enumerate(
            zip(frame["name"], frame["kind"], rows.parents, rows.depths)):
        node = Node(Frame({"name": name, "type": kind}), None, hnid=at, depth=depth)
        if parent >= 0:
            above = nodes[parent]
            node.parents.append(above)
            above.children.append(node)
        append(node)
    frame.index = pd.Index(nodes, name="node", dtype=object)
    frame = frame.drop(columns=["kind", "depth", "parent"])
    exclusive = list(profile.stored_metrics)
    inclusive = [f"{key} (inc)" for key in exclusive] + list(profile.metrics)
    default = profile.metrics[0] if profile.metrics else (inclusive[0] if inclusive else "name")
    return GraphFrame(Graph([nodes[0]]), frame, exclusive, inclusive, default_metric=default)


# hatchet's tree(), update_inclusive_columns() and the like recurse once per level: past Python's
# recursion limit, less what the caller's own frames take, they raise RecursionError.
RECURSION_MARGIN = 100


def _warn_if_too_deep(depth):
    limit = sys.getrecursionlimit() - RECURSION_MARGIN
    if depth >= limit:
        warnings.warn(f"this profile is {depth:,} levels deep: hatchet's tree(), update_inclusive_columns() and other "
                      f"calls that recurse per level raise RecursionError past about {limit:,} levels, and filter() "
                      f"has been seen to hang on such a tree; Profile's own nodes(), find(), top() and "
                      f"to_dataframe() do not recurse (docs/reference/analysis.md)", stacklevel=3)


def _sort_key(value):
    """The viewer's order: larger first; missing and NaN last."""
    return math.inf if value is None or value != value else -value


def top_nodes(profile, n, metric, kind):
    if kind not in ("kernel", "scope", None):
        raise ValueError(f"kind must be 'kernel', 'scope' or None, got {kind!r}")
    metric = _metric(profile, metric)
    if profile.metrics and metric in profile.metrics:
        at, slot = profile.metrics.index(metric), _VALUES
    else:
        at, slot = profile.stored_metrics.index(metric), _INCL
    order = profile._rows.order
    candidates = [node for node in order[1:] if kind is None or node.kernel == (kind == "kernel")]
    keyed = ((_sort_key(slot(node)[at]), node.name, row, node) for row, node in enumerate(candidates))
    best = heapq.nsmallest(max(0, int(n)), keyed, key=itemgetter(0, 1, 2))
    return [NodeView(profile, item[3]) for item in best]


def _metric(profile, metric):
    if metric is None:
        if profile.metrics:
            return profile.metrics[0]
        if profile.stored_metrics:
            return profile.stored_metrics[0]
        raise ValueError("this profile has no metric to sort by")
    if metric not in profile.metrics and metric not in profile.stored_metrics:
        raise KeyError(f"{metric!r} is not a column of this profile: derived {profile.metrics}, "
                       f"stored {profile.stored_metrics} (read(..., metrics=[...]) adds derived ones)")
    return metric


def top_frame(profile, views, metric):
    pd = _need("pandas", "pandas", "Profile.top()")
    metric = _metric(profile, metric)
    others = [m for m in profile.metrics if m != metric]
    data = {"path": [" -> ".join(v.path) for v in views], "name": [v.name for v in views],
            "kind": [v.kind for v in views], metric: [v.value(metric) for v in views]}
    for spec in others:
        data[spec] = [v.value(spec) for v in views]
    if "count" in profile.stored_metrics and "count" not in data:
        data["count"] = [v.value("count") for v in views]
    frame = pd.DataFrame(data, index=pd.Index([v.id for v in views], name="node"))
    for name in frame.columns[3:]:
        frame[name] = frame[name].astype("float64")
    return frame
