"""Views of CUDA-graph replays (``--graph-view``, ``read(..., graph_view=...)``).

A kernel replayed from a CUDA graph is written where both contexts show:
``<replay context> -> <captured_at> -> <capture path> -> kernel`` (``<captured_at:unknown>`` in
place of ``<captured_at>`` and the capture path where the capture was not seen). The views:

- ``nested`` (the default): the tree as written. Nothing is moved, so nothing is hidden: the
  replay context and the capture path are both on the kernel's path.
- ``captured``: each ``<captured_at>`` node's subtree (the capture path) merged under the root,
  as if its kernels had been launched where they were captured; ``<captured_at:unknown>`` nodes
  are merged under the root as they are (their capture context is not known).
- ``replayed``: each ``<captured_at>`` / ``<captured_at:unknown>`` node folded into its parent:
  the kernels (with their subtrees) directly under the replay context, the capture path gone.

Both rearrangements keep the totals exact: merged nodes add their metrics, nothing is dropped
(the own metrics of a node that is folded away go to the node that takes its kernels), and a
context left with neither metrics nor children by the move is removed. Everything iterates
(trees may be 100,000 levels deep).
"""

from .nodes import add_metrics, attach, merge_into

GRAPH_VIEWS = ("nested", "captured", "replayed")
DEFAULT_GRAPH_VIEW = "nested"
CAPTURED_AT = "<captured_at>"
CAPTURED_AT_UNKNOWN = "<captured_at:unknown>"
_MARKERS = (CAPTURED_AT, CAPTURED_AT_UNKNOWN)


def check_graph_view(view):
    """The view's name, or ValueError naming the choices."""
    if view not in GRAPH_VIEWS:
        raise ValueError(f"graph view must be one of {', '.join(GRAPH_VIEWS)}, got {view!r}")
    return view


def apply_graph_view(root, view):
    """Rearranges the tree under ``root`` in place for ``view``; returns how many
    ``<captured_at>`` nodes it moved (0 for ``nested``, or a tree without graph replays)."""
    check_graph_view(view)
    if view == DEFAULT_GRAPH_VIEW:
        return 0
    markers = _markers(root)
    move = _to_root if view == "captured" else _fold_into_parent
    # Innermost first: a marker inside another's subtree (not written by the profiler, but
    # possible in a merged or hand-made file) is moved before the one holding it.
    for marker in reversed(markers):
        if marker.parent is not None:  # not removed with an emptied marker around it
            move(root, marker)
    return len(markers)


def _markers(root):
    """The marker nodes in preorder (parents before their descendants)."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node is not root and node.name in _MARKERS:
            out.append(node)
        if node.children:
            stack.extend(node.children.values())
    return out


def _detach(node):
    parent = node.parent
    del parent.children[node.name]
    node.parent = None
    return parent


def _to_root(root, marker):
    """``captured``: the capture path under the root (an unknown capture stays one node)."""
    parent = marker.parent
    if parent is root and marker.name == CAPTURED_AT_UNKNOWN:
        return  # already where it goes
    _detach(marker)
    if marker.name == CAPTURED_AT_UNKNOWN:
        attach(root, marker)
    else:
        if marker.metrics:
            _own(root)
        merge_into(root, marker)  # its metrics to the root's, its children under the root by path
    _prune_upward(parent, root)


def _fold_into_parent(root, marker):
    """``replayed``: the marker's kernels under its parent; the nodes between them go, their
    own metrics added to the parent's."""
    parent = _detach(marker)
    stack = [marker]
    while stack:
        node = stack.pop()
        if node.metrics:
            add_metrics(_own(parent), node.metrics)
        for child in list(node.children.values()):
            if child.kernel:
                child.parent = None
                attach(parent, child)
            else:
                stack.append(child)
        node.children = {}
    _prune_upward(parent, root)


def _own(node):
    """The node's metrics as a dict of its own (a read-only shared empty one is replaced)."""
    if not isinstance(node.metrics, dict):
        node.metrics = dict(node.metrics)
    return node.metrics


def _prune_upward(node, root):
    """Removes ``node`` and then its ancestors while each is left with no metrics and no
    children (a replay context whose only content was the graph replay)."""
    while node is not root and node is not None and not node.children and not node.metrics:
        node = _detach(node)
