"""The report's embedded data: the (union) tree as columns, with one string table.

Columns keep a 100,000-node profile to a few MB: per node a parent index, a name index, a kind
flag, a device index and one number per metric (``null`` where not applicable); metadata only for
the kernels that have it. Nodes come in preorder, so parents precede their children.
"""

import re

from ..writers.atomic import strict_json
from .flame import HOST, Interned, device_label
from .fused import FIELDS
from ..common.safe_text import CONTROLS

# Rates and ratios lose nothing visible at five significant digits, and shrink a lot.
_DIGITS = 5
_META_KEYS = ("grid", "block", "cluster", "registers", "static_shared_memory",
              "dynamic_shared_memory", "num_warps", "num_stages")


def _compact(value):
    if value is None or type(value) is int:
        return value
    if value != value or value in (float("inf"), float("-inf")):
        return None  # strict JSON has no NaN/Infinity
    if float(value).is_integer() and abs(value) < 2**53:
        return int(value)
    return float(f"{value:.{_DIGITS}g}")


def union_preorder(a_root, b_root):
    """[(a node or None, b node or None, parent index)] over the union of two trees."""
    out = [(a_root, b_root, -1)]
    stack = [0]
    while stack:
        index = stack.pop()
        a, b, _ = out[index]
        a_kids = a.children if a is not None else {}
        b_kids = b.children if b is not None else {}
        names = list(a_kids) + [n for n in b_kids if n not in a_kids]
        for name in reversed(names):
            out.append((a_kids.get(name), b_kids.get(name), index))
            stack.append(len(out) - 1)
    return out


def _meta_row(meta):
    """One kernel's launch metadata as a row over _META_KEYS (None where absent), hashable:
    launches of one kernel mostly share it, so rows are stored once and referenced."""
    row = []
    for key in _META_KEYS:
        value = meta.get(key)
        if type(value) is list and all(type(v) is int for v in value):
            value = tuple(value)
        elif type(value) not in (int, float):
            value = None
        row.append(value)
    while row and row[-1] is None:
        row.pop()
    return tuple(row)


def _columns(nodes, specs, offset, values_of):
    columns = [[] for _ in specs]
    for a, _, _ in nodes:
        values = values_of(a) if a is not None else None
        for j, column in enumerate(columns):
            column.append(None if values is None else _compact(values[offset + j]))
    return columns


def build_payload(profile, other, specs, offset, values_of, other_values, meta):
    """The JSON-ready report data. ``values_of(node)[offset + j]`` is the value of the j-th
    spec without ``derive``; the entries of ``specs`` get their columns filled in."""
    nodes = union_preorder(profile.root, other.root if other is not None else None)
    strings = Interned()
    parent, name, kernel, device = [], [], [], []
    meta_index, meta_ref, meta_rows = [], [], Interned()
    for i, (a, b, up) in enumerate(nodes):
        node = a if a is not None else b
        parent.append(up)
        name.append(strings.of(node.name))
        is_kernel = node.is_kernel_like()
        kernel.append(1 if is_kernel else 0)
        where = device_label(node) if is_kernel else HOST
        device.append(-1 if where == HOST else strings.of(where))
        found = meta.get(a) if a is not None else None
        if found:
            meta_index.append(i)
            meta_ref.append(meta_rows.of(_meta_row(found)))
    columns = [s for s in specs if "derive" not in s]
    a_columns = _columns(nodes, columns, offset, values_of)
    b_columns = _columns([(b, None, 0) for _, b, _ in nodes], columns, offset, other_values) \
        if other is not None else [None] * len(columns)
    not_numbers = 0
    for spec, a_col, b_col in zip(columns, a_columns, b_columns):
        if spec.get("additive"):
            present = [a is not None for a, _, _ in nodes]
            not_numbers = max(not_numbers, _sum_past_non_numbers(parent, a_col, present))
        spec.update(a=a_col, b=b_col)
    metrics = specs
    return {"strings": strings.items, "parent": parent, "name": name, "kernel": kernel,
            "device": device, "metrics": metrics, "meta": {"keys": list(_META_KEYS), "index": meta_index, "ref": meta_ref,
                     "rows": [list(row) for row in meta_rows.items]},
            "sources": list(profile.sources), "nonNumbers": not_numbers,
            "fused": _fused_of(strings.items, kernel, name, getattr(profile, "fused", {}))}


def _fused_of(strings, kernel, name, table):
    """What the kernels shown fuse, by kernel name (viewer/fused.py), for their hover details."""
    if not table:
        return {}
    shown = {strings[n] for n, k in zip(name, kernel) if k}
    return {n: {f: table[n][f] for f in FIELDS if f in table[n]} for n in shown if n in table}


def _sum_past_non_numbers(parent, column, present):
    """A NaN (or infinite) value in a profile makes every inclusive sum above it NaN, written as
    null: the icicle, whose widths are those sums, had nothing to draw. Each such ancestor gets
    the sum of its children that are numbers instead. Returns how many nodes of the profile
    (`present`) hold no number under a parent that holds one: those left out of the widths."""
    sums, has = [0] * len(column), [False] * len(column)
    for i in range(len(column) - 1, -1, -1):  # preorder reversed: children before their parent
        if column[i] is None and has[i]:
            column[i] = _compact(sums[i])
        up = parent[i]
        if up >= 0 and column[i] is not None:
            sums[up] += column[i]
            has[up] = True
    return sum(1 for i, up in enumerate(parent) if present[i] and column[i] is None and up >= 0 and has[up])


def embed_json(payload):
    """Strict, compact JSON safe inside <script>: no '<', '>' or '&' survive (no
    '</script>' or '<!--' can end the element early), nor the JS line separators (which are
    among the controls below)."""
    text = strict_json(payload, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(raw, escaped)
    # The characters that steer a terminal (a `cat` of the report) as \uXXXX too: the page
    # reads the same strings, the file holds none of them raw.
    return _CONTROLS.sub(_unicode_escape, text)


_CONTROLS = re.compile(f"[{CONTROLS}]")


def _unicode_escape(match):
    return f"\\u{ord(match.group()):04x}"
