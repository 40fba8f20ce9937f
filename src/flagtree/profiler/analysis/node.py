"""Node views: one call-path node of a Profile, as a notebook walks it.

A view is made when asked for (a million-node profile keeps its compact viewer nodes, not a
million views) and reads its node's slots: ``metrics`` the exclusive values stored for it,
``incl`` the inclusive sums (in the profile's ``stored_metrics`` order), ``values`` the
derived columns (the profile's ``metrics`` order).
"""

from itertools import repeat
from operator import attrgetter

from ..common.safe_text import safe

KINDS = ("root", "kernel", "scope")
_NAME = attrgetter("name")
_PARENT = attrgetter("parent")


class Rows:
    """The nodes in preorder with each one's parent row (-1 for the root) and depth."""

    __slots__ = ("order", "parents", "depths", "row")

    def __init__(self, order, parents, depths):
        self.order, self.parents, self.depths = order, parents, depths
        self.row = None  # id(node) -> row, built on first use

    def row_of(self, node):
        if self.row is None:
            self.row = dict(zip(map(id, self.order), range(len(self.order))))
        return self.row[id(node)]


def file_order(root):
    """Preorder with siblings as the file lists them (the sums' walk hands them back reversed)."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if node.children:
            stack.extend(reversed(node.children.values()))
    return out


def preorder_rows(order):
    """Rows of a preorder node list (parents before children), without recursion; siblings in
    file order (file_order), so a DataFrame lists them as the profile does."""
    order = file_order(order[0]) if order else order
    row = dict(zip(map(id, order), range(len(order))))
    parents = list(map(row.get, map(id, map(_PARENT, order)), repeat(-1)))
    parents[0] = -1
    depths = [0] * len(order)
    for at in range(1, len(order)):  # a parent's row is before its children's
        depths[at] = depths[parents[at]] + 1
    rows = Rows(order, parents, depths)
    rows.row = row
    return rows


class NodeView:
    """One node: ``name``, ``kind`` ('root', 'kernel' or 'scope'), ``metrics`` (exclusive),
    ``inclusive``, ``values`` (derived columns), ``children``, ``parent``, ``path``, ``depth``,
    ``id`` (its row in to_dataframe()), ``walk()`` (its subtree, preorder)."""

    __slots__ = ("_profile", "_node")

    def __init__(self, profile, node):
        self._profile = profile
        self._node = node

    @property
    def name(self):
        return self._node.name

    @property
    def kind(self):
        node = self._node
        if node.parent is None:
            return "root"
        return "kernel" if node.kernel else "scope"

    @property
    def metrics(self):
        """The exclusive metrics stored for this node (device identifiers included)."""
        return {k: v for k, v in self._node.metrics.items() if not k.startswith("__")}

    @property
    def inclusive(self):
        """This node's metrics summed over its subtree (identifiers excluded)."""
        return {k: v for k, v in zip(self._profile.stored_metrics, self._node.incl) if v is not None}

    @property
    def values(self):
        """The derived columns by the viewer's names; None where the viewer prints '-'."""
        return dict(zip(self._profile.metrics, self._node.values))

    def value(self, metric):
        """A derived column's value, or a stored metric's inclusive sum; KeyError if neither."""
        profile = self._profile
        if metric in profile.metrics:
            return self._node.values[profile.metrics.index(metric)]
        if metric in profile.stored_metrics:
            return self._node.incl[profile.stored_metrics.index(metric)]
        raise KeyError(f"{metric!r} is not a column of this profile: derived "
                       f"{profile.metrics}, stored {profile.stored_metrics}")

    @property
    def children(self):
        return [NodeView(self._profile, child) for child in self._node.children.values()]

    def child(self, name):
        return NodeView(self._profile, self._node.children[name])

    @property
    def parent(self):
        parent = self._node.parent
        return None if parent is None else NodeView(self._profile, parent)

    @property
    def path(self):
        """Names from just below the root down to this node (the root's path is empty)."""
        return tuple(self._node.path_names())

    @property
    def depth(self):
        return self._profile._rows.depths[self.id]

    @property
    def id(self):
        return self._profile._rows.row_of(self._node)

    def walk(self):
        """This node and its subtree, parents first, children in file order."""
        stack = [self._node]
        profile = self._profile
        while stack:
            node = stack.pop()
            yield NodeView(profile, node)
            if node.children:
                stack.extend(reversed(node.children.values()))

    def __eq__(self, other):
        return isinstance(other, NodeView) and other._node is self._node

    def __hash__(self):
        return id(self._node)

    def __repr__(self):

        shown = ", ".join(f"{k}={v:.6g}" for k, v in self.values.items() if v is not None)
        return f"<{self.kind} {safe(self.name)!r}{': ' + shown if shown else ''}>"
