"""The instrumentation backend's trace of kernel-side scopes, `<name>.device_scopes.json`:
Chrome trace-event JSON with one track per block and warp."""
from .atomic import write_json


def write_device_scopes(path, events, clock_ghz):
    write_json(path, {"traceEvents": events, "displayTimeUnit": "ns",
                      "otherData": {"clock_ghz": clock_ghz,
                                    "time_base": "GPU globaltimer (ns) at each block's start"}},
               separators=(",", ":"))
