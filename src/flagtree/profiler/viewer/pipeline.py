"""The steps every view runs on a loaded profile: refuse an empty one, filter its nodes, sum its
metrics. The terminal tree, the rank view and every export call these, so their numbers agree.
"""

from collections import deque
from itertools import repeat

from .errors import ViewerError
from .graph_view import apply_graph_view
from .metrics import fill_values, needed_keys, parse_metrics, prepare
from .nodes import stored_values
from .options import metric_specs
from .profile_tree import compute_inclusive, exclude, hide_metadata, include


def refuse_empty(profile):
    if not profile.root.children and not profile.root.metrics:
        raise ViewerError(f"profile {profile.label} is empty: no kernels or scopes were recorded")


def filter_tree(profile, selection):
    """What every view applies: the graph view, then the node filters (metadata scopes, -e, -i)."""
    root = profile.root
    apply_graph_view(root, selection.graph_view)
    if not selection.show_metadata and profile.has_metadata:
        hide_metadata(root)
    if selection.exclude is not None:
        exclude(root, selection.exclude)
    if selection.include is not None:
        include(root, selection.include)


def summed(profile, metrics, selection, keep_own=False):
    """Filter and sum one profile for the ``metrics`` specs (text or list); returns the parsed
    metrics and the value lookup (every node's values are filled when this returns, so
    rendering reads them at C speed; a node added to the tree afterwards has none).

    ``keep_own`` leaves each node its exclusive metrics (the flame exports weigh by them) and
    its sums (``incl``); without it only the root keeps its sums."""
    root = profile.root
    refuse_empty(profile)
    names = profile.names
    parsed = parse_metrics(metric_specs(metrics, names), names, profile.device_info, profile.label)
    filter_tree(profile, selection)
    prepare(parsed, root, profile.device_info)
    order = compute_inclusive(root, needed_keys(parsed), drop_metrics=not keep_own)
    fill_values(parsed, order, root)
    if not keep_own:
        # Only the values are read from here on (and the root's sums, by a few views): the
        # other nodes' sums go, which keeps a four-column view within 4x the file's size.
        deque(map(setattr, order[1:], repeat("incl"), repeat(None)), maxlen=0)
    return parsed, stored_values
