"""Profile.diff: the viewer's --diff-profile (viewer/diff.py diff_tree) as a Profile.

The difference tree is the viewer's: the union of both trees by path, each value this side's
minus the other's, a side without the node counting as zero (None where neither has a value).
Besides the derived columns the viewer shows, the exclusive and inclusive stored metrics are
differenced the same way, so the result is a Profile like any other.
"""

from ..viewer.diff import diff_tree
from ..viewer.errors import ViewerError
from .node import preorder_rows


class _DiffTree:
    """What a Profile keeps of its loaded tree, for a difference tree."""

    def __init__(self, root, sources, device_info, names):
        self.root, self.sources, self.device_info, self.names = root, sources, device_info, names
        self.has_metadata = False

    @property
    def label(self):
        return ", ".join(self.sources)


def _specs(mine, theirs):
    """The derived columns both sides have: mine if I chose them (the other must have them,
    as the viewer's -m must parse on both files), else the defaults both could give."""
    if mine._chosen:
        missing = [m for m in mine.metrics if m not in theirs.metrics]
        if missing:
            raise ViewerError(f"metric '{missing[0]}' is not in profile {theirs.label}; "
                              f"it has: {', '.join(theirs.metrics) or 'no derived metrics'}")
        return list(mine.metrics)
    return [m for m in mine.metrics if m in theirs.metrics]


def _reader(profile, specs, stored):
    """node -> its values laid out as (derived specs..., inclusive stored..., exclusive
    stored...), None where absent."""
    value_at = [profile.metrics.index(s) for s in specs]
    incl_at = {key: at for at, key in enumerate(profile.stored_metrics)}
    incl_pos = [incl_at.get(key) for key in stored]

    def values(node):
        own, incl, metrics = node.values, node.incl, node.metrics
        return ([own[at] for at in value_at]
                + [None if at is None else incl[at] for at in incl_pos]
                + [metrics.get(key) for key in stored])

    return values


def fill_difference(result, mine, other, metrics=None):
    """Make ``result`` (an empty Profile) the difference ``mine`` - ``other`` (both Profiles)."""
    specs = list(metrics) if metrics is not None else _specs(mine, other)
    for side in (mine, other):
        missing = [m for m in specs if m not in side.metrics]
        if missing:
            raise ViewerError(f"metric '{missing[0]}' is not a column of profile {side.label} "
                              f"(read it with metrics=[...] naming it)")
    stored = sorted(set(mine.stored_metrics) | set(other.stored_metrics))
    root = diff_tree(mine._tree.root, other._tree.root, _reader(mine, specs, stored),
                     _reader(other, specs, stored))
    derived, summed = len(specs), len(specs) + len(stored)
    stack = [root]
    order = []
    while stack:  # split each node's differences into the three slots a Profile reads
        node = stack.pop()
        order.append(node)
        diffs = node.values
        node.values = tuple(diffs[:derived])
        node.incl = diffs[derived:summed]
        node.metrics = {k: v for k, v in zip(stored, diffs[summed:]) if v is not None}
        if node.children:
            stack.extend(node.children.values())
    names = set(stored) | set(mine.identifiers) | set(other.identifiers)
    result._tree = _DiffTree(root, [f"{mine.label} - {other.label}"], mine.device_info, names)
    result._filters = mine._filters
    result._chosen = True
    result.sources = list(result._tree.sources)
    result.device_info = mine.device_info
    result.stored_metrics = stored
    result.identifiers = []  # differences of identifiers mean nothing
    result.metrics = specs
    at = [mine.metrics.index(s) for s in specs]
    result._kernels_only = [mine._kernels_only[i] for i in at]
    result._integral = [mine._integral[i] for i in at]
    result._rows = preorder_rows(order)
    result.is_diff = True
