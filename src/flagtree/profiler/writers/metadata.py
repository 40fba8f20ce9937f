"""The metadata file beside each output: versions, backend, devices, command line, times,
record counts. Written as `<output>.meta.json`."""
import functools
import json
import platform
import sys

from .. import ranks


@functools.lru_cache(maxsize=None)  # importlib.metadata scans every installed distribution
def _version(module):
    try:
        from importlib import metadata

        return metadata.version(module)
    except Exception:
        return None


def build_metadata(session, backend_facts, stats):
    return {
        "flagtree_profiler_version": _version("flagtree-profiler"),
        "triton_version": _version("triton"),
        "torch_version": _version("torch"),
        "python_version": platform.python_version(),
        "name": session.name,
        "context": session.context,
        "data": session.data,
        "mode": session.mode,
        "hook": session.hook,
        **backend_facts,
        "command_line": list(sys.argv),
        **ranks.metadata_fields(session),  # rank, world size, host, pid, clock base
        "start_time_ns": session.start_realtime_ns,
        "stop_time_ns": session.stop_realtime_ns,
        **stats,
    }


def write_metadata(path, metadata):
    with open(path, "w") as out:
        json.dump(metadata, out, indent=1, sort_keys=True)
