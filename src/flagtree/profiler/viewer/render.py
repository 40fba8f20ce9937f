"""Text output: the indented tree, the sorted flat list, and metric listings.

Rendering never recurses (profiles can be thousands of levels deep) and
builds the whole output as one string so large trees print quickly.
"""

import os
import re

from .profile_tree import IDENTIFIERS

FRAME_FORMATS = ("full", "file:function:line", "function:line", "file:function")
_PY_FRAME = re.compile(r"^(.*):(\d+)@(.*)$")

RESET, BOLD = "\x1b[0m", "\x1b[1m"
RED, YELLOW, GREEN, CYAN = "\x1b[31m", "\x1b[33m", "\x1b[32m", "\x1b[36m"


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
    return f"{base}:{func}"


def format_float(value):
    """Three decimals, or e-notation where that would hide digits (< 0.1, >= 1e6)."""
    if value is None:
        return "-"
    if value == 0 or 0.1 <= abs(value) < 1e6:
        return f"{value:.3f}"
    return f"{value:.3e}"


def format_integral(value):
    """Whole numbers as integers; anything fractional falls back to floats."""
    if type(value) is int:
        return str(value)
    if value is not None and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return format_float(value)


def use_color(stream, flag_off):
    """Colour only for terminals, and never with --no-color or NO_COLOR set."""
    if flag_off or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class View:
    """Everything rendering needs: columns, value lookup, and display options."""

    def __init__(self, metrics, values_of, *, depth=None, threshold=0.0,
                 frame_format="full", color=False, diff=False):
        self.labels = [m.label + (" (diff)" if diff else "") for m in metrics]
        self.formatters = [format_integral if m.integral else format_float for m in metrics]
        self.values_of = values_of
        self.depth = depth
        self.frame_format = frame_format
        self.color = color
        self.diff = diff
        self.cutoff = None
        self.threshold = threshold
        self.root_first = None

    def start(self, root):
        self.root_first = self.values_of(root)[0]
        if self.threshold > 0 and self.root_first is not None:
            self.cutoff = self.threshold * abs(self.root_first)

    def visible(self, node):
        if self.cutoff is None:
            return True
        first = self.values_of(node)[0]
        return first is not None and abs(first) >= self.cutoff

    def sort_key(self, node):
        first = self.values_of(node)[0]
        return (first is None, -(first or 0), node.name)

    def children(self, node):
        if self.cutoff is None:
            kids = list(node.children.values())
        else:
            kids = [c for c in node.children.values() if self.visible(c)]
        if len(kids) > 1:
            kids.sort(key=self.sort_key)
        return kids

    def cells(self, node):
        return [fmt(v) for fmt, v in zip(self.formatters, self.values_of(node))]


def _tree_rows(root, view):
    rows = []
    stack = [(root, 0, "", "")]
    while stack:
        node, depth, head, cont = stack.pop()
        rows.append((node, head))
        if view.depth is not None and depth >= view.depth:
            continue
        kids = view.children(node)
        for index in range(len(kids) - 1, -1, -1):
            last = index == len(kids) - 1
            stack.append((kids[index], depth + 1, cont + ("`- " if last else "|- "),
                          cont + ("   " if last else "|  ")))
    return rows


def _value_color(view, node):
    first = view.values_of(node)[0]
    if first is None:
        return ""
    if view.diff:
        return RED if first > 0 else GREEN if first < 0 else ""
    if not view.root_first:
        return ""
    share = first / view.root_first
    return RED if share >= 0.5 else YELLOW if share >= 0.1 else ""


def _columns(view, nodes):
    """Formatted, right-aligned cells per row, plus the matching header."""
    rows = [view.values_of(node) for node in nodes]
    columns, header = [], []
    for index, (label, fmt) in enumerate(zip(view.labels, view.formatters)):
        cells = [fmt(values[index]) for values in rows]
        width = max(len(label), max(map(len, cells), default=0))
        columns.append([cell.rjust(width) for cell in cells])
        header.append(label.rjust(width))
    return ["  ".join(parts) for parts in zip(*columns)], "  ".join(header)


def _layout(view, entries):
    """entries: (node, text) pairs -> lines with aligned value columns."""
    nodes = [node for node, _ in entries]
    cells, header = _columns(view, nodes)
    if not view.color:
        lines = [header] + [c + "  " + t for c, (_, t) in zip(cells, entries)]
        return "\n".join(lines) + "\n"
    lines = [BOLD + header + RESET]
    for values, (node, text) in zip(cells, entries):
        tint = _value_color(view, node)
        values = tint + values + RESET if tint else values
        lines.append(values + "  " + _color_name(node, text))
    return "\n".join(lines) + "\n"


def _color_name(node, text):
    return CYAN + text + RESET if node.is_kernel_like() else text


def render_tree(root, view):
    """The indented tree, children by first metric, descending."""
    view.start(root)
    rows = _tree_rows(root, view)
    fmt = view.frame_format
    entries = [(node, head + format_frame(node.name, fmt)) for node, head in rows]
    return _layout(view, entries)


def _sorted_candidates(root, view):
    out = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        at_limit = view.depth is not None and depth >= view.depth
        kids = [] if at_limit else list(node.children.values())
        if node is not root and view.visible(node) and (not kids or node.is_kernel_like()):
            out.append(node)
        stack.extend((child, depth + 1) for child in kids)
    return out


def render_sorted(root, view):
    """Leaves and kernel-like nodes, flat, by first metric, with full paths."""
    view.start(root)
    nodes = _sorted_candidates(root, view)
    nodes.sort(key=view.sort_key)
    fmt = view.frame_format
    entries = [(n, " -> ".join(format_frame(p, fmt) for p in n.path_names())) for n in nodes]
    return _layout(view, entries)


def render_metric_list(profile, names, specs):
    """The ``--list`` output: stored metrics, then derived specs that apply."""
    lines = [f"Metrics in {profile.label}:"]
    for name in sorted(names):
        note = "  (identifier, not shown as a value)" if name in IDENTIFIERS else ""
        lines.append(f"  {name}{note}")
    if specs:
        lines.append("Derived metrics usable with -m:")
        lines.append("  " + ", ".join(specs))
    return "\n".join(lines) + "\n"
