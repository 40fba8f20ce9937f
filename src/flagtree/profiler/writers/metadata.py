"""The metadata file beside each output: versions, backend, devices, command line, times,
record counts. Written as `<name>.meta.json`, atomically, after the profile (see
session._write_outputs for the order)."""
import functools
import os
import platform
import sys

from .atomic import write_json


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
        "pid": os.getpid(),
        "rank": _rank(),
        "start_time_ns": session.start_realtime_ns,
        "stop_time_ns": session.stop_realtime_ns,
        **stats,
    }


def _rank():
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        if var in os.environ:
            try:
                return int(os.environ[var])
            except ValueError:
                pass
    return 0


def write_metadata(path, metadata):
    write_json(path, metadata, indent=1, sort_keys=True)
