"""The run's own timeline read back for the report: the complete events (``ph: X``) of a Chrome
trace, kernels, copies and sets on device tracks, scopes on host threads, as columns.

A trace the profiler wrote holds one event a line (csrc/dump/chrome_trace.cpp,
writers/chrome_trace.py), so it is read a line at a time, in memory proportional to the events
kept, not to the file; any other Chrome trace is decoded whole.
"""
import json

DEVICE_CATEGORIES = ("kernel", "memcpy", "memset")
KEPT_CATEGORIES = DEVICE_CATEGORIES + ("scope",)
_FIRST_LINE = b'"traceEvents":['


class TraceEvents:
    """Columns of the kept events, in file order: ``lane`` (index into ``lanes``, a (pid, tid)
    pair), ``start`` and ``dur`` in ns, ``name`` and ``detail`` (indexes into ``strings``: the
    name, and the event's args as one text), ``device`` (1 on a device track, 0 on a host one);
    ``labels`` names each process and thread from the trace's metadata events."""

    def __init__(self):
        self.lanes, self._lane_of = [], {}
        self.strings, self._string_of = [], {}
        self.lane, self.start, self.dur, self.name, self.detail, self.device = [], [], [], [], [], []
        self.labels = {}  # ("process", pid) or ("thread", pid, tid) -> name

    def intern(self, text):
        at = self._string_of.get(text)
        if at is None:
            at = self._string_of[text] = len(self.strings)
            self.strings.append(text)
        return at

    def add(self, event):
        kind = event.get("ph")
        if kind == "M":
            return self._label(event)
        if kind != "X" or event.get("cat") not in KEPT_CATEGORIES:
            return
        key = (event.get("pid"), event.get("tid"))
        lane = self._lane_of.get(key)
        if lane is None:
            lane = self._lane_of[key] = len(self.lanes)
            self.lanes.append(key)
        self.lane.append(lane)
        self.start.append(round(float(event.get("ts", 0)) * 1000))
        self.dur.append(max(0, round(float(event.get("dur", 0)) * 1000)))
        self.name.append(self.intern(str(event.get("name", ""))))
        self.detail.append(self.intern(_detail(event.get("args"))))
        self.device.append(1 if event.get("cat") in DEVICE_CATEGORIES else 0)

    def _label(self, event):
        name = (event.get("args") or {}).get("name")
        if event.get("name") == "process_name":
            self.labels[("process", event.get("pid"))] = str(name)
        elif event.get("name") == "thread_name":
            self.labels[("thread", event.get("pid"), event.get("tid"))] = str(name)

    def lane_label(self, lane):
        pid, tid = self.lanes[lane]
        process = self.labels.get(("process", pid), f"process {pid}")
        return f"{process} / {self.labels.get(('thread', pid, tid), f'thread {tid}')}"

    def __len__(self):
        return len(self.start)


def _detail(args):
    """An event's args as the lines its details show, without the per-launch correlation id
    (so that launches of one kernel from one place share one string)."""
    if not isinstance(args, dict):
        return ""
    return "\n".join(f"{key}: {_value(value)}" for key, value in args.items() if key != "correlation")


def _value(value):
    return " x ".join(map(str, value)) if isinstance(value, list) else str(value)


def read_trace(path, progress=None):
    """TraceEvents of a Chrome trace file; `progress(done_bytes)` is called now and then."""
    events = TraceEvents()
    with open(path, "rb") as handle:
        first = handle.readline()
        if not first.rstrip().endswith(_FIRST_LINE):
            handle.seek(0)
            return _read_whole(handle, events)
        for count, line in enumerate(handle, 1):
            line = line.strip().rstrip(b",")
            if line.startswith(b"{"):
                events.add(json.loads(line))
            if progress is not None and count % 65536 == 0:
                progress(handle.tell())
    return events


def _read_whole(handle, events):
    data = json.load(handle)
    for event in data.get("traceEvents", ()) if isinstance(data, dict) else data:
        if isinstance(event, dict):
            events.add(event)
    return events
