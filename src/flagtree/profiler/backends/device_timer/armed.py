"""The device_timer route armed with no session open (``flagtree.profiler.arm_device_timer``,
``FLAGTREE_PROFILER_DEVICE_TIMER_ARM``).

A CUDA graph captured before the route was installed (torch.compile's mode="reduce-overhead"
captures in its first calls, vLLM at startup) has kernels without stamps or descriptors: its
replays can only be counted. Arming installs the route at once, as a session's start does (the
ring, the profile allocator, the compiler hooks, the launch doors, the torch.cuda.CUDAGraph
wrapper), holding one user of the backend's SharedUse, so sessions open and close without taking
it down. With no session active the route is paused (compile_pause.py): launches run their plain
binaries, except during a capture through the wrapper, whose launches get their stamps and
descriptors; a later session times the replays of those graphs.

The functions here are the backend's methods ``arm`` and ``disarm`` (DeviceTimerBackend binds
them), kept apart so the backend's module stays about sessions.
"""
import datetime
import sys

from ...common import after_import
from ...native_core import native as _native
from . import graph_replays
from .ring_options import RingOptions

# Where torch.cuda.CUDAGraph is defined: watched when the route is armed before torch is imported.
GRAPHS_MODULE = "torch.cuda.graphs"
_watching = []  # the after-import finder of GRAPHS_MODULE while one waits
_armed_backend = [None]  # the backend whose armed route the after-import watch serves


def arm(backend, mode=None, by="arm_device_timer()"):
    """Installs the route with no session (one user of the backend's SharedUse): True when it
    armed now, False when it was armed already with this mode; a ValueError for another mode
    (the ring's mode is fixed while it runs) or a bad one; BackendUnavailable where the route
    cannot run (no CUDA driver, a Triton without the hooks, the interpreter)."""
    options = backend.check_mode(mode) or RingOptions()
    with backend._lock:
        if backend.armed is not None:
            if options == backend._options:
                return False
            raise ValueError(conflict(backend, options))
        backend.acquire(options)  # the clear error if a session with another mode is open
        backend.armed = {"mode": options.canonical(), "by": by,
                         "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")}
        _armed_backend[0] = backend
        try:
            backend.activity_changed()  # no session active: the route paused, as between windows
            _wrap_graphs(backend)
        except BaseException:
            disarm(backend)
            raise
    return True


def disarm(backend):
    """Lets the armed route go: taken down, and its ring freed, where no session holds it (a
    session still open keeps the route until its finalize, and the ring stays after it, as after
    any session, until free()). True if it was armed."""
    with backend._lock:
        if backend.armed is None:
            return False
        backend.armed = None
        _armed_backend[0] = None
        _stop_watching()
        backend.release()
        backend.free()  # frees only when no session holds the route
    return True


def conflict(backend, options):
    """The error text of a session (or an arm) whose mode differs from the running route's."""
    held = backend._options.canonical()
    holder = (f"the route is armed with mode {held!r} ({backend.armed['by']}; disarm_device_timer() lets it go)"
              if backend.armed is not None else f"a session with mode {held!r} is open")
    return (f"backend 'device_timer': {holder}; kernels are stamped for one ring at a time "
            f"(got {options.canonical()!r})")


def session_facts(armed):
    """The metadata's account of an armed route (`armed`: the backend's armed dict when the session
    started, or None): why replays of graphs captured before the session are timed."""
    if armed is None:
        return {"device_timer_armed": False}
    return {"device_timer_armed": True, "device_timer_armed_at": armed["at"], "device_timer_armed_by": armed["by"],
            "device_timer_armed_mode": armed["mode"]}


def _wrap_graphs(backend):
    """torch.cuda.CUDAGraph is wrapped by the route's install where torch is imported; else it is
    wrapped once torch imports it (a session's start would wrap it too, but a capture before any
    session is the point of arming)."""
    if not backend._graph_records:
        return  # no graph path for this target's stamps: captured launches stay counted
    if graph_replays.install(_native, unseen=backend.untimed.graphs):
        return  # wrapped already (by the install), or now
    finder = after_import.watch(GRAPHS_MODULE, _graphs_imported, once=True)
    if finder is not None:
        _watching.append(finder)


def _graphs_imported(module):
    """The after-import call of GRAPHS_MODULE: its CUDAGraph wrapped if the route is still armed."""
    _watching.clear()
    backend = _armed_backend[0]
    cls = getattr(module, "CUDAGraph", None)
    if backend is None or not isinstance(cls, type):
        return
    with backend._lock:
        if backend.armed is not None and backend._graph_records:
            graph_replays.install(_native, cls=cls, unseen=backend.untimed.graphs)


def _stop_watching():
    while _watching:
        finder = _watching.pop()
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
