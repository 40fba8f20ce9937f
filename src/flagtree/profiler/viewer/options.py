"""The option values every view shares, checked once: depth, threshold, the node filters and
the metric list. Bad values are one-line :class:`ViewerError` messages.

The command line (:mod:`.cli`), the rank view (:mod:`.ranks`) and the exports (:mod:`.exports`)
all read their options through here, so ``-d``, ``-t``, ``-i``/``-e`` and ``-m`` mean the same
thing in each.
"""

import argparse
import math
import re

from .errors import ViewerError
from .graph_view import DEFAULT_GRAPH_VIEW
from .nodes import IDENTIFIERS


class Selection:
    """Which nodes a view keeps and where: the compiled ``-i``/``-e`` patterns,
    ``--show-metadata`` and ``--graph-view`` (graph_view.py)."""

    def __init__(self, include=None, exclude=None, show_metadata=False, graph_view=DEFAULT_GRAPH_VIEW):
        self.include = include
        self.exclude = exclude
        self.show_metadata = show_metadata
        self.graph_view = graph_view


def selection(args):
    """The node filters of parsed viewer arguments."""
    return Selection(compile_regex("--include", args.include), compile_regex("--exclude", args.exclude),
                     args.show_metadata, getattr(args, "graph_view", DEFAULT_GRAPH_VIEW))


def parse_depth(text):
    if text is None:
        return None
    try:
        depth = int(text)
    except ValueError:
        raise ViewerError(f"invalid --depth '{text}': expected a whole number >= 0") from None
    if depth > 1 << 62:
        depth = 1 << 62  # deeper than any tree: same as no limit
    if depth < 0:
        raise ViewerError(f"invalid --depth '{text}': must not be negative")
    return depth


def parse_threshold(text):
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ViewerError(f"invalid --threshold '{text}': expected a number") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ViewerError(f"invalid --threshold '{text}': must be between 0 and 1")
    return value


def compile_regex(option, pattern):
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        # OverflowError: a repeat count such as a{99999999999}
        raise ViewerError(f"invalid {option} regex '{pattern}': {exc}") from None


class _DefaultMetrics(str):
    """The ``-m`` a user did not write: it compares and splits as its text, and ``is`` tells it apart."""


DEFAULT_METRICS = _DefaultMetrics("time")


def default_metrics(metrics, names):
    """``-m`` for one profile: as given; when left out, time (each value in its own unit), or for a profile without device
    times (scope metrics alone, counters alone) what it has: CPU time, else its stored metrics."""
    if metrics is not DEFAULT_METRICS or "time (ns)" in names:
        return metrics
    if "cpu_time (ns)" in names:
        return "cpu_time"
    stored = sorted(n for n in names if not n.startswith("__") and n not in IDENTIFIERS)
    return stored or metrics


def metric_specs(metrics, names=()):
    """The ``-m`` value as a list of specs. A list passes through untouched (the exports ask for
    stored metrics by their exact names). In text, a stored name wins over splitting: the whole
    text if it is one (``-m 'a,b'`` for a metric named ``a,b``), else each comma-separated part
    as written if it is one (``'c '``), stripped otherwise."""
    if isinstance(metrics, (list, tuple)):
        return list(metrics)
    if metrics in names:
        return [metrics]
    return [part if part in names else part.strip() for part in metrics.split(",")]


def with_metrics(args, specs):
    """The parsed arguments with ``-m`` replaced by a list of specs."""
    return argparse.Namespace(**dict(vars(args), metrics=list(specs)))
