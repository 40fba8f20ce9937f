"""Profile._repr_html_: what a notebook shows for a profile, in a few hundred lines of HTML.

A summary line, the top kernels table and the first levels of the tree, largest first, each
with the derived columns that have a value in it. Every text taken from the profile (names,
file names, numbers) is escaped for HTML after its control characters are written out as
\\xNN, so a frame name cannot inject markup or forge lines. No script, no external resource.
"""

from html import escape
from itertools import islice

from ..common.safe_text import safe
from ..viewer.numbers import format_duration, format_plain
from .frame import _sort_key

TOP_KERNELS = 10
TREE_DEPTH = 3  # levels below the root drawn
TREE_CHILDREN = 8  # children drawn per node; the rest are counted


def _text(value):
    return escape(safe(str(value)), quote=True)


def _number(value, integral=False):
    if value is None:
        return "-"
    if value != value:
        return "nan"
    if integral and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if value == 0 or abs(value) >= 0.1 or value != value * 2:  # the last: infinities
        return f"{value:,.3f}"
    return format_plain(value)  # no e-notation: the digits a small value has


def _columns(profile):
    """(label, getter) of the columns shown: the derived ones, then count if stored."""
    cols = [(spec, integral, at) for at, (spec, integral) in
            enumerate(zip(profile.metrics, profile._integral))]
    shown = [(spec, lambda node, at=at: node.values[at], integral) for spec, integral, at in cols]
    if "count" in profile.stored_metrics and "count" not in profile.metrics:
        at = profile.stored_metrics.index("count")
        shown.append(("count", lambda node: node.incl[at], True))
    return shown


def _first(profile, node):
    if profile.metrics:
        return node.values[0]
    return node.incl[0] if profile.stored_metrics else None


def _summary(profile):
    order = profile._rows.order
    kernels = sum(1 for node in order if node.kernel)
    parts = [f"{len(order):,} nodes", f"{kernels:,} kernels"]
    if "time (ns)" in profile.stored_metrics:
        total = order[0].incl[profile.stored_metrics.index("time (ns)")]
        if total is not None:
            parts.append(f"device time {format_duration(total)}")  # a device, or the CPU (interpreter)
    kind = "difference " if profile.is_diff else ""
    return (f"<p><b>FlagTree profile {kind}</b><code>{_text(profile.label)}</code>: "
            f"{_text(', '.join(parts))}</p>")


def _row(cells, header=False):
    tag = "th" if header else "td"
    return "<tr>" + "".join(f"<{tag}{attrs}>{cell}</{tag}>" for cell, attrs in cells) + "</tr>"


_NUM = ' style="text-align:right"'


def _present(shown, nodes):
    """The columns with a value on at least one of these nodes: a compact table."""
    return [col for col in shown if any(col[1](node) is not None for node in nodes)]


PATH_ENDS = 3  # a path longer than twice this shows its first and last names and a count between


def _short_path(names):
    """The path as `a -> b -> c`; a deep one as its ends around `... (n more) ...`, so that one
    row of a 100,000-deep chain stays a line."""
    if len(names) <= 2 * PATH_ENDS:
        return " -> ".join(names)
    middle = f"... ({len(names) - 2 * PATH_ENDS:,} more) ..."
    return " -> ".join([*names[:PATH_ENDS], middle, *names[-PATH_ENDS:]])


def _top_table(profile, shown):
    if not profile.metrics:  # nodes but no metric (read() accepts such a file): nothing to rank by
        return "<p>No metrics to rank kernels by.</p>"
    views = profile.top_nodes(TOP_KERNELS, kind="kernel")
    if not views:
        return "<p>No kernels.</p>"
    shown = _present(shown, [view._node for view in views])
    head = [("kernel", ""), ("path", "")] + [(_text(label), _NUM) for label, _, _ in shown]
    lines = [_row(head, header=True)]
    for view in views:
        node = view._node
        cells = [(_text(node.name), ""), (_text(_short_path(view.path[:-1])), "")]
        cells += [(_number(get(node), integral), _NUM) for _, get, integral in shown]
        lines.append(_row(cells))
    title = (f"<p><b>Top kernel nodes</b> by {_text(profile.metrics[0] if profile.metrics else '')} (each "
             f"calling context apart; <code>top(by=\"kernel\")</code> sums a kernel's contexts, as the report's "
             f"top kernels)</p>")
    return title + "<table>" + "".join(lines) + "</table>"


def _tree_nodes(profile):
    """(node, depth) of the first TREE_DEPTH levels, children by first column, descending, at
    most TREE_CHILDREN each (then a row counting the rest); iterative."""
    out = []
    stack = [(profile._tree.root, 0)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        if depth >= TREE_DEPTH or not node.children:
            continue
        kids = sorted(node.children.values(), key=lambda c: (_sort_key(_first(profile, c)), c.name))
        below = [(kid, depth + 1) for kid in islice(kids, TREE_CHILDREN)]
        if len(kids) > TREE_CHILDREN:
            below.append((_More(len(kids) - TREE_CHILDREN), depth + 1))
        stack.extend(reversed(below))
    return out


class _More:
    """A row saying how many children were not drawn."""

    children = None
    values = incl = ()

    def __init__(self, count):
        self.name = f"... {count:,} more"


def _tree_table(profile, shown):
    rows = _tree_nodes(profile)
    shown = _present(shown, [node for node, _ in rows])
    head = [("call path", "")] + [(_text(label), _NUM) for label, _, _ in shown]
    lines = [_row(head, header=True)]
    for node, depth in rows:
        pad = f' style="padding-left:{depth * 1.2:.1f}em"'
        cells = [(_text(node.name), pad)]
        cells += [(_number(get(node), integral), _NUM) for _, get, integral in shown]
        lines.append(_row(cells))
    return "<p><b>Tree</b> (first levels)</p><table>" + "".join(lines) + "</table>"


def profile_html(profile):
    shown = _columns(profile)
    safe_shown = [(label, _guard(get), integral) for label, get, integral in shown]
    return ("<div class=\"flagtree-profile\">" + _summary(profile)
            + _top_table(profile, safe_shown) + _tree_table(profile, safe_shown) + "</div>")


def _guard(get):
    """A column getter that gives None for the 'more' rows (they have no values)."""
    def value(node):
        try:
            return get(node)
        except IndexError:
            return None
    return value
