"""The summary's figures that need single launches, from the run's timeline (trace_stats.py):
each kernel's min / max / median / std dev, each device's busy and idle time, and the per-step
(or per-window) breakdown. Without a timeline the page says what would give them."""
from .numbers import format_duration
from .trace_stats import (MAX_STEPS, WINDOWS, busy_intervals, busy_within, kernel_spread, run_span,
                          top_level_scopes)

SPREAD_HEAD = ["min", "max", "median", "std dev"]
NO_TIMELINE = ("min, max, median and std dev need single launches: profile with -d tree,trace "
               "(one run) and they come from the timeline")


def _share(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def spread_cells(spread, name):
    found = spread.get(name) if spread else None
    return [format_duration(v) for v in found] if found else ["-"] * len(SPREAD_HEAD)


def spread_note(events, file_name):
    if events is None:
        return NO_TIMELINE
    return f"count, total and mean from the tree; min, max, median and std dev from {file_name}"


def device_facts(events, wall_ns, labels):
    """[(label, text)]: per device, busy time (any stream running) and idle time over the run."""
    low, high = run_span(events, wall_ns)
    out = []
    for pid, merged in sorted(busy_intervals(events).items(), key=lambda item: str(item[0])):
        busy = sum(end - start for start, end in merged)
        label = labels.get(("process", pid), f"device {pid}")
        out.append((f"{label}: busy / idle", f"{format_duration(busy)} ({_share(busy, high - low)}) / "
                                             f"{format_duration(high - low - busy)} of {format_duration(high - low)}"))
    return out


def _windows(events, wall_ns):
    """(kind, [(label, start, end)]): the top-level scopes when at least two, else tenths."""
    scopes = top_level_scopes(events)
    if len(scopes) >= 2:
        return "step", scopes
    low, high = run_span(events, wall_ns)
    width = max(1, (high - low + WINDOWS - 1) // WINDOWS)
    return "window", [(f"{k + 1}/{WINDOWS}", low + k * width, min(high, low + (k + 1) * width))
                      for k in range(WINDOWS) if low + k * width < high]


def breakdown(events, wall_ns):
    """The per-step table: wall, device busy (all devices' union summed), share, kernels started."""
    kind, windows = _windows(events, wall_ns)
    merged = list(busy_intervals(events).values())
    starts = [[span[0] for span in spans] for spans in merged]
    device_starts = sorted(s for s, d in zip(events.start, events.device) if d)
    rows = []
    for label, low, high in windows[:MAX_STEPS]:
        busy = sum(busy_within(spans, first, low, high) for spans, first in zip(merged, starts))
        launched = _count_in(device_starts, low, high)
        rows.append([label, format_duration(high - low), format_duration(busy),
                     _share(busy, (high - low) * max(1, len(merged))), f"{launched:,}"])
    head = [kind, "wall", "device busy", "busy share", "kernels"]
    return {"kind": kind, "head": head, "rows": rows, "total": len(windows)}


def _count_in(ordered, low, high):
    import bisect  # deferred: only a report with a timeline counts per window

    return bisect.bisect_left(ordered, high) - bisect.bisect_left(ordered, low)


def trace_figures(events, wall_ns):
    """What the summary takes from the timeline: spread, device facts, breakdown."""
    return {"spread": kernel_spread(events), "devices": device_facts(events, wall_ns, events.labels),
            "steps": breakdown(events, wall_ns)}
