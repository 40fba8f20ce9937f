"""The run's timeline inside the HTML report: the Chrome trace the same run wrote beside the
tree (same run id, run_id.py) read once (trace_events.py), laid out as lanes, one per host
thread (its scopes) and one per device stream (its kernels), host lanes first so that scopes sit
above the kernels they launched. The page draws it (report.js); past MAX_EVENTS events the
longest are kept and the page says how many were left out.
"""
import heapq
import os

from .trace_events import read_trace

MAX_EVENTS = 2_000_000
MAX_ROWS = 16  # rows a lane may stack (nested scopes, concurrent kernels); deeper ones share the last


def load_run_trace(timeline, sources, progress=None):
    """TraceEvents of the run's Chrome trace named by summary's `timeline` entry, or None."""
    if not timeline or timeline.get("kind") != "Chrome trace" or not sources:
        return None
    path = os.path.join(os.path.dirname(sources[0]), timeline["file"])
    try:
        return read_trace(path, progress)
    except (OSError, ValueError, RecursionError, TypeError):
        return None  # a timeline that does not read leaves the report as it was without one


def _kept(events):
    """Indexes of the events embedded: all, or the MAX_EVENTS longest."""
    if len(events) <= MAX_EVENTS:
        return range(len(events))
    return sorted(heapq.nlargest(MAX_EVENTS, range(len(events)), key=events.dur.__getitem__))


def _lane_order(events):
    """Host lanes (scopes) first, then device lanes, each in order of appearance."""
    device = {}
    for at in range(len(events)):
        device.setdefault(events.lane[at], events.device[at])
    return sorted(device, key=lambda lane: (device[lane], lane)), device


def _rows(items):
    """Per (start, end), the first row free at its start: nested or overlapping events stack."""
    ends, out = [], []
    for start, end in items:
        row = next((k for k, last in enumerate(ends) if last <= start), None)
        if row is None and len(ends) < MAX_ROWS:
            ends.append(end)
            row = len(ends) - 1
        elif row is None:
            row = MAX_ROWS - 1
        ends[row] = max(ends[row], end)
        out.append(row)
    return out


def timeline_payload(events, file_name):
    """The columns report.js draws: events sorted by lane then start, each lane's first index in
    `laneStart`, times in ns from the session's start."""
    order, device = _lane_order(events)
    position = {lane: k for k, lane in enumerate(order)}
    kept = sorted(_kept(events), key=lambda at: (position[events.lane[at]], events.start[at], -events.dur[at]))
    columns = {"lane": [], "start": [], "dur": [], "name": [], "detail": [], "row": []}
    lane_start, lane_rows = [0] * (len(order) + 1), [1] * len(order)
    for k, lane in enumerate(order):
        mine = [at for at in kept if events.lane[at] == lane] if len(order) > 1 else list(kept)
        rows = _rows([(events.start[at], events.start[at] + events.dur[at]) for at in mine])
        lane_rows[k] = max(rows, default=0) + 1
        lane_start[k + 1] = lane_start[k] + len(mine)
        for at, row in zip(mine, rows):
            for key, value in (("lane", k), ("start", events.start[at]), ("dur", events.dur[at]),
                               ("name", events.name[at]), ("detail", events.detail[at]), ("row", row)):
                columns[key].append(value)
    lanes = [{"label": events.lane_label(lane), "device": device[lane], "rows": lane_rows[k]}
             for k, lane in enumerate(order)]
    return {"file": file_name, "lanes": lanes, "laneStart": lane_start, "strings": events.strings,
            "total": len(events), "left": len(events) - len(kept), **columns}
