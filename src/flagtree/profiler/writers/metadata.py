"""The metadata file beside each output: versions, backend, devices, command line, times,
record counts. Written as `<name>.meta.json`, atomically, after the profile (see
session_outputs.py for the order)."""
import functools
import os
import socket
import sys
import time

from ..distributed import ranks
from .._version import __version__
from .atomic import strict_json, write_text


# Modules whose version an imported copy tells for free (and it is the copy that ran).
_IMPORT_NAMES = {"triton": "triton", "torch": "torch"}


@functools.lru_cache(maxsize=None)
def _version(distribution):
    """The distribution's version: the imported module's __version__ when it has one, else the
    version in the name of its installed metadata folder (see installed_version)."""
    module = sys.modules.get(_IMPORT_NAMES.get(distribution, ""))
    version = getattr(module, "__version__", None)
    if isinstance(version, str) and version:
        return version
    return installed_version(distribution)


def installed_version(distribution):
    """The version in the name of the first `<name>-<version>.dist-info` (or `.egg-info`) folder
    on sys.path, the one an import would find; None when there is none. importlib.metadata would
    tell the same, but importing it and scanning every distribution is a cost of its own at the
    first finalize of a process that never imported Triton (docs/performance.md)."""
    return installed_versions().get(_project_key(distribution))


def _project_key(name):
    """One spelling for a distribution's name, as a metadata folder or a caller writes it."""
    return name.replace("-", "_").replace(".", "_").lower()


@functools.lru_cache(maxsize=1)
def installed_versions():
    """{normalized name: version} of the metadata folders on sys.path, first one wins: one
    listing per path entry for all look-ups, kept for the process (``cache_clear()`` reads
    sys.path again)."""
    found = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            project, _, rest = stem.partition("-")
            version = rest.split("-")[0]  # egg-info: name-version-pyX.Y
            if version:
                found.setdefault(_project_key(project), version)
    return found


def build_metadata(session, backend_facts, stats):
    return {
        "flagtree_profiler_version": __version__,
        "triton_version": _version("triton"),
        "torch_version": _version("torch"),
        # What platform.python_version() parses out of sys.version, without compiling its regex
        # at the first finalize (docs/performance.md).
        "python_version": sys.version.split()[0],
        "name": session.name,
        "context": session.context,
        "data": session.data,
        "mode": session.mode,
        "hook": session.hook,
        **backend_facts,
        "command_line": list(sys.argv),
        **_process_fields(session),  # rank, world size, host, pid, clock base
        "start_time_ns": session.start_realtime_ns,
        "stop_time_ns": session.stop_realtime_ns,
        **stats,
    }


def clock_base(samples=5):
    """A (realtime, monotonic) pair read together: the monotonic value is the middle of the
    tightest of a few monotonic-realtime-monotonic brackets, and error_ns half its width.
    Trace times are monotonic; this pair maps them onto wall-clock time."""
    best = None
    for _ in range(samples):
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or after - before < best[2] - best[0]:
            best = (before, real, after)
    before, real, after = best
    return {"realtime_ns": real, "monotonic_ns": (before + after) // 2, "error_ns": (after - before + 1) // 2}


def _process_fields(session):
    """What every metadata file says about the process: rank, local rank, world size, how they
    were found (ranks.py), host, pid, a clock base, and the monotonic time of the trace's t=0."""
    info = ranks.current()
    return {
        "rank": info.rank if info is not None else 0,
        "local_rank": info.local_rank if info is not None else None,
        "world_size": info.world_size if info is not None else 1,
        "rank_source": info.source if info is not None else None,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "clock_base": clock_base(),
        "trace_origin_monotonic_ns": getattr(session, "start_monotonic_ns", None),
    }


# One member a line, unindented: json's C encoder takes these separators, where any indent= sends
# it to the pure-Python encoder, three times slower on every finalize (docs/performance.md).
SEPARATORS = (",\n", ": ")


def metadata_json(metadata):
    """The metadata's text, encoded once per finalize: the .meta.json file and a trace's
    embedded ``otherData`` (writers/profile.py) are the same text."""
    return strict_json(metadata, sort_keys=True, separators=SEPARATORS)


def write_metadata(path, metadata):
    """`metadata`: the dict, or its metadata_json text."""
    write_text(path, metadata if isinstance(metadata, str) else metadata_json(metadata))
