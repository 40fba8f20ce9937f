"""Shared ground of the picture exports (``--speedscope``, ``--collapsed``, ``--html``).

The exports read the tree through the viewer's own loading, filtering and metric code, so what
they show matches what the terminal prints. Each output file is written atomically.
"""

import argparse
import os
import re

from ..writers.atomic import write_text
from .devices import DEVICE_KINDS
from .errors import ViewerError
from .metrics import CPU_TIME, TIME, needed_keys
from .profile_tree import release

# `a.rank3.hatchet`, `a.rank3.part1.hatchet`: files of one rank of a multi-process run.
_RANK_RE = re.compile(r"\.rank(\d+)(?=\.)")
_PY_FRAME = re.compile(r"^(.*):(\d+)@(.*)$")
HOST = "host"


def add_options(add):
    """Register the export options on the viewer's argument parser."""
    add("--speedscope", metavar="OUT", help="write a speedscope file (one profile per device, or per rank)")
    add("--collapsed", metavar="OUT", help="write folded stacks 'a;b;kernel 123' for flamegraph.pl")
    add("--html", metavar="OUT", help="write a self-contained HTML report (flame view, table, diff)")


def requested(args):
    return bool(args.speedscope or args.collapsed or args.html)


def export(args, prepare, load):
    """Write every requested export; returns the text the command prints.

    ``prepare(profile, args)`` is the viewer's own filter-and-sum step (``cli._prepare``, nodes
    keeping their exclusive metrics): it returns (metrics, values_of) for ``args.metrics``;
    ``load(paths)`` is the viewer's loader.
    """
    prepare_profile = lambda profile, spec: prepare(profile, _with_metrics(args, spec))
    written = []
    if args.speedscope or args.collapsed:
        groups = [(label, load(paths)) for label, paths in rank_groups(args.profiles)]
        weights = [(label, profile, weight_of(profile, args.metrics, prepare_profile))
                   for label, profile in groups]
        try:
            if args.speedscope:
                from .speedscope import write_speedscope
                write_speedscope(args.speedscope, weights)
                written.append(args.speedscope)
            if args.collapsed:
                from .collapsed import write_collapsed
                write_collapsed(args.collapsed, weights)
                written.append(args.collapsed)
        finally:
            for _, profile in groups:
                release(profile.root)  # the viewer runs with the cyclic GC off
    if args.html:
        from .html_report import write_report
        write_report(args, prepare_profile, load)
        written.append(args.html)
    return "".join(f"wrote {path}\n" for path in written)


def _with_metrics(args, spec):
    """The parsed arguments with ``-m`` replaced (the exports ask for more columns than -m)."""
    return argparse.Namespace(**dict(vars(args), metrics=spec))


def rank_groups(paths):
    """[(label, paths)]: one group per rank when every file names its rank, else one group."""
    ranks = [_RANK_RE.search(os.path.basename(p)) for p in paths]
    if not paths or not all(ranks):
        return [(None, list(paths))]
    groups = {}
    for path, match in zip(paths, ranks):
        groups.setdefault(int(match.group(1)), []).append(path)
    return [(f"rank {rank}", groups[rank]) for rank in sorted(groups)]


class Interned:
    """A table of distinct keys, each stored once (as ``entry(key)``) at its first index:
    the string table of the report, the frame table of speedscope."""

    def __init__(self, entry=None):
        self.items = []
        self.index = {}
        self.entry = entry

    def of(self, key):
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.items)
            self.items.append(key if self.entry is None else self.entry(key))
        return found


class Weight:
    """How much one node weighs by itself (exclusive), and the speedscope unit of that."""

    def __init__(self, label, unit, of_node):
        self.label = label
        self.unit = unit
        self.of_node = of_node


def weight_of(profile, spec, prepare_profile):
    """The first ``-m`` metric as an exclusive weight. Time metrics weigh in nanoseconds
    whatever unit was asked for (speedscope scales its display itself, folded stacks need
    whole numbers); other metrics are computed on the node's own (exclusive) values."""
    first = spec.split(",", 1)[0].strip()
    metrics, _ = prepare_profile(profile, first)
    family = first.split("/", 1)[0]
    if family in ("time", "cpu_time") and "/" in first:
        key = TIME if family == "time" else CPU_TIME
        return Weight(key, "nanoseconds", lambda node: node.metrics.get(key))
    keys = needed_keys(metrics)  # the order of root.incl (cli._prepare sums these keys)
    compute = metrics[0].make({key: at for at, key in enumerate(keys)})
    root_incl = profile.root.incl
    unit = "bytes" if first == "bytes" else "none"
    return Weight(first, unit, lambda node: compute([node.metrics.get(k) for k in keys], root_incl))


def device_label(node):
    """'CUDA:0' for a node on a device (its own identifiers or its nearest ancestor's)."""
    while node is not None:
        metrics = node.metrics
        if "device_type" in metrics or "device_id" in metrics:
            kind = DEVICE_KINDS.get(int(metrics.get("device_type", 1)), "device")
            return f"{kind}:{int(metrics.get('device_id', 0))}"
        node = node.parent
    return HOST


def weighted_paths(root, weight):
    """(node, names from below the root to it, weight) for each node weighing more than 0,
    depth first without recursion; the root's own weight comes with an empty path."""
    out = []
    names = []
    stack = [(root, -1)]
    while stack:
        node, depth = stack.pop()
        if depth >= 0:
            del names[depth:]
            names.append(node.name)
        value = weight.of_node(node)
        if value is not None and value > 0:
            out.append((node, tuple(names), value))
        kids = sorted(node.children.values(), key=lambda n: n.name, reverse=True)
        stack.extend((kid, depth + 1) for kid in kids)
    return out


def split_frame(name):
    """(function, file, line) of a '<file>:<line>@<function>' frame, else (name, None, None)."""
    match = _PY_FRAME.match(name)
    if not match:
        return name, None, None
    return match.group(3), match.group(1), int(match.group(2))


def write_atomic(path, text):
    """The viewer's outputs go through the project's one atomic writer; a failure is one
    ViewerError line."""
    try:
        try:
            write_text(path, text)
        except UnicodeEncodeError:
            # A name may hold a lone surrogate (JSON allows "\ud800"); UTF-8 cannot, so it is
            # written as the text \ud800 rather than failing the export.
            write_text(path, text.encode("utf-8", "backslashreplace").decode("utf-8"))
    except OSError as exc:
        raise ViewerError(f"cannot write '{path}': {exc.strerror or exc}") from None
