"""backend="instrumentation": intra-kernel timing of Triton and Gluon kernels.

Kernels compiled while a session is open get a clock read at each kernel-side scope boundary
(``flagtree.profiler.language``), written to a per-block profile buffer that the host reads back
in bulk (see pool.py: no device sync per launch). Kernel nodes come from CUPTI's activity stream,
as with backend="nvidia" (device time, launch geometry); each kernel node gets one child per
kernel-side scope with ``cycles`` (summed over warps and launches), ``normalized_cycles`` (cycles
per recording warp, averaged over launches) and ``count`` (scope entries). With data="trace" the
per-block, per-warp intervals go to ``<name>.device_scopes.json`` (Chrome trace format).
"""
import json
from dataclasses import dataclass, field

import warnings

from ..base import BackendUnavailable, SharedUse
from ...paths import side_file
from ...writers.device_scopes import write_device_scopes
from ..nvidia.backend import NvidiaBackend, cuda_devices
from . import compiler_hook
from .options import FORMS, parse_mode
from .pool import ProfileBufferPool
from ...native_core import native
from ...hooks.triton import _attach, _launch_hook_owner

DEFAULT_CLOCK_GHZ = 1.98  # H200 boost clock; used only when the device reports none
MEAN_METRICS = ["normalized_cycles"]  # averaged, not summed, when launches merge into one node


@dataclass
class InstrumentationState:
    """Per session: the collector's totals when it started (its metadata counts the difference)
    and, for data="trace", the device-scope events gathered for ``<name>.device_scopes.json``."""
    totals_at_start: dict = field(default_factory=dict)
    trace_events: list = None  # None for data="tree"
    blocks_left_out: int = 0




class InstrumentationBackend(NvidiaBackend):
    name = "instrumentation"
    modes = FORMS
    SessionState = InstrumentationState

    def __init__(self):
        super().__init__()
        self._use = SharedUse()
        self._lock = self._use.lock  # also guards the open sessions and the collector
        self._options = None
        self._undo = []
        self._sessions = {}  # session id -> session (open instrumentation sessions)
        self.registry = {}  # CUfunction handle -> KernelInfo, for every instrumented kernel loaded
        self.collector = None

    def check_mode(self, mode):
        return parse_mode(mode)

    def unavailable_reason(self):
        try:
            compiler_hook.triton_proton()
            compiler_hook.route()
        except BackendUnavailable as error:
            return str(error)
        return super().unavailable_reason()

    # -- starting and stopping ---------------------------------------------------------------
    def acquire(self, options):
        with self._lock:
            if self._use.users and options != self._options:
                raise ValueError(f"backend 'instrumentation': a session with mode {self._options.canonical()!r} is "
                                 f"open; kernels are compiled with one set of options at a time, so another "
                                 f"session needs the same mode (got {options.canonical()!r})")
            self._use.acquire(lambda: self._start(options))

    def _start(self, options):
        compiler_hook.triton_proton()
        compiler_hook.route()
        super().acquire(None)
        try:
            self._install(options)
        except BaseException:
            self._uninstall()
            super().release()
            raise

    def _install(self, options):
        import torch  # deferred: torch is heavy and optional
        from triton.runtime import _allocation  # deferred: triton is heavy and optional

        from .collector import Collector  # deferred: numpy, needed once kernels load


        self._options = options
        self.collector = Collector(ProfileBufferPool(options.pool_mb << 20, _new_device_buffer), self.registry,
                                   self._deliver, torch.cuda.synchronize)
        self.collector.sessions = self._active_sessions
        native.instrumentation_watch_launches(True)
        self._undo.append(lambda: native.instrumentation_watch_launches(False))
        compiler_hook.install(options)
        self._undo.append(compiler_hook.uninstall)
        previous = _allocation._profile_allocator.get()
        _allocation.set_profile_allocator(self.collector)
        self._undo.append(lambda: _allocation.set_profile_allocator(previous))
        import triton  # deferred: triton is heavy and optional

        if not hasattr(triton.knobs.runtime, "kernel_load_end_hook"):
            raise BackendUnavailable(f"backend 'instrumentation' needs triton.knobs.runtime.kernel_load_end_hook "
                                     f"(Triton 3.5 or later); this is Triton {triton.__version__}")
        owner = _launch_hook_owner()
        self._undo.append(_attach(owner, "launch_exit_hook", self._launch_exit))
        self._undo.append(_attach(triton.knobs.runtime, "kernel_load_end_hook", self._kernel_loaded))

    def _uninstall(self):
        while self._undo:
            self._undo.pop()()

    def release(self):
        self._use.release(self._stop)

    def _stop(self):
        try:
            if self.collector is not None:
                self.collector.drain()
        finally:
            self._uninstall()
            if self.collector is not None:
                self.collector.pool.release()
            super().release()

    def attach_session(self, session):
        native.session_enable_extras(session.slot)
        native.session_set_mean_metrics(session.slot, MEAN_METRICS)
        with self._lock:
            session.state.totals_at_start = dict(self.collector.totals.as_stats())
            if session.data in ("trace", "perfetto"):
                session.state.trace_events = []
            self._sessions[session.id] = session

    def detach_session(self, session):
        with self._lock:
            self._sessions.pop(session.id, None)

    def _active_sessions(self):
        open_now = tuple(self._sessions.values())  # one snapshot: sessions may open and close meanwhile
        return tuple(s for s in open_now if native.session_is_active(s.slot))

    # -- Triton hooks ------------------------------------------------------------------------
    def _kernel_loaded(self, module, function, name, metadata_group, hash_):
        """Triton's kernel_load_end_hook: remember the layout and scope names of instrumented kernels."""
        try:
            info = _info_from_cache(name, metadata_group)
        except Exception as error:  # a kernel we cannot read is counted at drain, never fatal here
            warnings.warn(f"flagtree.profiler: instrumentation cannot read kernel {name}'s metadata: {error}",
                          RuntimeWarning, stacklevel=2)
            return
        if info is not None:
            self.registry[function] = info

    def _launch_exit(self, metadata):
        self.collector.on_launch_exit(metadata, native.instrumentation_take_correlation())

    # -- results ----------------------------------------------------------------------------
    def flush(self):
        with self._lock:
            if self.collector is not None:
                self.collector.drain()
        super().flush()

    def _deliver(self, launch, info, summary, trace_records):
        """One launch's results to the sessions that saw it: per-scope totals (reduced where the
        buffers are) for the tree, and for trace sessions the intervals of its first blocks."""
        from .collector import TRACE_BLOCKS, scope_children, trace_events  # deferred: numpy, needed once kernels load

        children = scope_children(info, summary.as_summary())
        metrics = [("dropped_scope_records", float(summary.dropped_records))] if summary.dropped_records else []
        records = None
        for session in launch.sessions:
            if self._sessions.get(session.id) is not session:
                continue  # closed since the launch
            if launch.correlation:
                native.session_attach(session.slot, launch.correlation, metrics, children)
            if session.state.trace_events is not None:
                records = records if records is not None else trace_records()
                events, _ = trace_events(info, records, f"{launch.name} (launch {launch.correlation})",
                                         self._clock_ghz())
                session.state.trace_events.extend(events)
                session.state.blocks_left_out += max(0, summary.good_blocks - TRACE_BLOCKS)

    def _clock_ghz(self):
        try:
            rate = cuda_devices()[0]["clock_rate"]  # kHz; cached, asked once per launch in trace mode
            return rate / 1e6 if rate else DEFAULT_CLOCK_GHZ
        except Exception:
            return DEFAULT_CLOCK_GHZ

    def session_outputs(self, session):
        with self._lock:
            if self.collector is not None:
                self.collector.drain()
            now = self.collector.totals.as_stats() if self.collector else {}
            start = session.state.totals_at_start
            stats = {k: v - start.get(k, 0) for k, v in now.items()}
            stats["instrumentation_options"] = self._options.canonical() if self._options else ""
            stats["instrumentation_route"] = compiler_hook.route()
            if session.state.trace_events is not None:
                path = side_file(session.name, "device_scopes")
                write_device_scopes(path, session.state.trace_events, self._clock_ghz())
                stats["device_scope_trace"] = path
                stats["device_scope_trace_blocks_left_out"] = session.state.blocks_left_out
            if stats.get("instrumentation_dropped_records"):
                warnings.warn(f"flagtree.profiler: {stats['instrumentation_dropped_records']} kernel-side scope "
                              f"records were overwritten in full per-block buffers; raise the instrumentation "
                              f"mode's buffer_size (counts in {session.metadata_path})", stacklevel=4)
            return stats

    def describe(self):
        facts = super().describe()
        facts["backend"] = self.name
        return facts


def _new_device_buffer(nbytes):
    import torch  # deferred: torch is heavy and optional

    return torch.empty(nbytes, dtype=torch.uint8, device="cuda")


def _info_from_cache(name, metadata_group):
    """KernelInfo from the files Triton's cache keeps for a kernel (json metadata, ttgir, ptx)."""
    from .kernel_info import kernel_info  # deferred: numpy, needed once kernels load
    paths = dict(metadata_group or {})
    json_path = paths.get(f"{name}.json") or next(
        (p for f, p in paths.items() if f.endswith(".json") and not f.startswith("__grp__")), None)
    if json_path is None:
        return None
    with open(json_path) as handle:
        metadata = json.load(handle)
    if not metadata.get("profile_scratch_size"):
        return None
    asm = {}
    for ext in ("ttgir", "ptx"):
        path = paths.get(f"{name}.{ext}") or next((p for f, p in paths.items() if f.endswith("." + ext)), None)
        if path:
            with open(path) as handle:
                asm[ext] = handle.read()
    mode = metadata.get("instrumentation_mode", "")
    options = parse_mode(mode.split(":", 1)[1] if mode.startswith("flagtree-instrumentation:") else "")
    return kernel_info(name, metadata, asm, options)
