"""Launches of compiled Triton kernels that could not be stamped, timed with two CUDA events on
the launch's stream instead of only counted.

launch_sight.py passes every launcher its ``decide`` cannot time (a kernel whose stages Triton
did not keep, whose stamps were refused, that already uses profile scratch) to ``wrap``; the
wrapper makes one native call per launch (csrc/backends/device_timer/event_launch_bindings.cpp):
the start event recorded on the launch's stream, the launcher called, the end event recorded, the
launch's context taken as for a stamped launch. Records are built at a drain (flush(),
finalize(), a full pool). A launch on a stream that is capturing a CUDA graph records no events
(they would become graph nodes): it is counted as before.

Only with mode ``events=on`` (off by default): an event pair times from the moment the stream
reaches the start event to the kernel's end, so where the device waits for the host (small
kernels of a Python-bound loop) it also times the host's launch call; on the H200 inductor's
small kernels read 6-23 times their CUPTI time this way (docs/reference/device-timer.md).
"""
import threading
import types

EVENT_PAIRS = 1024  # launches awaiting a drain; one more waits for it (counted, nothing dropped)
# Where a launcher of each launch_sight kind takes its stream: Triton's launcher
# (grid x, grid y, grid z, stream, function, ...); inductor's launchers the keyword `stream`; a
# replay of a CUDA graph captured before the ring (unseen_graphs.py) is called (stream, graph, ...).
STREAM_AT = {"kernel": 3, "inductor": -1, "inductor-static": -1, "graph-replay": 0}
CAPTURED = "launched while its stream captured a CUDA graph (events there would be graph nodes)"
NO_EVENTS = "its events could not be recorded (another device, an unknown stream argument, or an event failed)"


class EventTimed:
    """The event-timed launchers made while the route is installed, each an entry of the native
    pool's counts (kept for the backend's life: a kernel keeps its wrapper while it lives)."""

    def __init__(self, native):
        self.native = native
        self._lock = threading.Lock()
        self._entries = []  # (native entry id, kernel name, why it was not stamped)

    def wrap(self, launch, name, reason, kind):
        """`launch` timed by events, or None where its kind's stream argument is not known."""
        stream_at = STREAM_AT.get(kind)
        if stream_at is None:
            return None
        timer = self.native.device_timer
        entry = timer.device_timer_event_launcher(name, stream_at)
        with self._lock:
            self._entries.append((entry, name, reason))
        timed = timer.device_timer_event_launch

        def event_timed_launch(*args, **kwargs):
            return timed(entry, launch, args, kwargs)

        if isinstance(launch, types.FunctionType):  # an inductor launcher: inductor reads its config, n_regs...
            event_timed_launch.__dict__.update(launch.__dict__)
        event_timed_launch.flagtree_original = launch
        return event_timed_launch

    def counts(self):
        """{kernel name: [timed, captured, untimed, reason]} over every entry of that name."""
        with self._lock:
            entries = list(self._entries)
        numbers = self.native.device_timer.device_timer_event_counts()
        counts = {}
        for entry, name, reason in entries:
            known = counts.setdefault(name, [0, 0, 0, reason])
            for i, value in enumerate(numbers[entry]):
                known[i] += value
        return counts


def session_stats(now, at_start):
    """The metadata's part from two counts() snapshots: the kernels event-timed in the session,
    and their launches that got no events (by kernel name, with why), for the untimed list."""
    timed, untimed = {}, {}
    for name, (launches, captured, failed, reason) in sorted(now.items()):
        before = at_start.get(name, (0, 0, 0, reason))
        launches, captured, failed = launches - before[0], captured - before[1], failed - before[2]
        if launches:
            timed[name] = {"launches": launches, "reason": reason}
        if captured or failed:
            why = CAPTURED if captured >= failed else NO_EVENTS
            untimed[name] = {"launches": captured + failed, "reason": f"{reason}; {why}"}
    return timed, untimed


def warn_event_timed(stats, session, warn):
    """One warning a session: which kernels were timed by events, and why they were not stamped."""
    kernels = stats.get("device_timer_event_timed_kernels") or {}
    if not kernels:
        return
    shown = busiest(kernels, 3, "; ", lambda name, entry: f"{name} ({entry['launches']}: {entry['reason']})")
    warn(f"flagtree.profiler: backend 'device_timer': {sum(k['launches'] for k in kernels.values())} launches "
         f"of {len(kernels)} Triton kernels were timed with CUDA events on their streams, not by stamps "
         f"(event pairs include the gaps of a busy stream): {shown}; counts in {session.metadata_path}")


def busiest(kernels, limit, separator, spell):
    """The `limit` kernels of {name: {"launches": n, ...}} with the most launches, each as
    spell(name, entry), joined by `separator`, then how many more there are."""
    names = sorted(kernels, key=lambda name: -kernels[name]["launches"])
    shown = separator.join(spell(name, kernels[name]) for name in names[:limit])
    return shown + (f"{separator}and {len(names) - limit} more" if len(names) > limit else "")
