"""The report's first screen: what ran where and for how long (from the ``.meta.json`` beside
each profile), the top kernels by time and the top scopes by exclusive time (from the viewer's
own sums, so they match the table), and the timeline file beside the profile, if any.

Values are formatted here, as the terminal viewer would; the page only lays them out.
"""

import os
import re

from .metrics import FLOP_KEYS
from .profile_tree import preorder
from .rank_merge import metadata_of

TOP_ROWS = 15
_HATCHET = re.compile(r"(?:\.part\d+)?\.hatchet$")
_TIMELINES = ((".pftrace", "Perfetto trace"), (".chrome_trace", "Chrome trace"))


def format_time(ns):
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns"


def _share(part, whole):
    return f"{100.0 * part / whole:.1f}%" if part is not None and whole else "-"


def _metas(sources):
    """The metadata of every source (``<name>.meta.json``, or ``<file>.meta.json``), or {}."""
    return [metadata_of(path) or metadata_of(path + ".hatchet") for path in sources]


def _number(meta, key):
    value = meta.get(key)
    return value if type(value) in (int, float) else None


def facts(sources, busy_ns, launches, distinct):
    """[(label, text)] for the summary: device, backend, wall time, busy time and share,
    kernels, lost records, profiler overhead (only what the metadata has)."""
    metas = [m for m in _metas(sources) if m]
    out = []
    devices = sorted({f"{d.get('type', 'device')}:{d.get('index', 0)} {d.get('name') or d.get('arch') or ''}".strip()
                      for m in metas for d in m.get("devices") or () if isinstance(d, dict)})
    if devices:
        out.append(("device", ", ".join(devices)))
    backends = sorted({str(m["backend"]) for m in metas if m.get("backend")})
    if backends:
        out.append(("backend", ", ".join(backends)))
    starts = [_number(m, "start_time_ns") for m in metas]
    stops = [_number(m, "stop_time_ns") for m in metas]
    wall = None
    if metas and None not in starts and None not in stops:
        wall = max(stops) - min(starts)
        out.append(("session wall time", format_time(wall)))
    if busy_ns is not None:
        share = f" ({_share(busy_ns, wall)} of the session)" if wall else ""
        out.append(("device busy time (kernels)", format_time(busy_ns) + share))
    out.append(("kernels", f"{launches:,} launched, {distinct:,} distinct"))
    if metas:
        lost = sum(max(_number(m, "lost_launches") or 0, _number(m, "dropped_records") or 0) for m in metas)
        out.append(("lost records", f"{lost:,}" if lost else "none"))
    overhead = [(k, v) for m in metas for k, v in sorted(m.items()) if "overhead" in k and type(v) in (int, float)]
    for key, value in overhead:
        out.append(("profiler overhead" + ("" if len(overhead) == 1 else f" ({key})"),
                    format_time(value) if key.endswith("_ns") else f"{value:g}"))
    return out


def _walk(root, time_of):
    """(kernel nodes not under another kernel, scope nodes with their exclusive time)."""
    kernels, scopes, under = [], [], set()
    for node in preorder(root):
        parent = node.parent
        if parent is not None and (parent in under or parent.is_kernel_like()):
            under.add(node)
            continue
        if node.is_kernel_like():
            kernels.append(node)
        elif parent is not None:
            own = time_of(node)
            if own is not None:
                for kid in node.children.values():
                    if not kid.is_kernel_like():
                        own -= time_of(kid) or 0
                scopes.append((node, own))
    return kernels, scopes


def _path(node):
    names = []
    while node is not None and node.parent is not None:
        names.append(node.name)
        node = node.parent
    return " > ".join(reversed(names))


def summary(profile, column, values_of):
    """The summary payload. ``column[id]`` is where a report metric sits in ``values_of(node)``."""
    def value(spec):
        at = column.get(spec)
        return (lambda node: values_of(node)[at]) if at is not None else (lambda node: None)

    time_of, count_of, util_of = value("time/ns"), value("count"), value("util")
    flop_columns = [value(key) for key in FLOP_KEYS.values() if key in column]
    kernels, scopes = _walk(profile.root, time_of)
    by_name = {}
    for node in kernels:
        row = by_name.setdefault(node.name, [0, 0.0, 0.0, 0.0, 0.0])  # count, time, util*time, flop, timed
        time = time_of(node) or 0
        row[0] += count_of(node) or 0
        row[1] += time
        util = util_of(node)
        if util is not None:
            row[2] += util * time
            row[4] += time
        row[3] += sum(f(node) or 0 for f in flop_columns)
    busy = sum(row[1] for row in by_name.values()) if "time/ns" in column else None
    launches = sum(row[0] for row in by_name.values())
    top = sorted(by_name.items(), key=lambda item: -item[1][1])[:TOP_ROWS]
    head = ["kernel", "count", "time", "mean", "share"]
    has_util, has_flop = "util" in column, bool(flop_columns)
    head += ["util"] * has_util + ["TFLOP/s"] * has_flop
    rows = []
    for name, (count, time, util_time, flop, timed) in top:
        row = [name, f"{count:,.0f}", format_time(time), format_time(time / count) if count else "-", _share(time, busy)]
        row += [f"{util_time / timed:.3f}" if timed else "-"] * has_util
        row += [f"{flop / time * 1e-3:.3f}" if time and flop else "-"] * has_flop
        rows.append(row)
    scope_rows = [[_path(node), format_time(own), _share(own, busy), format_time(time_of(node))]
                  for node, own in sorted(scopes, key=lambda item: -item[1])[:TOP_ROWS] if own > 0]
    return {"facts": facts(profile.sources, busy, launches, len(by_name)),
            "kernels": {"head": head, "rows": rows, "total": len(by_name)},
            "scopes": {"head": ["scope", "exclusive time", "share", "inclusive time"], "rows": scope_rows,
                       "total": len(scopes)},
            "timeline": timeline_beside(profile.sources)}


def timeline_beside(sources):
    """{'file': name, 'kind': ...} of the first session timeline written beside a source."""
    for path in sources:
        stem = _HATCHET.sub("", path)
        for extension, kind in _TIMELINES:
            if os.path.isfile(stem + extension):
                return {"file": os.path.basename(stem + extension), "kind": kind}
    return None
