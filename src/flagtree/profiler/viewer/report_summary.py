"""The report's first screen: what ran where and for how long (from the ``.meta.json`` beside
each profile), the top kernels by time and the top scopes by exclusive time (from the viewer's
own sums, so they match the table), and the timeline file beside the profile, if any.

Values are formatted here, as the terminal viewer would; the page only lays them out.
"""

import heapq
import os

from ..paths import output_stem
from .metrics import FLOP_KEYS
from ..run_id import run_id_of
from .rank_merge import metadata_with_problem
from .report_trace_summary import SPREAD_HEAD, spread_cells, spread_note, trace_figures

TOP_ROWS = 15
_TIMELINES = ((".pftrace", "Perfetto trace"), (".chrome_trace", "Chrome trace"))


def format_time(ns):
    if ns is None or not _finite(ns):
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns"


def _share(part, whole):
    return f"{100.0 * part / whole:.1f}%" if part is not None and whole else "-"


def _metas(sources):
    """(the metadata of every source (``<name>.meta.json``, or ``<file>.meta.json``) or {},
    the sentences saying which metadata files belong to another run and are not used)."""
    metas, problems = [], []
    for path in sources:
        meta, problem = metadata_with_problem(path)
        if not meta and not problem:
            meta, problem = metadata_with_problem(path + ".hatchet")
        metas.append(meta)
        problems += [problem] if problem else []
    return metas, problems


def _number(meta, key):
    """A finite number a float can hold (a 400-digit integer is none: it cannot be formatted)."""
    value = meta.get(key)
    return value if _finite(value) else None


def _finite(value):
    return type(value) in (int, float) and abs(value) <= 1e300 and value == value


def _list(value):
    return value if type(value) is list else ()


def facts(sources, busy_ns, launches, distinct):
    """[(label, text)] for the summary: device, backend, wall time, busy time and share,
    kernels, lost records, profiler overhead (only what the metadata has)."""
    metas, problems = _metas(sources)
    metas = [m for m in metas if m]
    out = [("metadata", problem) for problem in problems]
    devices = sorted({f"{d.get('type', 'device')}:{d.get('index', 0)} {d.get('name') or d.get('arch') or ''}".strip()
                      for m in metas for d in _list(m.get("devices")) if isinstance(d, dict)})
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
    overhead = [(k, v) for m in metas for k, v in sorted(m.items()) if "overhead" in k and _finite(v)]
    for key, value in overhead:
        out.append(("profiler overhead" + ("" if len(overhead) == 1 else f" ({key})"),
                    format_time(value) if key.endswith("_ns") else f"{value:g}"))
    return out


def _walk(root, time_of):
    """(kernel nodes not under another kernel, scope nodes with their exclusive time); what
    lies under a kernel (device scopes) is counted with it and not walked."""
    kernels, scopes = [], []
    stack = list(root.children.values())
    while stack:
        node = stack.pop()
        if node.kernel:
            kernels.append(node)
            continue
        kids = node.children.values()
        stack.extend(kids)
        own = time_of(node)
        if own is not None:
            for kid in kids:
                if not kid.kernel:
                    own -= time_of(kid) or 0
            scopes.append((node, own))
    return kernels, scopes


def _path(node):
    names = []
    while node is not None and node.parent is not None:
        names.append(node.name)
        node = node.parent
    return " > ".join(reversed(names))


def wall_ns(sources):
    """The session's wall time from the metadata beside the sources, or None."""
    metas = [m for m in _metas(sources)[0] if m]
    starts, stops = [_number(m, "start_time_ns") for m in metas], [_number(m, "stop_time_ns") for m in metas]
    return max(stops) - min(starts) if metas and None not in starts and None not in stops else None


def _kernel_table(by_name, busy, has_util, has_flop, figures):
    """Nsight Systems' kernel summary columns, top TOP_ROWS by total time."""
    spread = figures["spread"] if figures else None
    head = ["kernel", "count", "total", "mean", *SPREAD_HEAD, "share"]
    head += ["util"] * has_util + ["TFLOP/s"] * has_flop
    rows = []
    for name, (count, time, util_time, flop, timed) in heapq.nlargest(TOP_ROWS, by_name.items(),
                                                                      key=lambda item: item[1][1]):
        row = [name, f"{count:,.0f}", format_time(time), format_time(time / count) if count else "-",
               *spread_cells(spread, name), _share(time, busy)]
        row += [f"{util_time / timed:.3f}" if timed else "-"] * has_util
        row += [f"{flop / time * 1e-3:.3f}" if time and flop else "-"] * has_flop
        rows.append(row)
    return {"head": head, "rows": rows, "total": len(by_name)}


def summary(profile, column, values_of, events=None, timeline=None):
    """The summary payload. ``column[id]`` is where a report metric sits in ``values_of(node)``;
    `events`: the run's timeline (trace_events.TraceEvents) named by `timeline`, or None."""
    time_at, count_at, util_at = column.get("time/ns"), column.get("count"), column.get("util")
    flop_at = [column[key] for key in FLOP_KEYS.values() if key in column]
    time_of = (lambda node: values_of(node)[time_at]) if time_at is not None else (lambda node: None)
    kernels, scopes = _walk(profile.root, time_of)
    by_name = {}
    for node in kernels:
        values = values_of(node)
        row = by_name.get(node.name)
        if row is None:
            row = by_name[node.name] = [0, 0, 0.0, 0, 0]  # count, time, util x time, FLOP, time with util
        time = values[time_at] if time_at is not None else None
        time = time if _finite(time) else 0  # a NaN time would make every share NaN
        row[0] += (values[count_at] if count_at is not None else None) or 0
        row[1] += time
        util = values[util_at] if util_at is not None else None
        if util is not None:
            row[2] += util * time
            row[4] += time
        for at in flop_at:
            row[3] += values[at] or 0
    busy = sum(row[1] for row in by_name.values()) if "time/ns" in column else None
    launches = sum(row[0] for row in by_name.values())
    figures = trace_figures(events, wall_ns(profile.sources)) if events is not None and len(events) else None
    kernel_table = _kernel_table(by_name, busy, util_at is not None, bool(flop_at), figures)
    kernel_table["note"] = spread_note(figures, timeline["file"] if timeline else None)
    scope_rows = [[_path(node), format_time(own), _share(own, busy), format_time(time_of(node))]
                  for node, own in heapq.nlargest(TOP_ROWS, scopes, key=lambda item: item[1]) if own > 0]
    return {"facts": facts(profile.sources, busy, launches, len(by_name)) + (figures["devices"] if figures else []),
            "kernels": kernel_table, "steps": figures["steps"] if figures else None,
            "scopes": {"head": ["scope", "exclusive time", "share", "inclusive time"], "rows": scope_rows,
                       "total": len(scopes)},
            "timeline": timeline if timeline is not None else timeline_beside(profile.sources)}


def timeline_beside(sources):
    """{'file': name, 'kind': ...} of the first session timeline written beside a source by the
    same run (a Chrome trace of another run id is passed over; a Perfetto trace is not checked)."""
    for path in sources:
        stem = output_stem(path)
        for extension, kind in _TIMELINES:
            if os.path.isfile(stem + extension) and _same_run(path, stem + extension):
                return {"file": os.path.basename(stem + extension), "kind": kind}
    return None


def _same_run(profile, timeline):
    ours, theirs = run_id_of(profile), run_id_of(timeline)
    return ours is None or theirs is None or ours == theirs
