"""What the run's timeline adds to the report's summary, as Nsight Systems' kernel summary and
HTA's temporal breakdown show it: per kernel name the spread of its launches (min, max, median,
standard deviation), each device's busy and idle time, and the same per step (the top-level
scopes, as a training loop marks its steps) or, without steps, per tenth of the run.

A tree keeps a count and a sum per node, not single launches; these figures need the events.
"""
import bisect
import math

WINDOWS = 10  # the breakdown without marked steps
MAX_STEPS = 50  # rows of the per-step table: the first ones, the rest counted


def kernel_spread(events):
    """{name: (min, max, median, sample std dev)} in ns over the device events of each name."""
    durations = {}
    for at in range(len(events)):
        if events.device[at]:
            durations.setdefault(events.name[at], []).append(events.dur[at])
    out = {}
    for name, values in durations.items():
        values.sort()
        out[events.strings[name]] = (values[0], values[-1], _median(values), _std(values))
    return out


def _median(ordered):
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _std(values):
    """Sample standard deviation (n - 1), as Nsight Systems reports it; 0 for one launch."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def busy_intervals(events):
    """{device process: merged [(start, end)] of its events}: a device is busy while any of its
    streams runs something (concurrent kernels count once)."""
    per_device = {}
    for at in range(len(events)):
        if events.device[at]:
            pid = events.lanes[events.lane[at]][0]
            per_device.setdefault(pid, []).append((events.start[at], events.start[at] + events.dur[at]))
    return {pid: _merge(spans) for pid, spans in per_device.items()}


def _merge(spans):
    spans.sort()
    merged = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def busy_within(merged, starts, low, high):
    """Busy ns of `merged` intervals (their starts in `starts`) inside [low, high)."""
    total = 0
    at = max(0, bisect.bisect_right(starts, low) - 1)
    while at < len(merged) and merged[at][0] < high:
        total += max(0, min(merged[at][1], high) - max(merged[at][0], low))
        at += 1
    return total


def top_level_scopes(events):
    """[(name, start, end)] of the scopes no other scope of their thread contains, in time order."""
    found = []
    per_lane = {}
    for at in range(len(events)):
        if not events.device[at]:
            per_lane.setdefault(events.lane[at], []).append((events.start[at], -events.dur[at], at))
    for items in per_lane.values():
        items.sort()
        end = None
        for start, minus_dur, at in items:
            if end is None or start >= end:
                end = start - minus_dur
                found.append((events.strings[events.name[at]], start, end))
    return sorted(found, key=lambda item: item[1])


def run_span(events, wall_ns=None):
    """(first, last) ns of the run: t=0 of the trace (the session's start) to the last event's
    end or the session's wall time, whichever is later."""
    last = max((s + d for s, d in zip(events.start, events.dur)), default=0)
    return 0, max(last, wall_ns or 0)
