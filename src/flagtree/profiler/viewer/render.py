"""Text output: the indented tree, the sorted flat list, and metric listings.

Rendering never recurses (profiles can be 100,000 levels deep) and streams: rows are chosen
and their value cells formatted first (memory proportional to the tree), then each line is
built and written in batches, so the printed text (quadratic in depth for a deep chain) is
never held whole. Every name printed goes through :func:`safe`.
"""

import os
import re
from itertools import islice, repeat
from operator import attrgetter

from .fused import annotated
from .nodes import IDENTIFIERS, Node, stored_values
from .numbers import format_duration, format_duration_column, format_plain, format_plain_column
from ..common.safe_text import UNSAFE, safe

try:  # the optional native print order (csrc/viewer/tree_walks.cpp); the same rows without
    from ..native_core import native

    NATIVE_ROWS = native.viewer.viewer_tree_rows
except ImportError:
    NATIVE_ROWS = None

_UNSAFE_SEARCH = UNSAFE.search

# Our names, then Proton's (-f of proton-viewer), which print Proton's spellings.
FRAME_FORMATS = ("full", "file:function:line", "function:line", "file:function",
                 "file_function_line", "function_line", "file_function")
_PY_FRAME = re.compile(r"^(.*):(\d+)@(.*)$", re.S)

RESET, BOLD = "\x1b[0m", "\x1b[1m"
RED, YELLOW, GREEN, CYAN = "\x1b[31m", "\x1b[33m", "\x1b[32m", "\x1b[36m"

BATCH_LINES = 8192  # lines joined into one write (each is at most ~400 characters + its name)
INDENT_LEVELS = 128  # tree levels drawn with guides; deeper rows are marked [+N]


def format_frame(name, style):
    """Rewrite a ``<file>:<line>@<function>`` frame name; others pass through."""
    if style == "full":
        return name
    match = _PY_FRAME.match(name)
    if not match:
        return name
    path, line, func = match.groups()
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if style == "file:function:line":
        return f"{base}:{func}:{line}"
    if style == "function:line":
        return f"{func}:{line}"
    if style == "file:function":
        return f"{base}:{func}"
    if style == "file_function_line":
        return f"{base}:{line}@{func}"
    if style == "function_line":
        return f"{line}@{func}"
    return f"{base}@{func}"  # file_function


def format_float(value):
    """Plain decimals (numbers.py): e-notation only with --sci (column_notation)."""
    return format_plain(value)


def format_floats(values, notation=None):
    """format_float over a column, without a call per cell; ``notation`` ('f' or 'e', from
    column_notation under --sci) makes every cell of the column one kind; None: plain."""
    if notation == "e":
        return ["-" if v is None else f"{v:.3e}" for v in values]
    if notation == "f":
        return ["-" if v is None else f"{v:.3f}" for v in values]
    return format_plain_column(values)


def column_notation(values):
    """--sci: 'e' when some value of a column needs e-notation (non-zero under 0.1, 1e6 or more,
    not finite), else 'f': one notation a column, so that its values line up and compare."""
    for v in values:
        if v is not None and v != 0 and not 0.1 <= abs(v) < 1e6:
            return "e"
    return "f"


def format_integral(value):
    """Whole numbers as integers; anything fractional (or not finite) falls back to floats."""
    if type(value) is int:
        return str(value)
    if value is not None and abs(value) < 1e15 and float(value).is_integer():
        return str(int(value))
    return format_float(value)


def _formatter(metric):
    if getattr(metric, "unit", None) == "duration":
        return format_duration
    return format_integral if metric.integral else format_float


def use_color(stream, flag_off):
    """Colour only for terminals, and never with --no-color or NO_COLOR set."""
    if flag_off or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


class View:
    """Everything rendering needs: columns, value lookup, and display options.

    ``values_of(node)`` returns the node's list of column values (cached on ``node.values``).
    """

    def __init__(self, metrics, values_of, *, depth=None, threshold=0.0,
                 frame_format="full", color=False, diff=False, scientific=False):
        self.labels = [safe(m.label) + (" (diff)" if diff else "") for m in metrics]
        self.formatters = [_formatter(m) for m in metrics]
        self.scientific = scientific  # --sci: e-notation where a float column needs it
        self.values_of = values_of
        self.depth = depth
        self.frame_format = frame_format
        self.color = color
        self.diff = diff
        self.cutoff = None
        self.threshold = threshold
        self.root_first = None
        self.notations = None  # each float column's notation, chosen over all its rows
        self.fused = None  # --fused: {kernel name: what it fuses} (fused.py), shown after its name

    def start(self, root):
        self.root_first = self.values_of(root)[0]
        if self.threshold > 0 and self.root_first is not None:
            self.cutoff = self.threshold * abs(self.root_first)

    def visible(self, node):
        if self.cutoff is None:
            return True
        first = self.values_of(node)[0]
        return first is not None and abs(first) >= self.cutoff

    def order(self, nodes):
        """Nodes by first value, descending (missing and NaN last), then by name."""
        nodes = list(nodes)
        if len(nodes) < 2:
            return nodes
        firsts = [values[0] for values in map(self.values_of, nodes)]
        ranks = [_LAST if first is None or first != first else -first for first in firsts]
        order = sorted(zip(ranks, map(_NAME, nodes), range(len(nodes))))
        return [nodes[at] for _, _, at in order]

    def children(self, node):
        kids = node.children.values()
        if self.cutoff is not None:
            kids = [c for c in kids if self.visible(c)]
        return self.order(kids)

    def name(self, name):
        return safe(format_frame(name, self.frame_format))


_LAST = float("inf")
_NAME = attrgetter("name")


def tree_rows(root, view):
    """Nodes in print order, with their depths and whether each is its parent's last child
    (three flat lists: a tuple per row would cost more than the row's node)."""
    if NATIVE_ROWS is not None and view.values_of is stored_values:
        rows = NATIVE_ROWS(root, Node, view.depth, view.cutoff)
        if rows is not None:
            return rows
    nodes, depths, lasts = [], [], []
    stack = [(root, 0, True)]
    limit = view.depth
    while stack:
        node, depth, last = stack.pop()
        nodes.append(node)
        depths.append(depth)
        lasts.append(last)
        if not node.children or (limit is not None and depth >= limit):
            continue
        kids = view.children(node)
        if kids:
            below = depth + 1
            stack.append((kids[-1], below, True))
            if len(kids) > 1:
                stack.extend(zip(kids[-2::-1], repeat(below), repeat(False)))
    return nodes, depths, lasts


def _column_cells(fmt, column, notation=None):
    if fmt is format_float:
        return format_floats(column, notation)
    return format_duration_column(column) if fmt is format_duration else list(map(fmt, column))


def _widths(view, values):
    """Each column's width (its widest cell or label), and the header line.

    Cells are formatted here only to be measured, one column at a time, and formatted again
    batch by batch when written: twice the (cheap) formatting instead of every row's cells
    alive at once.
    """
    widths = []
    view.notations = []
    for index, (label, fmt) in enumerate(zip(view.labels, view.formatters)):
        column = [row[index] for row in values]
        notation = column_notation(column) if fmt is format_float and view.scientific else None
        view.notations.append(notation)
        cells = _column_cells(fmt, column, notation)
        widths.append(max(len(label), max(map(len, cells), default=0)))
    header = "  ".join(label.rjust(width) for label, width in zip(view.labels, widths))
    # One column's cells are no bigger than the sums freed before: kept, not made twice.
    kept = cells if len(widths) == 1 else None
    return widths, header, kept


def _cells(view, values, widths):
    """Per row of ``values``, its right-aligned value columns as one string."""
    rows = None
    notations = view.notations or [None] * len(widths)
    for index, (fmt, width) in enumerate(zip(view.formatters, widths)):
        column = [row[index] for row in values]
        cells = map(str.rjust, _column_cells(fmt, column, notations[index]), repeat(width))
        rows = list(cells) if rows is None else list(map("  ".join, zip(rows, cells)))
    return rows or [""] * len(values)


def _value_color(view, node):
    first = view.values_of(node)[0]
    if first is None or first != first:
        return ""
    if view.diff:
        return RED if first > 0 else GREEN if first < 0 else ""
    if not view.root_first:
        return ""
    share = first / view.root_first
    return RED if share >= 0.5 else YELLOW if share >= 0.1 else ""


def _emit(view, nodes, texts, write):
    """Write the header and one line per node: cells, then its text (an iterable)."""
    values = list(map(view.values_of, nodes))
    widths, header, kept = _widths(view, values)
    write((BOLD + header + RESET if view.color else header) + "\n")
    texts = iter(texts)
    for start in range(0, len(nodes), BATCH_LINES):
        batch = slice(start, start + BATCH_LINES)
        if kept is None:
            cells = _cells(view, values[batch], widths)
        else:
            cells = list(map(str.rjust, kept[batch], repeat(widths[0])))
        if not view.color:
            lines = list(map("  ".join, zip(cells, texts)))
        else:
            shown = nodes[batch]
            lines = list(map("  ".join, zip(map(_tinted, cells, repeat(view), shown),
                                            map(_kernel_cyan, shown, texts))))
        lines.append("")
        write("\n".join(lines))


def _tinted(cell, view, node):
    tint = _value_color(view, node)
    return tint + cell + RESET if tint else cell


def _kernel_cyan(node, text):
    return CYAN + text + RESET if node.kernel else text


def _tree_texts(view, nodes, depths, lasts):
    """The indented names, built one at a time from the ancestors' continuation marks.

    Guides are drawn for INDENT_LEVELS levels; a deeper row says how many more levels down
    it is (``[+N]``), so a 100,000-deep chain prints 100,000 short lines, not 15 GB of blanks.
    """
    # indents[d]: the guides of levels 1..d; a row writes its own level before any
    # descendant reads it (rows come parents first), so stale deeper entries never show.
    indents = [""] * (INDENT_LEVELS + 1)
    name_of = view.name if view.frame_format != "full" else _safe_name
    # One regex search over every name: when it finds nothing, no name needs escaping.
    as_is = name_of is _safe_name and _all_safe(map(_NAME, nodes))
    for node, depth, last in zip(nodes, depths, lasts):
        name = node.name if as_is else name_of(node.name)
        if depth == 0:
            yield name
        elif depth <= INDENT_LEVELS:
            indent = indents[depth - 1]
            if last:
                indents[depth] = indent + "   "
                yield indent + "`- " + name
            else:
                indents[depth] = indent + "|  "
                yield indent + "|- " + name
        else:
            branch = "`- " if last else "|- "
            yield f"{indents[INDENT_LEVELS - 1]}[+{depth - INDENT_LEVELS}] {branch}{name}"


def _all_safe(names):
    """True when no name has a character safe() would escape: one search over them all
    (escaped characters are single code points, so joining cannot make one)."""
    return _UNSAFE_SEARCH("".join(names)) is None


def _safe_name(name):
    return name if _UNSAFE_SEARCH(name) is None else safe(name)


def render_tree(root, view, write):
    """Write the indented tree, children by first metric, descending."""
    view.start(root)
    nodes, depths, lasts = tree_rows(root, view)
    _emit(view, nodes, _with_fused(view, nodes, _tree_texts(view, nodes, depths, lasts)), write)


def _sorted_candidates(root, view):
    out = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        at_limit = view.depth is not None and depth >= view.depth
        kids = () if at_limit else node.children.values()
        if node is not root and view.visible(node) and (not kids or node.kernel):
            out.append(node)
        stack.extend((child, depth + 1) for child in kids)
    return out


def render_sorted(root, view, write):
    """Write leaves and kernel-like nodes, flat, by first metric, with full paths."""
    view.start(root)
    nodes = view.order(_sorted_candidates(root, view))
    shown = _NameCache(view.name).__getitem__  # ancestors repeat in many paths
    texts = (" -> ".join(map(shown, n.path_names())) for n in nodes)
    _emit(view, nodes, _with_fused(view, nodes, texts), write)


def _with_fused(view, nodes, texts):
    return annotated(nodes, texts, view.fused) if view.fused else texts


class _NameCache(dict):
    """name -> how it prints, computed on first use."""

    def __init__(self, show):
        super().__init__()
        self.show = show

    def __missing__(self, name):
        shown = self[name] = self.show(name)
        return shown


def render_metric_list(profile, names, specs, write):
    """Write the ``--list`` output: stored metrics, then derived specs that apply."""
    lines = [f"Metrics in {safe(profile.label)}:"]
    for name in sorted(names):
        note = "  (identifier, not shown as a value)" if name in IDENTIFIERS else ""
        lines.append(f"  {safe(name)}{note}")
    if not names:
        lines.append("  (none: the profile recorded no kernels)")
    if specs:
        lines.append("Derived metrics usable with -m:")
        lines.append("  " + ", ".join(specs))
    write("\n".join(lines) + "\n")
