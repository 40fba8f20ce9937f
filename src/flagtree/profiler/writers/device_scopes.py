"""The instrumentation backend's trace of kernel-side scopes, `<name>.device_scopes.json`:
Chrome trace-event JSON with a process per block of each launch (``<kernel> (launch N) block B``)
and a thread per warp (``warp W``), the track names Proton's device traces use.

Times: the GPU's global timer reads ~1.8e18 ns, beyond what a double holds to the nanosecond,
so ``ts`` is microseconds since the trace's first block start (``otherData.time_origin_ns``, the
global timer's value there, an exact integer): events arrive with their block's integer start
(``base_ns``) and a small offset (``offset_ns``) and are placed here in integer arithmetic."""
from .chrome_trace import write_chrome_trace


def _place(events):
    """The events with ``ts`` relative to the earliest block start; returns (events, origin)."""
    origin = min((e["base_ns"] for e in events if "base_ns" in e), default=0)
    placed = []
    for e in events:
        if "base_ns" in e:
            e = dict(e)
            e["ts"] = ((e.pop("base_ns") - origin) + e.pop("offset_ns", 0.0)) / 1000.0
        placed.append(e)
    return placed, origin


def write_device_scopes(path, events, clock_ghz):
    placed, origin = _place(events)
    write_chrome_trace(path, placed, otherData={"clock_ghz": clock_ghz, "time_origin_ns": origin,
                                                "time_base": "microseconds since time_origin_ns on the GPU's "
                                                             "globaltimer (the first block's start)"})
