"""A tree profile as a Python object: what ``flagtree.profiler.read`` returns.

The numbers are the viewer's, computed by the viewer's own code: files are read and merged by
``profile_tree.load_profiles`` (the reader, its native fast path, part files, same-launch
merging of concurrent sessions), filtered as the viewer filters (launch-metadata scopes, then
``exclude``, then ``include``), and the derived metrics (``time/ms``, ``time/%``, ``util``,
``tflop16/s``...) are the viewer's ``metrics.parse_metrics``/``fill_values`` columns. What this
module adds is the object a notebook holds: node views, tables, and a diff.

Everything walks with explicit stacks or flat preorder lists, so a 100,000-deep chain is as
easy as a flat profile.
"""

import gc
import os
import re
from contextlib import contextmanager
from types import MappingProxyType

from ..viewer.errors import ViewerError
from ..viewer.graph_view import DEFAULT_GRAPH_VIEW, apply_graph_view, check_graph_view
from ..viewer.metrics import fill_values, needed_keys, parse_metrics, prepare, usable_specs
from ..viewer.nodes import IDENTIFIERS
from ..viewer.options import compile_regex
from ..viewer.profile_tree import (compute_inclusive, exclude, hide_metadata, include,
                                   load_profiles, release)
from ..common.safe_text import safe
from .diff import fill_difference
from .frame import _metric as metric_of, _need as need, to_dataframe, to_graphframe, top_frame, top_nodes
from .html import profile_html
from .node import KINDS, NodeView, preorder_rows
from .top_kernels import top_by_kernel

# The derived columns a profile gets unless read(metrics=...) says otherwise, where the
# profile has what they need (usable_specs): time, share, time per call, CPU time, rates, util.
# Per-width FLOP rates are added only where the profile has several widths (with one, they
# would repeat tflop/s).
DEFAULT_METRICS = ("time/ms", "time/%", "avg_time/us", "cpu_time/ms", "tflop/s", "gbyte/s", "util")
WIDTH_METRICS = ("tflop8/s", "tflop16/s", "tflop32/s", "tflop64/s")


def default_specs(names, device_info):
    """The DEFAULT_METRICS (and WIDTH_METRICS) a profile with these metric names can give."""
    usable = set(usable_specs(names, device_info))
    widths = [s for s in WIDTH_METRICS if s in usable]
    specs = [s for s in DEFAULT_METRICS if s in usable]
    if len(widths) > 1:
        at = specs.index("tflop/s") + 1
        specs[at:at] = widths
    return specs


@contextmanager
def _no_gc():
    """Building a million nodes triggers many useless collector passes (the viewer's CLI
    turns it off for its whole run, for the same reason)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _paths(args):
    """Each argument a path, a folder (its .hatchet files) or an iterable of paths."""
    out = []
    for arg in args:
        if isinstance(arg, (str, bytes, os.PathLike)):
            path = os.fsdecode(os.fspath(arg))
            if os.path.isdir(path):
                found = sorted(os.path.join(path, n) for n in os.listdir(path)
                               if n.endswith(".hatchet"))
                if not found:
                    raise ViewerError(f"cannot read profile '{path}': a folder with no "
                                      f".hatchet profiles in it")
                out += found
            else:
                out.append(path)
        else:
            out += _paths(list(arg))  # one level: a list of paths
    if not out:
        raise ViewerError("read() needs at least one profile path")
    return out


def _regex(option, pattern):
    """A pattern given compiled is taken as it is; text is compiled as the viewer's -i/-e are."""
    return pattern if isinstance(pattern, re.Pattern) else compile_regex(option, pattern)


def _spec_list(metrics):
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = metrics.split(",")
    specs = [m.strip() for m in metrics]
    if not specs or "" in specs:
        raise ViewerError(f"metrics must name at least one metric, got {metrics!r}")
    return specs


def read(*paths, metrics=None, include=None, exclude=None, show_metadata=False, graph_view=DEFAULT_GRAPH_VIEW):
    """Read one or several ``.hatchet`` profiles (merged by call path, as the viewer merges
    them) into a :class:`Profile`.

    ``paths``: files, folders (their ``.hatchet`` files) or lists of them; ``name.hatchet``
    whose parts alone exist reads the parts. ``metrics``: the derived columns, as the viewer's
    ``-m`` takes them (a list or a comma-separated string; default: those of
    DEFAULT_METRICS the profile can give). ``include``/``exclude``: the viewer's ``-i``/``-e``
    regexes; ``show_metadata`` keeps the launch-metadata scopes. ``graph_view``: where CUDA-graph
    replays go, as the viewer's ``--graph-view``: "nested" (as written), "captured" or "replayed"
    (viewer/graph_view.py). Bad input raises
    :class:`~flagtree.profiler.viewer.errors.ViewerError` with the viewer's message.
    """
    files = _paths(paths)
    try:
        check_graph_view(graph_view)
    except ValueError as error:
        raise ViewerError(str(error)) from None
    filters = (_regex("include", include), _regex("exclude", exclude), bool(show_metadata), graph_view)
    with _no_gc():
        tree = load_profiles(files)
        return Profile(tree, _spec_list(metrics), filters)


class Profile:
    """A loaded profile: its node tree with exclusive, inclusive and derived metrics.

    ``root`` and ``nodes()`` give :class:`NodeView` objects; ``to_dataframe()``,
    ``to_graphframe()``, ``top()`` and ``diff()`` make tables; a notebook shows
    ``_repr_html_``. Attributes: ``sources`` (files read), ``device_info``, ``metrics`` (the
    derived columns, viewer spellings), ``stored_metrics`` (metric names in the files),
    ``fused`` (what inductor's kernels fuse, by kernel name; {} when the files say nothing of it).
    """

    is_diff = False  # True for the result of diff()
    fused = MappingProxyType({})  # what inductor's kernels fuse (viewer/fused.py): none known

    def __init__(self, tree, specs, filters):
        self._tree = tree
        self._filters = filters
        self._chosen = specs is not None
        self.sources = list(tree.sources)
        self.device_info = tree.device_info
        self.fused = getattr(tree, "fused", {})
        root = tree.root
        if not root.children and not root.metrics:
            raise ViewerError(f"profile {tree.label} is empty: no kernels or scopes were recorded")
        names = tree.names
        self.stored_metrics = sorted(n for n in names if n not in IDENTIFIERS and not n.startswith("__"))
        self.identifiers = sorted(n for n in names if n in IDENTIFIERS)
        if specs is None:
            specs = default_specs(names, tree.device_info)
        self.metrics = specs
        columns = parse_metrics(",".join(specs), names, tree.device_info, tree.label) if specs else []
        self._kernels_only = [c.kernels_only for c in columns]
        self._integral = [c.integral for c in columns]
        self._filter(root)
        prepare(columns, root, tree.device_info)
        if columns:  # the viewer's columns, from sums laid out as fill_values expects
            order = compute_inclusive(root, needed_keys(columns))
            fill_values(columns, order, root)
        order = compute_inclusive(root, self.stored_metrics)  # the inclusive sums kept
        if not columns:
            for node in order:
                node.values = ()
        self._rows = preorder_rows(order)

    def _filter(self, root):
        """The viewer's filters, in its order: the graph view, metadata scopes, exclude, include."""
        include_rx, exclude_rx, show_metadata, graph_view = self._filters
        apply_graph_view(root, graph_view)
        if not show_metadata and self._tree.has_metadata:
            hide_metadata(root)
        if exclude_rx is not None:
            exclude(root, exclude_rx)
        if include_rx is not None:
            include(root, include_rx)

    # -- nodes ------------------------------------------------------------------------------
    @property
    def root(self):
        return NodeView(self, self._tree.root)

    def nodes(self, kind=None):
        """Every node in preorder (parents first), or those of one kind ('root', 'kernel',
        'scope')."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)} or None, got {kind!r}")
        for node in self._rows.order:
            view = NodeView(self, node)
            if kind is None or view.kind == kind:
                yield view

    def __len__(self):
        return len(self._rows.order)

    def __iter__(self):
        return self.nodes()

    def find(self, pattern):
        """Nodes whose name matches the regex ``pattern`` (re.search), in preorder."""
        regex = _regex("find", pattern)
        return [NodeView(self, n) for n in self._rows.order if regex.search(n.name)]

    def node(self, path):
        """The node at ``path`` (names below the root: a list, or one string joined with
        ' -> '), or KeyError."""
        if isinstance(path, str):
            path = path.split(" -> ") if path else []
        node = self._tree.root
        for name in path:
            node = node.children[name]
        return NodeView(self, node)

    def value(self, node, metric):
        """One node's value of a derived column or, for a stored name, its inclusive sum."""
        return NodeView(self, node._node if isinstance(node, NodeView) else node).value(metric)

    @property
    def label(self):
        return ", ".join(self.sources)

    # -- tables (frame.py) ------------------------------------------------------------------
    def to_dataframe(self):
        """One row per node (preorder; index = node id): name, kind, depth, parent, device
        identifiers, exclusive metrics (stored names), inclusive metrics ('<name> (inc)') and
        the derived columns (the viewer's names). Needs pandas."""
        with _no_gc():
            return to_dataframe(self)

    def to_graphframe(self):
        """An llnl-hatchet GraphFrame of the same rows, built without recursion."""
        with _no_gc():
            return to_graphframe(self)

    def top_nodes(self, n=10, metric=None, kind="kernel"):
        """The ``n`` nodes of ``kind`` ('kernel', 'scope' or None for any but the root) with
        the largest ``metric`` (default: the first derived column), as NodeViews, ordered as
        the viewer's --print-sorted orders (missing values last, then by name)."""
        return top_nodes(self, n, metric, kind)

    def top(self, n=10, metric=None, kind="kernel", by="node"):
        """by="node": ``top_nodes`` as a DataFrame (path, name, kind and every derived column,
        the chosen metric first; the index is the node id of to_dataframe()). by="kernel": the
        kernels summed by name over their calling contexts, as the HTML report's top kernels
        (top_kernels.py; `kind` must be "kernel"). Needs pandas."""
        if by == "kernel":
            if kind != "kernel":
                raise ValueError(f"top(by='kernel') ranks kernels; kind={kind!r} needs by='node'")
            return top_by_kernel(self, n, metric_of(self, metric), lambda node: NodeView(self, node),
                                 need("pandas", "pandas", "Profile.top()"))
        if by != "node":
            raise ValueError(f"by must be 'kernel' (summed by name) or 'node' (one calling context), got {by!r}")
        return top_frame(self, self.top_nodes(n, metric, kind), metric)

    def diff(self, other, metrics=None):
        """This profile minus ``other`` (a Profile or path(s)), node by node, as the viewer's
        --diff-profile: nodes matched by path, a node on one side only counts as zero on the
        other, and derived columns are differences of the values (time/% compares shares)."""
        if not isinstance(other, Profile):
            include_rx, exclude_rx, show_metadata, graph_view = self._filters
            other = read(other, metrics=metrics if metrics is not None else
                         (self.metrics if self._chosen else None),
                         include=include_rx, exclude=exclude_rx, show_metadata=show_metadata,
                         graph_view=graph_view)
        result = Profile.__new__(Profile)
        fill_difference(result, self, other, metrics)
        result.fused = {**other.fused, **self.fused}
        return result

    # -- display (html.py) -------------------------------------------------------------------
    def _repr_html_(self):
        return profile_html(self)

    def __repr__(self):
        kernels = sum(1 for node in self._rows.order if node.kernel)
        return (f"<Profile {safe(self.label)!s}: {len(self)} nodes, {kernels} kernels; "
                f"metrics {', '.join(self.metrics) or '(none derived)'}>")

    def close(self):
        """Free the tree now (parent links are cycles the collector would otherwise chase)."""
        tree, self._tree = getattr(self, "_tree", None), None
        if tree is not None and tree.root is not None:
            release(tree.root)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free into
            pass
