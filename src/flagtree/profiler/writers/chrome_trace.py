"""Chrome trace-event JSON written from Python (Perfetto and chrome://tracing read it): the
timeline merged from ranks (distributed/merge_traces.py), the instrumentation backend's device
scopes (device_scopes.py) and a finished trace given vendor metrics (vendor_import/attach.py).
The session's own trace is written by the native writer (csrc/dump/chrome_trace.cpp) in the same
shape: ``{"displayTimeUnit":"ns","traceEvents":[...], <the other top-level keys>}``.

Events go out one at a time through atomic_file, so a merge holds one event in memory, not the
output; strict JSON (NaN and infinities as null)."""
import contextlib

from .atomic import atomic_file, strict_json

try:  # optional speed-up for large merges; it writes NaN and infinities as null too
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


class TraceEvents:
    """The open trace of chrome_trace(): event() appends one event; `tail` holds the top-level
    keys written after the events (otherData, baseTimeNanoseconds, ...)."""

    def __init__(self, out):
        self._out = out
        self.count = 0
        self.tail = {}

    def event(self, event):
        data = _orjson.dumps(event) if _orjson is not None else \
            strict_json(event, separators=(",", ":")).encode()
        self._out.write(b",\n" if self.count else b"\n")
        self._out.write(data)
        self.count += 1


@contextlib.contextmanager
def chrome_trace(path):
    """``with chrome_trace(path) as trace: trace.event(e); trace.tail["otherData"] = {...}``: the
    file appears whole at `path` when the block ends, or not at all."""
    with atomic_file(path) as out:
        trace = TraceEvents(out)
        out.write(b'{"displayTimeUnit":"ns","traceEvents":[')
        yield trace
        tail = strict_json(trace.tail, separators=(",", ":"))
        out.write(b"\n]" + (b"," + tail[1:].encode() if trace.tail else b"}") + b"\n")


def write_chrome_trace(path, events, **tail):
    """Writes `events` (any iterable) and the top-level keys `tail` as one Chrome trace."""
    with chrome_trace(path) as trace:
        for event in events:
            trace.event(event)
        trace.tail.update(tail)
